// Interning of merged events into dense integer symbols, and the readable description of each.
// Two events get the same symbol iff their keys are equal. The key (int32 words):
//
//   [function, comm id, number of participants P,
//    P × (rank, to, from, root, op | in_place << 8, nreq)]         participants ascending
//
// `to`/`from` are the peers the participant sends to / receives from, relative to its own rank
// (peer - rank, so SPMD neighbours agree) or a kCode* marker: no such party, MPI_PROC_NULL,
// MPI_ANY_SOURCE (the flag, not the resolved source: master/worker loops fold), a reply to the
// last wildcard source (merge.h: reply_records; so do the master's answers), untranslatable.
// A Start takes the peers of the call that created its request. `root` says only whether there
// is a root rank (kRootIsRank) or which marker: which rank it is stays out of the key, like the
// sizes, because roots often rotate with the loop (SUMMA, LU: root = k % p); the loop tree keeps
// the root of every instance as a rule. `nreq` is the request count of Waitall/Testall/Startall,
// else 0. Counts, bytes, tags, times and request ids stay out: they change between iterations
// of one statement.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <iterator>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "merge/internal.h"
#include "trace/functions.h"
#include "util/parallel.h"

namespace pskel::merge::detail {

namespace {

namespace tr = trace;
using tr::FunctionId;

inline constexpr size_t kHeaderWords = 3;
inline constexpr size_t kWordsPerPart = 6;
inline constexpr int32_t kInPlaceBit = 0x100;
inline constexpr int32_t kRootIsRank = -100;  // below every trace:: rank marker

int32_t root_code(int32_t root) { return root >= 0 ? kRootIsRank : root; }

bool counts_requests(uint16_t function) {
  return function == static_cast<uint16_t>(FunctionId::MPI_Waitall) ||
         function == static_cast<uint16_t>(FunctionId::MPI_Testall) ||
         function == static_cast<uint16_t>(FunctionId::MPI_Startall);
}

uint64_t hash_of(const PartKey& k) {
  uint64_t h = 0x243F6A8885A308D3ULL;
  for (const int32_t w : {k.comm, k.to, k.from, k.root, k.op_flags, k.nreq}) {
    h ^= static_cast<uint32_t>(w);
    h *= 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
  }
  return h;
}

// Dense symbols for keys: the keys in one arena, an open-addressing table of symbol + 1.
class SymbolTable {
 public:
  // The symbol of `key`; `fresh` is set when the key was new.
  Symbol intern(std::span<const int32_t> key, bool& fresh) {
    const uint64_t h = hash(key);
    if (2 * (hashes_.size() + 1) > slots_.size()) rehash();
    size_t i = h & (slots_.size() - 1);
    for (; slots_[i] != 0; i = (i + 1) & (slots_.size() - 1)) {
      const Symbol s = slots_[i] - 1;
      if (hashes_[s] == h && std::ranges::equal(stored(s), key)) {
        fresh = false;
        return s;
      }
    }
    const auto s = static_cast<Symbol>(hashes_.size());
    slots_[i] = s + 1;
    hashes_.push_back(h);
    arena_.insert(arena_.end(), key.begin(), key.end());
    begin_.push_back(arena_.size());
    fresh = true;
    return s;
  }

 private:
  // Four independent lanes: a key holds 6 words per participant, and one chain of multiplies
  // over all of them was a sixth of the merge's time (LU, 16 ranks).
  static uint64_t hash(std::span<const int32_t> key) {
    uint64_t lane[4] = {0x243F6A8885A308D3ULL ^ key.size(), 0x13198A2E03707344ULL,
                        0xA4093822299F31D0ULL, 0x082EFA98EC4E6C89ULL};
    const auto mix = [](uint64_t h, int32_t w) {
      h ^= static_cast<uint32_t>(w);
      h *= 0x9E3779B97F4A7C15ULL;
      return h ^ (h >> 29);
    };
    size_t i = 0;
    for (; i + 4 <= key.size(); i += 4)
      for (size_t k = 0; k < 4; ++k) lane[k] = mix(lane[k], key[i + k]);
    for (; i < key.size(); ++i) lane[0] = mix(lane[0], key[i]);
    uint64_t h = lane[0];
    for (size_t k = 1; k < 4; ++k) h = mix(h ^ lane[k], static_cast<int32_t>(k));
    return h;
  }
  std::span<const int32_t> stored(Symbol s) const {
    return {arena_.data() + begin_[s], begin_[s + 1] - begin_[s]};
  }
  void rehash() {
    slots_.assign(slots_.empty() ? 64 : 2 * slots_.size(), 0);
    for (Symbol s = 0; s < hashes_.size(); ++s) {
      size_t i = hashes_[s] & (slots_.size() - 1);
      while (slots_[i] != 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s + 1;
    }
  }

  std::vector<int32_t> arena_;
  std::vector<size_t> begin_{0};
  std::vector<uint64_t> hashes_;  // per symbol
  std::vector<uint32_t> slots_;   // symbol + 1; 0 = empty
};

// ---- descriptions ----

struct PartWords {
  int32_t rank, to, from, root, op_flags, nreq;
};

PartWords part_words(std::span<const int32_t> key, size_t p) {
  const int32_t* w = key.data() + kHeaderWords + p * kWordsPerPart;
  return {w[0], w[1], w[2], w[3], w[4], w[5]};
}

std::string code_text(int32_t code) {
  switch (code) {
    case kCodeProcNull:
      return "null";
    case kCodeAny:
      return "any";
    case kCodeUnknown:
      return "?";
    case kCodeReply:
      return "reply";
    default:
      return (code >= 0 ? "+" : "") + std::to_string(code);
  }
}

std::string peer_cell(const PartWords& p) {
  if (p.to != kCodeNone && p.from != kCodeNone) return code_text(p.to) + "/" + code_text(p.from);
  if (p.to != kCodeNone) return code_text(p.to);
  if (p.from != kCodeNone) return code_text(p.from);
  return "x";
}

std::string root_text(int32_t root) {
  if (root == kRootIsRank) return "rank";
  return root == tr::kRootSelf ? "self" : root == tr::kProcNull ? "null" : "?";
}

std::string op_text(int32_t op) {
  static constexpr const char* kNames[] = {"none", "max",  "min",  "sum",    "prod",
                                           "land", "band", "lor",  "bor",    "lxor",
                                           "bxor", "minloc", "maxloc", "replace"};
  if (op >= 0 && op < static_cast<int32_t>(std::size(kNames))) return kNames[op];
  return op == static_cast<int32_t>(tr::Op::user) ? "user" : std::to_string(op);
}

// "[a b c×5 -]": one cell per world rank, runs of four or more equal cells shortened.
std::string column(const std::vector<std::string>& cells) {
  std::string out = "[";
  for (size_t i = 0; i < cells.size();) {
    size_t j = i;
    while (j < cells.size() && cells[j] == cells[i]) ++j;
    const size_t run = j - i;
    for (size_t k = 0; k < (run >= 4 ? 1 : run); ++k) out += (out.size() > 1 ? " " : "") + cells[i];
    if (run >= 4) out += "\u00d7" + std::to_string(run);
    i = j;
  }
  return out + "]";
}

// " label=v" if every participant has v, else " label=[...]" with "-" for the others.
template <class F>
std::string uniform_or_column(std::string_view label, std::span<const int32_t> key,
                              int world_size, F&& cell) {
  const size_t parts = static_cast<size_t>(key[2]);
  std::vector<std::string> cells(static_cast<size_t>(world_size), "-");
  bool uniform = true;
  std::string first;
  for (size_t p = 0; p < parts; ++p) {
    const PartWords w = part_words(key, p);
    std::string c = cell(w);
    if (p == 0) first = c;
    uniform = uniform && c == first;
    if (w.rank >= 0 && w.rank < world_size) cells[static_cast<size_t>(w.rank)] = std::move(c);
  }
  return " " + std::string(label) + "=" + (uniform ? first : column(cells));
}

template <class P>
bool any_part(std::span<const int32_t> key, P&& pred) {
  for (size_t p = 0; p < static_cast<size_t>(key[2]); ++p)
    if (pred(part_words(key, p))) return true;
  return false;
}

}  // namespace

PartKey part_key_of(const RankView& v, uint32_t index) {
  const tr::Record& r = v.record(index);
  const tr::Record* peers = &r;
  if (r.function == static_cast<uint16_t>(FunctionId::MPI_Start))
    if (const tr::Record* c = v.creator_of(r.request)) peers = c;
  const int64_t nreq = counts_requests(r.function) ? std::clamp<int64_t>(r.count, 0, INT32_MAX) : 0;
  return {r.comm,
          v.is_reply(index) ? kCodeReply : peer_code(peers->peer, v.rank),
          source_code(*peers, v.rank),
          root_code(r.root),
          r.op | ((r.flags & tr::kFlagInPlace) ? kInPlaceBit : 0),
          static_cast<int32_t>(nreq)};
}

uint32_t PartKeys::number(const PartKey& key) {
  const uint64_t h = hash_of(key);
  if (const uint32_t* n = by_hash_.find(h)) {
    if (keys_[*n] == key) return *n;
    for (uint32_t i = 0; i < keys_.size(); ++i)  // another key of the same hash
      if (keys_[i] == key) return i;
  } else {
    by_hash_.set(h, static_cast<uint32_t>(keys_.size()));
  }
  keys_.push_back(key);
  return static_cast<uint32_t>(keys_.size() - 1);
}

std::string describe_key(std::span<const int32_t> key, int world_size) {
  const auto function = static_cast<uint16_t>(key[0]);
  const tr::FunctionInfo* info = tr::find_function(function);
  std::string out = info ? std::string(info->name) : "function " + std::to_string(function);
  if (key[1] != tr::kNoComm) out += " comm=" + std::to_string(key[1]);

  const bool peers = any_part(key, [](const PartWords& p) {
    return p.to != kCodeNone || p.from != kCodeNone;
  });
  std::vector<std::string> cells(static_cast<size_t>(world_size), "-");
  for (size_t p = 0; p < static_cast<size_t>(key[2]); ++p) {
    const PartWords w = part_words(key, p);
    if (w.rank >= 0 && w.rank < world_size)
      cells[static_cast<size_t>(w.rank)] = peers ? peer_cell(w) : "x";
  }
  out += (peers ? " peers=" : " ranks=") + column(cells);

  if (any_part(key, [](const PartWords& p) { return p.root != tr::kNoRank; }))
    out += uniform_or_column("root", key, world_size,
                             [](const PartWords& p) { return root_text(p.root); });
  if (any_part(key, [](const PartWords& p) { return (p.op_flags & 0xFF) != 0; }))
    out += uniform_or_column("op", key, world_size,
                             [](const PartWords& p) { return op_text(p.op_flags & 0xFF); });
  const auto in_place = [](const PartWords& p) { return (p.op_flags & kInPlaceBit) != 0; };
  if (!any_part(key, [&](const PartWords& p) { return !in_place(p); }))
    out += " in_place";
  else if (any_part(key, in_place))
    out += uniform_or_column("in_place", key, world_size, [&](const PartWords& p) {
      return std::string(in_place(p) ? "x" : "no");
    });
  if (counts_requests(function))
    out += uniform_or_column("nreq", key, world_size,
                             [](const PartWords& p) { return std::to_string(p.nreq); });
  return out;
}

struct SymbolInterner::State {
  struct Slice {
    std::vector<Event> events;
    std::span<const Part> parts;
  };
  int world_size;
  SymbolTable table;
  std::vector<int32_t> key;
  std::vector<Symbol> symbols;           // per event added, in order
  std::vector<std::string> descriptions; // per symbol
  // The thread's queue; `thread` not joinable when it runs inline. At most kMostQueued slices
  // wait, so that an alignment faster than the interning does not copy the whole merge.
  static constexpr size_t kMostQueued = 4;
  std::mutex mutex;
  std::condition_variable wake, room;
  std::deque<Slice> queue;
  bool closed = false;
  std::exception_ptr error;
  std::thread thread;

  // Per rank, where its part keys are: an event's parts are read through these two small
  // arrays, not through each rank's view (several cache lines a rank, thousands of ranks).
  std::vector<const uint32_t*> numbers_of;  // RankView::part_key
  std::vector<const PartKey*> keys_of;      // RankView::part_keys

  State(const std::vector<RankView>& v, int w) : world_size(w) {
    numbers_of.reserve(v.size());
    keys_of.reserve(v.size());
    for (const RankView& r : v) {
      const RankView& holder = holder_of(v, r);
      numbers_of.push_back(holder.part_key.data());
      keys_of.push_back(holder.part_keys.data());
    }
  }
  const PartKey& key_of(const Part& p) const {
    const auto r = static_cast<size_t>(p.rank);
    return keys_of[r][numbers_of[r][p.record]];
  }
  // A part's number and its rank's keys are in that rank's arrays: a cache miss or two per
  // part across thousands of ranks, which overlap when asked for a few parts ahead.
  static constexpr size_t kPrefetchParts = 4;
  void prefetch(const Part& p) const {
    const auto r = static_cast<size_t>(p.rank);
    __builtin_prefetch(numbers_of[r] + p.record);
    __builtin_prefetch(keys_of[r]);
  }

  void intern(const Slice& slice) {
    for (const Event& e : slice.events) {
      const std::span<const Part> parts{slice.parts.data() + e.first_part, e.part_count};
      key.assign({static_cast<int32_t>(e.function), key_of(parts[0]).comm,
                  static_cast<int32_t>(parts.size())});
      for (size_t i = 0; i < parts.size(); ++i) {
        if (i + kPrefetchParts < parts.size()) prefetch(parts[i + kPrefetchParts]);
        const Part& p = parts[i];
        const PartKey& k = key_of(p);
        key.insert(key.end(), {p.rank, k.to, k.from, k.root, k.op_flags, k.nreq});
      }
      bool fresh = false;
      symbols.push_back(table.intern(key, fresh));
      if (fresh) descriptions.push_back(describe_key(key, world_size));
    }
  }

  void run() {
    for (;;) {
      Slice slice;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return closed || !queue.empty(); });
        if (queue.empty()) return;
        slice = std::move(queue.front());
        queue.pop_front();
      }
      room.notify_one();
      try {
        if (!error) intern(slice);
      } catch (...) {
        error = std::current_exception();  // read by finish() after the join
      }
    }
  }

  void close() {
    {
      std::lock_guard lock(mutex);
      closed = true;
    }
    wake.notify_one();
    if (thread.joinable()) thread.join();
  }
};

SymbolInterner::SymbolInterner(const std::vector<RankView>& views, int world_size)
    : state_(std::make_unique<State>(views, world_size)) {
  if (util::usable_cpus() < 2) return;
  try {
    state_->thread = std::thread([s = state_.get()] { s->run(); });
  } catch (const std::system_error&) {  // no thread to be had: interned inline
  }
}

SymbolInterner::~SymbolInterner() { state_->close(); }

void SymbolInterner::add(std::vector<Event> events, std::span<const Part> parts) {
  State::Slice slice{std::move(events), parts};
  if (!state_->thread.joinable()) {
    state_->intern(slice);
    return;
  }
  {
    std::unique_lock lock(state_->mutex);
    state_->room.wait(lock, [&] { return state_->queue.size() < State::kMostQueued; });
    state_->queue.push_back(std::move(slice));
  }
  state_->wake.notify_one();
}

void SymbolInterner::finish(MergedTrace& out) {
  state_->close();
  if (state_->error) std::rethrow_exception(state_->error);
  for (size_t i = 0; i < out.events.size() && i < state_->symbols.size(); ++i)
    out.events[i].symbol = state_->symbols[i];
  out.symbol_key = std::move(state_->descriptions);
}

}  // namespace pskel::merge::detail

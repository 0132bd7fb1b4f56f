// Internals shared by the merge's passes (gaps and entry point in merge.cpp, Algorithm 1 in
// normalize.cpp, ranks that behave alike in alike.cpp, Algorithm 2 in align.cpp, interning in
// symbols.cpp): the per-rank view the passes share, peer codes, and a small map cleared in O(1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "merge/merge.h"
#include "merge/roles.h"
#include "trace/format.h"
#include "trace/reader.h"

namespace pskel::merge::detail {

// The match key of Algorithm 2: function and communicator id.
inline uint32_t shape_of(const trace::Record& r) {
  return (uint32_t{r.function} << 16) | r.comm;
}

// Peer codes: a peer relative to the caller's rank (peer - rank, so SPMD neighbours agree), or
// one of these markers.
inline constexpr int32_t kCodeNone = INT32_MIN;         // the call has no such party
inline constexpr int32_t kCodeProcNull = INT32_MIN + 1;
inline constexpr int32_t kCodeAny = INT32_MIN + 2;      // posted with MPI_ANY_SOURCE
inline constexpr int32_t kCodeUnknown = INT32_MIN + 3;  // untranslatable, or not a rank
inline constexpr int32_t kCodeReply = INT32_MIN + 4;    // to the last wildcard source (replies)
inline constexpr int32_t kLastCode = kCodeReply;        // codes above it are relative peers

inline int32_t peer_code(int32_t peer, int32_t rank) {
  if (peer >= 0) return peer - rank;
  switch (peer) {
    case trace::kNoRank:
      return kCodeNone;
    case trace::kProcNull:
      return kCodeProcNull;
    case trace::kAnySource:
      return kCodeAny;
    default:
      return kCodeUnknown;
  }
}
// The source's code; a receive posted with MPI_ANY_SOURCE is `any` whatever it resolved to.
inline int32_t source_code(const trace::Record& r, int32_t rank) {
  return (r.flags & trace::kFlagAnySource) ? kCodeAny : peer_code(r.source, rank);
}

// Both peer codes of a call, relative offsets taken modulo the number of ranks (so that the
// ranks of a ring agree across its wrap-around), in one word.
// `reply`: r is one of the rank's replies (its peer is kCodeReply).
inline uint64_t wrapped_peers(const trace::Record& r, int32_t rank, int32_t ranks, bool reply) {
  const auto wrap = [ranks](int32_t code) -> uint32_t {
    return code > kLastCode ? static_cast<uint32_t>(((code % ranks) + ranks) % ranks)
                            : static_cast<uint32_t>(code);
  };
  const int32_t to = reply ? kCodeReply : peer_code(r.peer, rank);
  return (uint64_t{wrap(to)} << 32) | wrap(source_code(r, rank));
}

// Open-addressing map from 64-bit keys to 32-bit values whose clear() is O(1): each slot
// carries the generation it was written in. Grows when half full. Not thread-safe.
class StampedMap {
 public:
  // The value stored for `key`, or nullptr.
  uint32_t* find(uint64_t key) {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(key);; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.gen != gen_) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  void set(uint64_t key, uint32_t value) {
    if (uint32_t* v = find(key)) {
      *v = value;
      return;
    }
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t i = home(key);
    while (slots_[i].gen == gen_) i = (i + 1) & mask();
    slots_[i] = {key, value, gen_};
    ++size_;
  }
  void clear() {
    size_ = 0;
    if (++gen_ == 0) {  // wrapped: old stamps could look current
      for (Slot& s : slots_) s.gen = 0;
      gen_ = 1;
    }
  }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t value = 0;
    uint32_t gen = 0;
  };
  size_t mask() const { return slots_.size() - 1; }
  size_t home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> 20) & mask();
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), Slot{});
    const uint32_t old_gen = gen_;
    gen_ = 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.gen == old_gen) set(s.key, s.value);
  }

  std::vector<Slot> slots_;
  uint32_t gen_ = 1;
  size_t size_ = 0;
};

// One participant's words in a symbol's key (symbols.cpp documents the key), less its rank:
// the communicator, the peers relative to the rank (a Start: its request's creator's), whether
// and which root, op | in-place bit, and the request count of Waitall/Testall/Startall.
struct PartKey {
  int32_t comm, to, from, root, op_flags, nreq;
  bool operator==(const PartKey&) const = default;
};

// A rank's distinct part keys, numbered by first use. Held per record as a 4-byte number, so
// that interning reads a rank's keys 16 to a cache line instead of a record (80 bytes) per
// part: across thousands of ranks each record was a cache miss, three quarters of the
// interning's time. Not thread-safe; one per rank.
class PartKeys {
 public:
  uint32_t number(const PartKey& key);
  const PartKey& operator[](uint32_t number) const { return keys_[number]; }
  const PartKey* data() const { return keys_.data(); }
  bool same_keys(const PartKeys& other) const { return keys_ == other.keys_; }
  void seal() { by_hash_ = StampedMap(); }  // no more numbers: the index is freed
  size_t size() const { return keys_.size(); }

 private:
  std::vector<PartKey> keys_;
  StampedMap by_hash_;  // hash of a key -> its number (a colliding key is found by scanning)
};

// One rank as the passes see it.
struct RankView {
  const trace::RankTrace* trace = nullptr;
  int32_t rank = 0;
  std::vector<uint32_t> order;    // indices of the event records, canonical order (Alg. 1)
  std::vector<uint32_t> shape;    // shape_of(record order[i]), for Algorithm 2's scans
  std::vector<uint64_t> peers;    // wrapped_peers(record order[i]), for Algorithm 2's pulls
  std::vector<uint32_t> round;    // per position in order: its round (normalize.cpp), from 1
  uint32_t rounds = 0;            // rounds numbered so far
  std::vector<uint32_t> creator;  // request id -> index + 1 of the record that created it
  std::span<const uint32_t> replies;  // MergedTrace::replies of this rank
  std::span<const int64_t> gaps;      // per record: its compute gap (MergedTrace::gap_ns)
  std::vector<uint32_t> part_key;     // per record: its number in part_keys (event records)
  PartKeys part_keys;
  // Ranks that behave alike (AlikeRanks) are aligned as one: `group` is the rank whose view
  // stands for this one (itself when it leads its group), and a group's leader lists its
  // members in `members`, itself first, ascending. A member's shape, peers, round and
  // creators are released: the leader's stand for them (the alignment reads a member's order
  // alone, and the interning its part keys).
  int32_t group = 0;
  std::vector<int32_t> members;
  // A member whose order and part keys are its leader's, number for number (alike ranks
  // mostly are: the same calls in the same records), keeps neither; both are read from the
  // leader (holder_of). Across thousands of members, that is 8 bytes a call less, and the
  // alignment and interning read one rank's arrays where they read one per member.
  bool shares_leader_arrays = false;

  const trace::Record& record(uint32_t index) const { return trace->records[index]; }
  // The compute gap before record `index`, 0 where unknown.
  int64_t gap(uint32_t index) const { return index < gaps.size() ? gaps[index] : 0; }
  // The aux words of record `index`; empty if the trace has no aux index for it.
  std::span<const int64_t> aux(uint32_t index) const;
  // The record that created request `id`, or nullptr if none did (or the id is 0).
  const trace::Record* creator_of(int64_t id) const;
  // Whether record `index` is one of the rank's replies. O(log replies).
  bool is_reply(uint32_t index) const {
    return !replies.empty() && std::binary_search(replies.begin(), replies.end(), index);
  }
};

// The view that holds v's order and part keys: v's own, or its leader's (shares_leader_arrays).
inline const RankView& holder_of(const std::vector<RankView>& views, const RankView& v) {
  return v.shares_leader_arrays ? views[static_cast<size_t>(v.group)] : v;
}

// Calls f(id) for each request id that the call at record `index` refers to: the one it
// creates (Isend, Irecv, Send_init, ...), the ones it starts (Start, Startall) or the ones it
// completes (Wait*, Test*: the first of each group of kCompletionWords aux words).
template <class F>
void for_each_request(const RankView& v, uint32_t index, F&& f) {
  const trace::Record& r = v.record(index);
  const Role role = role_of(r.function);
  const std::span<const int64_t> aux = v.aux(index);
  if (role == Role::start) {
    for (int64_t id : aux) f(id);
    if (aux.empty()) f(int64_t{r.request});
  } else if (role == Role::completion) {
    for (size_t w = 0; w + trace::kCompletionWords <= aux.size(); w += trace::kCompletionWords)
      f(aux[w]);
  } else if (creates_request(r.function)) {
    f(int64_t{r.request});
  }
}

// Algorithm 1 on one rank: fills view.order, round and creator from view.trace and its gaps.
// Returns how many records end up at another position than in call order.
uint64_t normalize(RankView& view);

// The channel of rank v's call at position p (normalize.cpp's, but over the per-position
// arrays: relative, wrapped peers), which Algorithm 2's pulls may not pass; 0 for calls of no
// channel. Probes count as receives.
uint64_t pull_channel(const RankView& v, size_t p, int32_t world_size);

// The part key of the event record `index` of rank v (normalised: its creators filled).
PartKey part_key_of(const RankView& v, uint32_t index);

// Groups ranks that Algorithm 2 would treat alike: the same normalised calls (shape, wrapped
// peers, rounds), the same channels and the same request ids at every position. Such ranks
// are at the same position at every step of the alignment, so aligning their leader aligns
// them all (a 3-D halo exchange has at most 27 groups, whatever the rank count).
class AlikeRanks {
 public:
  explicit AlikeRanks(int32_t world_size) : world_size_(world_size) {}
  // Adds views[first, first + count) (normalised, shape and peers filled, views[0, first)
  // added), in rank order: each becomes a member of the group of the first of its hash's first
  // 8 leaders that behaves alike, its arrays released (its order and part keys too where they
  // are the leader's), or leads a new group. The rank-by-rank
  // result; the hashes and each rank's compare with its hash's first leader (where nearly
  // every rank ends) run on every CPU.
  // O(calls of each rank) times the leaders it is compared with (at most 8).
  void add(std::vector<RankView>& views, size_t first, size_t count);

 private:
  int32_t world_size_;
  std::unordered_map<uint64_t, std::vector<int32_t>> leaders_by_hash_;
};

// Interns merged events into dense symbols, numbered by their first event (symbols.cpp). The
// alignment hands it its events a slice at a time, copied, with a view of their parts, as it
// emits them;
// building the keys (from each part's PartKey; no record is read) then runs on a thread of its
// own beside the alignment, which is single-threaded, unless this process may use one CPU only.
class SymbolInterner {
 public:
  // REQUIRES: every view's part keys numbered; they must outlive the interner, unchanged.
  SymbolInterner(const std::vector<RankView>& views, int world_size);
  ~SymbolInterner();  // waits for the thread
  SymbolInterner(const SymbolInterner&) = delete;
  SymbolInterner& operator=(const SymbolInterner&) = delete;

  // The next events of the merge, in order, with their parts (Event::first_part indexes
  // `parts`, a view of MergedTrace::parts that must not move or change until finish()).
  // Thread-compatible: one caller.
  void add(std::vector<Event> events, std::span<const Part> parts);
  // Sets the symbol of every event added (out.events, in the same order) and out.symbol_key.
  // Rethrows what the thread threw.
  void finish(MergedTrace& out);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Algorithm 2 over all ranks (views normalised, shape filled, grouped: every rank a member of
// one group, a leader of itself at least): appends events (symbol unset) and parts to `out`,
// and hands them to `symbols` as it goes.
void align(const std::vector<RankView>& views, int lookahead, MergedTrace& out,
           MergeStats& stats, SymbolInterner& symbols);

// The readable description of a symbol key (symbols.cpp documents the key's layout).
std::string describe_key(std::span<const int32_t> key, int world_size);

}  // namespace pskel::merge::detail

// Builds the loop tree from a merged trace and its folding; see looptree.h.
#include "looptree/looptree.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>

#include "trace/functions.h"
#include "trace/gaps.h"
#include "util/parallel.h"

namespace pskel::looptree {

namespace {

template <class Part>
const Part* find_rank(const std::vector<Part>& parts, int32_t rank) {
  const auto it = std::lower_bound(parts.begin(), parts.end(), rank,
                                   [](const Part& p, int32_t r) { return p.rank < r; });
  return it != parts.end() && it->rank == rank ? &*it : nullptr;
}

}  // namespace

const RankCall* Event::call_of(int32_t rank) const { return find_rank(ranks, rank); }
const RankLoop* Loop::timing_of(int32_t rank) const { return find_rank(ranks, rank); }

void Stat::add(int64_t x) {
  if (n == 0 || x < min) min = x;
  if (n == 0 || x > max) max = x;
  ++n;
  const double delta = static_cast<double>(x) - mean;
  mean += delta / static_cast<double>(n);
  m2 += delta * (static_cast<double>(x) - mean);
}

double Stat::stddev() const { return n > 1 ? std::sqrt(m2 / static_cast<double>(n - 1)) : 0.0; }

namespace {

[[noreturn]] void invariant_broken(const char* what) {
  // The folding and the merged trace come from the same symbols; a mismatch is a pskel bug.
  std::fprintf(stderr, "pskel: internal error: loop tree: %s\n", what);
  std::abort();
}

struct RankRules {
  RuleBuilder root, send_bytes, recv_bytes, tag, recv_tag;
};

}  // namespace

// Walks the folded tree in execution order alongside the merged events, filling the tree, for
// the ranks handed to it (TreeBuilder::add), a window of ranks at a time.
struct TreeBuilder::State {
  State(const merge::MergedTrace& merged, const compress::Sequence& folded)
      : merged_(merged), first_event_of_symbol_(merged.symbol_key.size(), UINT64_MAX),
        ranks_(static_cast<size_t>(std::max(merged.world_size, 0))),
        given_(ranks_.size()),
        pending_entry_(ranks_.size(), nullptr),
        last_end_(ranks_.size(), 0),
        window_(kBlockRanks * std::max<size_t>(1, util::usable_cpus())) {
    for (uint64_t i = 0; i < merged.events.size(); ++i) {
      const merge::Symbol s = merged.events[i].symbol;
      if (s >= first_event_of_symbol_.size()) first_event_of_symbol_.resize(s + 1, UINT64_MAX);
      if (first_event_of_symbol_[s] == UINT64_MAX) first_event_of_symbol_[s] = i;
    }
    tree_.world_size = merged.world_size;
    tree_.merged_events = merged.events.size();
    tree_.items = shape(folded, 1);
    tree_events_of_symbol_.resize(first_event_of_symbol_.size());
    index(tree_.items);
  }

  void add(const trace::RankTrace& rank) {
    if (added_ >= ranks_.size()) throw std::logic_error("loop tree: more ranks than world_size");
    ranks_[added_++] = &rank;
    if (added_ - walked_ == window_) walk_window();
  }

  void add(trace::RankTrace&& rank) {
    if (added_ >= ranks_.size()) throw std::logic_error("loop tree: more ranks than world_size");
    const size_t r = added_;
    given_[r] = std::make_unique<trace::RankTrace>(std::move(rank));
    add(*given_[r]);
  }

  LoopTree finish() {
    if (added_ != ranks_.size()) throw std::logic_error("loop tree: fewer ranks than world_size");
    if (added_ > walked_) walk_window();
    return std::move(tree_);
  }

 private:
  // One pass of the walk: ranks [begin, end), with its own position in the merged trace.
  struct Pass {
    int32_t begin = 0, end = 0;
    uint64_t next_event = 0;
    std::vector<char> seen;         // per tree event: met in this pass yet
    std::vector<std::vector<int64_t>> gaps;  // per rank of the pass: trace::compute_gaps
  };
  static constexpr int32_t kBlockRanks = 64;
  static constexpr size_t kPrefetchParts = 4;

  // `executions`: how often the tree runs the event (its instances in the merged trace). What
  // a part's record says (comm, peers) is filled by the walk, at the symbol's first event.
  Event shape_event(merge::Symbol symbol, uint64_t executions) {
    if (symbol >= first_event_of_symbol_.size() || first_event_of_symbol_[symbol] == UINT64_MAX)
      invariant_broken("symbol not in the merged trace");
    const merge::Event& first = merged_.events[first_event_of_symbol_[symbol]];
    Event event;
    event.symbol = symbol;
    event.function = first.function;
    event.instances = executions;
    for (const merge::Part& part : merged_.parts_of(first)) {
      RankCall call;
      call.rank = part.rank;
      call.sample = part;
      event.ranks.push_back(std::move(call));
    }
    return event;
  }

  std::vector<Item> shape(const compress::Sequence& nodes, uint64_t executions) {
    std::vector<Item> items;
    items.reserve(nodes.size());
    for (const compress::Node& node : nodes) {
      if (node.is_loop()) {
        // Items are built in place: a temporary Item moved into the vector made GCC 12 (-O2,
        // sanitizers) warn of an uninitialised vector in its variant.
        Loop& loop = items.emplace_back().node.emplace<Loop>();
        loop.iterations = node.iterations;
        loop.executions = executions;
        loop.body = shape(node.body, executions * node.iterations);
      } else {
        items.emplace_back().node.emplace<Event>(shape_event(node.symbol, executions));
      }
    }
    return items;
  }

  // After shape(): numbers the events, sets each loop's ranks (the union of its body's) and
  // sizes the scratch.
  void index(std::vector<Item>& items) {
    for (Item& item : items) {
      if (!item.is_loop()) {
        Event& event = std::get<Event>(item.node);
        event.id = static_cast<uint32_t>(events_.size());
        events_.push_back(&event);
        tree_events_of_symbol_[event.symbol].push_back(&event);
        rules_.emplace_back(event.ranks.size());
        gaps_.emplace_back(event.ranks.size());
        continue;
      }
      Loop& loop = std::get<Loop>(item.node);
      index(loop.body);
      std::vector<bool> member(ranks_.size(), false);
      mark_ranks(loop.body, member);
      for (size_t r = 0; r < member.size(); ++r)
        if (member[r]) loop.ranks.push_back(RankLoop{static_cast<int32_t>(r), {}, {}});
    }
  }

  void mark_ranks(const std::vector<Item>& items, std::vector<bool>& member) const {
    for (const Item& item : items) {
      if (item.is_loop()) {
        for (const RankLoop& r : item.loop().ranks) member[static_cast<size_t>(r.rank)] = true;
      } else {
        for (const RankCall& c : item.event().ranks) member[static_cast<size_t>(c.rank)] = true;
      }
    }
  }

  // Walks the tree over the parts of the ranks added since the last window, a block of
  // consecutive ranks at a time. A rank's facts (its calls' statistics and rules, its loops'
  // timings) depend on its parts alone, so the blocks run in parallel; and a block's records
  // stay in cache from one event to the next, where a walk over all ranks at once took a cache
  // miss for almost every part (16,384 ranks: 5.5 s of the 8.1 s of `pskel compress`). Then
  // frees what the window's ranks needed: their records if given, their gaps, their rules'
  // and typical gaps' inputs.
  void walk_window() {
    const auto begin = static_cast<int32_t>(walked_), end = static_cast<int32_t>(added_);
    const int32_t blocks = (end - begin + kBlockRanks - 1) / kBlockRanks;
    util::parallel_for(static_cast<size_t>(blocks), [&](size_t b) {
      Pass pass;
      pass.begin = begin + static_cast<int32_t>(b) * kBlockRanks;
      pass.end = std::min(end, pass.begin + kBlockRanks);
      pass.seen.assign(events_.size(), 0);
      for (int32_t r = pass.begin; r < pass.end; ++r)
        pass.gaps.push_back(trace::compute_gaps(*ranks_[static_cast<size_t>(r)]));
      walk(tree_.items, pass);
      if (pass.next_event != merged_.events.size())
        invariant_broken("tree is shorter than the trace");
      finish_block(pass);
    });
    for (size_t r = walked_; r < added_; ++r) {
      ranks_[r] = nullptr;
      given_[r].reset();
    }
    walked_ = added_;
  }

  // The rules and typical gaps of the pass's ranks, from the values the walk gathered.
  void finish_block(const Pass& pass) {
    for (size_t e = 0; e < events_.size(); ++e) {
      const auto [first, last] = block_of(std::span<const RankCall>(events_[e]->ranks), pass);
      for (size_t j = first; j < last; ++j) {
        RankCall& call = events_[e]->ranks[j];
        RankRules& rules = rules_[e][j];
        call.root = rules.root.build();
        call.send_bytes = rules.send_bytes.build();
        call.recv_bytes = rules.recv_bytes.build();
        call.tag = rules.tag.build();
        call.recv_tag = rules.recv_tag.build();
        call.gap_typical = robust_mean(gaps_[e][j]);
        rules = RankRules{};
        std::vector<int64_t>().swap(gaps_[e][j]);
      }
    }
  }

  // Asks for the cache line `bytes` past `p`, which may be past the end of its array: a
  // prefetch never faults, and the address is not formed as a pointer.
  static void prefetch_after(const void* p, size_t bytes) {
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + bytes));
  }

  // The index range of the pass's ranks in `v`, ascending by rank.
  template <class T>
  static std::pair<size_t, size_t> block_of(std::span<const T> v, const Pass& pass) {
    const auto below = [](const T& x, int32_t r) { return x.rank < r; };
    const auto lo = std::lower_bound(v.begin(), v.end(), pass.begin, below);
    const auto hi = std::lower_bound(lo, v.end(), pass.end, below);
    return {static_cast<size_t>(lo - v.begin()), static_cast<size_t>(hi - v.begin())};
  }

  void walk(std::vector<Item>& items, Pass& pass) {
    for (Item& item : items) {
      if (item.is_loop()) walk_loop(std::get<Loop>(item.node), pass);
      else visit(std::get<Event>(item.node), pass);
    }
  }

  void walk_loop(Loop& loop, Pass& pass) {
    const auto [first, last] = block_of(std::span<const RankLoop>(loop.ranks), pass);
    if (first == last) {  // none of the pass's ranks: its events are passed over unread
      skip(loop.body, loop.iterations, pass);
      return;
    }
    std::vector<int64_t> iteration_start(last - first);
    for (uint64_t it = 0; it < loop.iterations; ++it) {
      for (size_t j = first; j < last; ++j) {
        const auto r = static_cast<size_t>(loop.ranks[j].rank);
        iteration_start[j - first] = last_end_[r];
        // Innermost wins: a loop entered later (nested, starting the body) takes the gap.
        if (it == 0) pending_entry_[r] = &loop.ranks[j];
      }
      walk(loop.body, pass);
      for (size_t j = first; j < last; ++j) {
        const auto r = static_cast<size_t>(loop.ranks[j].rank);
        loop.ranks[j].iteration_ns.add(last_end_[r] - iteration_start[j - first]);
      }
    }
  }

  // Moves the pass past `times` executions of `items`, in which it has no rank.
  void skip(const std::vector<Item>& items, uint64_t times, Pass& pass) {
    pass.next_event += expanded_events(items) * times;
    if (pass.next_event > merged_.events.size()) invariant_broken("tree is longer than the trace");
  }

  // What part j's record says of every tree event of `symbol`, read at the symbol's first
  // merged event (a tree event's ranks are that event's): its peers, and the event's comm, op
  // and flags from its first rank.
  void describe_part(merge::Symbol symbol, size_t j, const merge::Part& part,
                     const trace::Record& r) {
    // A trace's own peer that happens to equal the marker is no rank at all.
    const int32_t peer = merged_.is_reply(part.rank, part.record) ? kLastWildcardSource
                         : r.peer == kLastWildcardSource          ? trace::kUnknownRank
                                                                  : r.peer;
    const int32_t source = (r.flags & trace::kFlagAnySource) ? trace::kAnySource : r.source;
    for (Event* event : tree_events_of_symbol_[symbol]) {
      event->ranks[j].peer = peer;
      event->ranks[j].source = source;
      if (j != 0) continue;
      event->comm = r.comm;
      event->op = r.op;
      event->flags = r.flags;
    }
  }

  void visit(Event& event, Pass& pass) {
    if (pass.next_event >= merged_.events.size()) invariant_broken("tree is longer than the trace");
    const merge::Event& merged_event = merged_.events[pass.next_event];
    if (merged_event.symbol != event.symbol || merged_event.part_count != event.ranks.size())
      invariant_broken("tree and trace disagree");
    std::vector<RankRules>& rules = rules_[event.id];
    const auto parts = merged_.parts_of(merged_event);
    const bool first_instance = !pass.seen[event.id];
    const bool symbol_first = pass.next_event == first_event_of_symbol_[event.symbol];
    pass.seen[event.id] = 1;
    const auto [first, last] = block_of(parts, pass);
    for (size_t j = first; j < last; ++j) {
      // Each part's record is in another rank's array: a cache miss per part, which the work
      // below cannot hide. Asked for early, the misses overlap: a few parts ahead, and the
      // rank's next record (both its cache lines), which its next event most often reads.
      if (j + kPrefetchParts < last) __builtin_prefetch(&record(parts[j + kPrefetchParts]));
      const merge::Part& part = parts[j];
      const trace::Record& r = record(part);
      prefetch_after(&r, sizeof r);
      prefetch_after(&r, 2 * sizeof r - 1);
      const auto rank = static_cast<size_t>(part.rank);
      RankCall& call = event.ranks[j];
      if (symbol_first) describe_part(event.symbol, j, part, r);
      // The sample is this event's own first instance (shape_event took the first event of the
      // symbol, which may be another tree event: the same call before a loop and in it).
      if (first_instance) call.sample = part;
      call.comm_ns.add(r.t_end - r.t_start);
      const int64_t* gaps = pass.gaps[rank - static_cast<size_t>(pass.begin)].data() + part.record;
      const int64_t gap = *gaps;
      prefetch_after(gaps, 64);  // the rank's gaps are 8 to a cache line: the next line
      if (pending_entry_[rank] != nullptr) {
        pending_entry_[rank]->entry_gap_ns.add(gap);
        pending_entry_[rank] = nullptr;
      } else {
        call.gap_ns.add(gap);
        gaps_[event.id][j].push_back(gap);
      }
      if (r.t_end > last_end_[rank]) last_end_[rank] = r.t_end;
      rules[j].root.add(r.root);
      rules[j].send_bytes.add(r.count * static_cast<int64_t>(r.type_size));
      rules[j].recv_bytes.add(r.recv_count * static_cast<int64_t>(r.recv_type_size));
      rules[j].tag.add(r.tag);
      rules[j].recv_tag.add(r.recv_tag);
    }
    ++pass.next_event;
  }

  // REQUIRES (TreeBuilder): part.rank's trace is the one merged, so the index is in range.
  const trace::Record& record(const merge::Part& part) const {
    const trace::RankTrace& rank = *ranks_[static_cast<size_t>(part.rank)];
    if (part.record >= rank.records.size()) invariant_broken("a part past its rank's records");
    return rank.records[part.record];
  }

  const merge::MergedTrace& merged_;
  std::vector<uint64_t> first_event_of_symbol_;
  std::vector<const trace::RankTrace*> ranks_;               // the window's ranks; null after
  std::vector<std::unique_ptr<trace::RankTrace>> given_;     // add(RankTrace&&)'s, by rank
  std::vector<RankLoop*> pending_entry_;
  std::vector<int64_t> last_end_;
  size_t window_;
  size_t added_ = 0;    // ranks handed in
  size_t walked_ = 0;   // ranks whose window is walked
  LoopTree tree_;
  std::vector<Event*> events_;                  // tree order
  std::vector<std::vector<Event*>> tree_events_of_symbol_;
  std::vector<std::vector<RankRules>> rules_;   // per event, per rank
  std::vector<std::vector<std::vector<int64_t>>> gaps_;  // per event, per rank: gaps in order
};

TreeBuilder::TreeBuilder(const merge::MergedTrace& merged, const compress::Sequence& folded)
    : state_(std::make_unique<State>(merged, folded)) {}
TreeBuilder::~TreeBuilder() = default;
void TreeBuilder::add(const trace::RankTrace& rank) { state_->add(rank); }
void TreeBuilder::add(trace::RankTrace&& rank) { state_->add(std::move(rank)); }
LoopTree TreeBuilder::finish() {
  LoopTree tree = state_->finish();
  state_.reset();
  return tree;
}

LoopTree build(const trace::TraceSet& trace, const merge::MergedTrace& merged,
               const compress::Sequence& folded) {
  TreeBuilder builder(merged, folded);
  for (const trace::RankTrace& rank : trace.ranks) builder.add(rank);
  return builder.finish();
}

namespace {

uint64_t count_events(const std::vector<Item>& items) {
  uint64_t n = 0;
  for (const Item& item : items) n += item.is_loop() ? count_events(item.loop().body) : 1;
  return n;
}

void find_main_loop(const std::vector<Item>& items, MainLoop& best) {
  for (const Item& item : items) {
    if (!item.is_loop()) continue;
    const Loop& loop = item.loop();
    const uint64_t per_iteration = expanded_events(loop.body);
    const uint64_t covered = loop.executions * loop.iterations * per_iteration;
    if (covered > best.covered_events) best = MainLoop{&loop, per_iteration, covered};
    find_main_loop(loop.body, best);
  }
}

double time_of(const std::vector<Item>& items, int32_t rank) {
  double ns = 0;
  for (const Item& item : items) {
    if (item.is_loop()) {
      if (const RankLoop* r = item.loop().timing_of(rank)) ns += r->entry_gap_ns.sum();
      ns += time_of(item.loop().body, rank);
      continue;
    }
    if (const RankCall* call = item.event().call_of(rank))
      ns += call->gap_ns.sum() + call->comm_ns.sum();
  }
  return ns;
}

// Relative rank offset as text: "+1", "-2", "0".
std::string offset(int32_t other, int32_t rank) {
  return fmt::format("{:+d}", other - rank);
}

std::string party(const RankCall& call) {
  const int32_t who = call.peer != trace::kNoRank ? call.peer : call.source;
  switch (who) {
    case trace::kNoRank: return "";
    case trace::kProcNull: return "null";
    case trace::kAnySource: return "any";
    case trace::kRootSelf: return "root";
    case trace::kUnknownRank: return "?";
    case kLastWildcardSource: return "reply";
    default: return offset(who, call.rank);
  }
}

}  // namespace

std::string describe(const Event& event) {
  const trace::FunctionInfo* info = trace::find_function(event.function);
  std::string text = info != nullptr ? std::string(info->name) : fmt::format("#{}", event.function);
  std::vector<std::string> parties;
  bool uniform = true;
  for (const RankCall& call : event.ranks) {
    parties.push_back(party(call));
    uniform = uniform && parties.back() == parties.front();
  }
  if (parties.empty() || parties.front().empty()) {
    if (!event.ranks.empty()) {
      const Rule& root = event.ranks.front().root;
      if (root.kind == Rule::Kind::constant && root.base >= 0)
        text += fmt::format("(root {})", root.base);
      else if (root.kind != Rule::Kind::constant)
        text += "(root varies)";
    }
    return text;
  }
  if (uniform) return text + "(" + parties.front() + ")";
  constexpr size_t kShown = 8;
  text += "(";
  for (size_t j = 0; j < parties.size() && j < kShown; ++j)
    text += fmt::format("{}r{}:{}", j ? " " : "", event.ranks[j].rank, parties[j]);
  if (parties.size() > kShown) text += fmt::format(" ...{} more", parties.size() - kShown);
  return text + ")";
}

namespace {

void append(std::string& out, const std::vector<Item>& items) {
  for (const Item& item : items) {
    if (!out.empty() && out.back() != ' ') out += ' ';
    if (!item.is_loop()) {
      out += describe(item.event());
      continue;
    }
    out += "( ";
    append(out, item.loop().body);
    out += fmt::format(" )^{}", item.loop().iterations);
  }
}

}  // namespace

uint64_t compressed_length(const LoopTree& tree) { return count_events(tree.items); }

uint64_t expanded_events(const std::vector<Item>& items) {
  uint64_t n = 0;
  for (const Item& item : items)
    n += item.is_loop() ? item.loop().iterations * expanded_events(item.loop().body) : 1;
  return n;
}

MainLoop main_loop(const LoopTree& tree) {
  MainLoop best;
  find_main_loop(tree.items, best);
  return best;
}

double rank_time_ns(const LoopTree& tree, int32_t rank) { return time_of(tree.items, rank); }

namespace {

void add_disturbance(const std::vector<Item>& items, std::vector<RankDisturbance>& out) {
  for (const Item& item : items) {
    if (item.is_loop()) {
      add_disturbance(item.loop().body, out);
      continue;
    }
    for (const RankCall& call : item.event().ranks) {
      if (call.gap_typical.blocks == 0) continue;
      RankDisturbance& d = out[static_cast<size_t>(call.rank)];
      const auto n = static_cast<double>(call.gap_ns.n);
      d.compute_ns += call.gap_typical.plain_mean * n;
      d.left_out_ns += (call.gap_typical.plain_mean - call.gap_typical.mean) * n;
      d.bursts += call.gap_typical.left_out;
    }
  }
}

}  // namespace

std::vector<RankDisturbance> disturbance(const LoopTree& tree) {
  std::vector<RankDisturbance> out(static_cast<size_t>(std::max(tree.world_size, 0)));
  for (size_t r = 0; r < out.size(); ++r) out[r].rank = static_cast<int32_t>(r);
  add_disturbance(tree.items, out);
  return out;
}

std::string to_string(const LoopTree& tree) {
  std::string out;
  append(out, tree.items);
  return out;
}

}  // namespace pskel::looptree

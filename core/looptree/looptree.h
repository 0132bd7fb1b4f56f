// The loop tree of a traced program: the folded merged trace (merge + compress) with, for every
// event, what each rank did (peer, bytes and tag as rules over the iterations) and how long it
// took (communication time and the compute gap before it), and for every loop its boundary
// compensation (seed 000 §4, Fig. 2). The skeleton generator and the predictor read this.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compress/compress.h"
#include "looptree/robust.h"
#include "looptree/rule.h"
#include "merge/merge.h"
#include "trace/reader.h"

namespace pskel::looptree {

// Streaming summary of durations in ns (Welford): mean and spread without keeping samples.
struct Stat {
  uint64_t n = 0;
  double mean = 0;
  double m2 = 0;        // sum of squared deviations from the mean
  int64_t min = 0;
  int64_t max = 0;

  void add(int64_t x);
  double sum() const { return mean * static_cast<double>(n); }
  double stddev() const;
};

// RankCall::peer of a reply (merge::reply_records): the send goes to the source of the rank's
// last wildcard receive, whichever rank that was in the instance.
inline constexpr int32_t kLastWildcardSource = -64;

// One rank's part in an event, over all the event's instances.
struct RankCall {
  int32_t rank = 0;
  int32_t peer = trace::kNoRank;     // world rank sent to (trace:: markers for none/PROC_NULL,
                                     // or kLastWildcardSource)
  int32_t source = trace::kNoRank;   // world rank received from; kAnySource for a wildcard
  Rule root;      // world rank; a rule because roots often rotate (SUMMA, LU: root = k % p)
  Rule send_bytes;
  Rule recv_bytes;
  Rule tag;
  Rule recv_tag;
  Stat comm_ns;   // t_end - t_start of each instance
  Stat gap_ns;    // compute before each instance, except the loop-entry instances (Loop::ranks)
  RobustMean gap_typical;  // gap_ns without the stretches a burst of interference inflated
                           // (robust.h): what a skeleton replays
  merge::Part sample{};   // the first instance's record: datatypes, v-counts, requests
};

struct Event {
  uint32_t id = 0;            // position in tree order: 0 .. compressed_length - 1
  merge::Symbol symbol = 0;
  uint16_t function = 0;
  uint16_t comm = trace::kNoComm;
  uint8_t op = 0;
  uint8_t flags = 0;          // trace::kFlag* of the first instance's first rank
  uint64_t instances = 0;
  std::vector<RankCall> ranks;  // ascending rank; the ranks that take part

  // `rank`'s part, or null if it takes no part: O(log ranks), for callers that ask per rank.
  const RankCall* call_of(int32_t rank) const;
};

// One rank's timing of a loop. The gap before the rank's first call in the first iteration of
// each execution is the loop's entry gap (S1 in the seed's Fig. 2): it is compute outside the
// loop, so it is kept here and not averaged into the first event's in-loop gap (S2/E2). What
// follows the loop (E3) is the next event's own gap. With this split, sums are exact:
// a rank's time = sum over loops of entry_gap.sum() + sum over events of gap + comm sums.
struct RankLoop {
  int32_t rank = 0;
  Stat entry_gap_ns;   // one sample per execution
  Stat iteration_ns;   // per iteration: from the end of the rank's last call before it to the
                       // end of its last call in it
};

struct Loop;
struct Item;

struct Loop {
  uint64_t iterations = 0;
  uint64_t executions = 0;     // how often the loop is entered (its enclosing loops' trips)
  std::vector<Item> body;
  std::vector<RankLoop> ranks; // ascending rank; ranks that take part in the body

  const RankLoop* timing_of(int32_t rank) const;  // null if `rank` takes no part; O(log ranks)
};

struct Item {
  std::variant<Event, Loop> node;
  bool is_loop() const { return std::holds_alternative<Loop>(node); }
  const Loop& loop() const { return std::get<Loop>(node); }
  const Event& event() const { return std::get<Event>(node); }
};

struct LoopTree {
  int world_size = 0;
  std::vector<Item> items;
  uint64_t merged_events = 0;
};

// REQUIRES: `merged` = merge::merge(trace), `folded` = compress::compress(merged.symbols()).
LoopTree build(const trace::TraceSet& trace, const merge::MergedTrace& merged,
               const compress::Sequence& folded);

// build() over the ranks handed one at a time, in rank order, so that a job's trace need not be
// held whole (the trace read a second time, after merge::Merger): each window of ranks is
// walked on every CPU as it fills, and what the tree keeps of a rank is its statistics.
//   TreeBuilder builder(merged, folded);
//   read_trace_dir(dir, {}, [&](RankTrace& r) { builder.add(std::move(r)); });
//   LoopTree tree = builder.finish();
class TreeBuilder {
 public:
  // REQUIRES: as build()'s; `merged` outlives the builder.
  TreeBuilder(const merge::MergedTrace& merged, const compress::Sequence& folded);
  ~TreeBuilder();
  TreeBuilder(const TreeBuilder&) = delete;
  TreeBuilder& operator=(const TreeBuilder&) = delete;

  // The next rank (0, 1, ...), the same trace the merge read. Lent: `rank` must stay unchanged
  // until finish(). Given: freed once its window is walked. Throws std::logic_error past
  // world_size ranks.
  void add(const trace::RankTrace& rank);
  void add(trace::RankTrace&& rank);
  // REQUIRES: world_size ranks added; called once.
  LoopTree finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Events in the folded tree, loop markers not counted (the seed's compressed length).
uint64_t compressed_length(const LoopTree& tree);

// The loop that accounts for the most merged events (executions x iterations x events per
// iteration), or nullptr if there is none.
struct MainLoop {
  const Loop* loop = nullptr;
  uint64_t events_per_iteration = 0;   // merged events of one iteration, inner loops expanded
  uint64_t covered_events = 0;
};
MainLoop main_loop(const LoopTree& tree);

// Merged events one execution of `items` stands for.
uint64_t expanded_events(const std::vector<Item>& items);

// Compute + communication ns the tree accounts for on `rank` (sum of every gap and call):
// equals the rank's traced time from its first call's start to its last call's end plus the
// first gap, when the tree is built from the whole trace.
double rank_time_ns(const LoopTree& tree, int32_t rank);

// What robust_mean left out of one rank's compute gaps as bursts of interference, against the
// rank's compute in the events it judged: how disturbed the traced run was.
struct RankDisturbance {
  int32_t rank = 0;
  double compute_ns = 0;    // gaps of the events with enough instances to judge
  double left_out_ns = 0;   // what the typical gaps leave out of them
  uint64_t bursts = 0;      // blocks left out, over all events
};
std::vector<RankDisturbance> disturbance(const LoopTree& tree);

// An event as text: its MPI function and who it talks to, e.g. "MPI_Isend(+1)" (every rank sends
// to the next) or "MPI_Send(r0:+1 r1:-1)" when ranks differ; "MPI_Bcast(root 0)".
std::string describe(const Event& event);

// One line: "MPI_Init ( MPI_Irecv(-1) MPI_Isend(+1) MPI_Waitall )^100 MPI_Finalize". Peers are
// shown relative to each rank when all ranks agree, else as "r0:+1 r1:-1 ...".
std::string to_string(const LoopTree& tree);

}  // namespace pskel::looptree

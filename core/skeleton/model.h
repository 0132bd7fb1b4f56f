// The skeleton generator's view of a traced program (internal to core/skeleton): what every
// event of the loop tree does on every rank beyond what looptree.h keeps (communicators matched
// across ranks, which requests a completion completes, which persistent requests a start
// starts), the per-rank call order of each run of point-to-point calls and whether that order
// needs rewriting to be deadlock-free, and which loops are scaled.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "looptree/looptree.h"
#include "merge/merge.h"
#include "trace/functions.h"
#include "trace/reader.h"
#include "util/result.h"

namespace pskel::skeleton::detail {

namespace lt = looptree;
namespace tr = trace;

inline constexpr uint32_t kNoEvent = UINT32_MAX;

// A communicator of the traced program, matched across ranks by its members and the order in
// which the ranks saw it (docs/trace-format.md §3.5). 0 is MPI_COMM_WORLD, 1 MPI_COMM_SELF.
struct Comm {
  std::vector<int32_t> members;  // world ranks, in communicator rank order
  bool inter = false;            // an intercommunicator (not reproduced)
  uint32_t made_by = kNoEvent;   // the tree event that created it, if the trace shows one
  // world rank -> rank in this communicator, or -1
  int32_t local(int32_t world) const;
};

// Per tree event: what looptree::Event does not say. Vectors indexed like Event::ranks.
struct EventInfo {
  const lt::Event* event = nullptr;
  tr::FunctionId fn{};
  tr::FunctionKind kind = tr::FunctionKind::meta;
  std::vector<int> comm;                    // global communicator, -1 for none
  std::vector<int> new_comm;                // comm-making calls: the communicator made, or -1
  std::vector<std::vector<int>> made;       // ... and per instance (a split in a loop makes a
                                            // different communicator each time)
  std::vector<std::vector<uint32_t>> covers;  // completions: creating events of the requests it
                                              // completes (an event twice: two of its requests)
  // A completion folded from calls that complete different requests (two Waitalls in a row,
  // one for collectives, one for persistent requests): the covers of instance i are
  // phase_covers[j][i % period]. period 1: `covers` for every instance.
  uint32_t period = 1;
  std::vector<std::vector<std::vector<uint32_t>>> phase_covers;
  std::vector<std::vector<uint32_t>> starts;  // Start/Startall: the init events started...
  std::vector<std::vector<uint32_t>> start_nth;  // ... and which of each event's live requests
                                                 // (0: the oldest; an init in a loop makes several)
  std::vector<std::vector<uint32_t>> frees;  // Request_free: per instance, the creating event
  std::vector<int64_t> passed;              // completions and Startall: the count passed
  std::vector<uint8_t> flags;               // the sample's flags
  std::vector<uint32_t> type_size;          // the sample's datatype sizes (Record::type_size,
  std::vector<uint32_t> recv_type_size;     // Record::recv_type_size)
  std::vector<std::vector<int64_t>> count_lists;  // v-collectives: the sample's aux words
                                                  // (its count lists); empty for other calls
  std::string skip;                         // why the skeleton cannot make this call ("" = it can)
};

// One run of consecutive point-to-point items in a body (events of kind p2p, start and
// completion, and loops made only of such items): the unit of reordering and of deadlock
// planning.
struct Group {
  size_t first = 0, last = 0;                 // items [first, last) of the body
  std::vector<std::vector<size_t>> order;     // per world rank: the items it runs, in its order
  bool reordered = false;                     // some rank's order is not the merged order
  bool rewrite = false;                       // deadlock-free plan: Irecv all, Isend, Waitall
  bool defer = false;                         // ... or, when that is not enough (the matching
                                              // calls lie beyond the group), blocking sends
                                              // become Isends completed at the end of the run
                                              // (what eager buffering did for the original)
  bool checked = true;                        // false: too long to simulate
  bool replies = false;                       // holds a reply (looptree::kLastWildcardSource),
                                              // or a wildcard MPI_Recv where the skeleton has
                                              // replies: never receives first (an Irecv would
                                              // not tell pskel_last_source), only deferred sends
  std::string reason;                         // why it was rewritten
};

struct Analysis {
  int world_size = 0;
  std::vector<double> ns_per_unit;            // per world rank: calibration used
  std::vector<EventInfo> events;              // by tree event id
  std::vector<const lt::Loop*> loop_of_event; // innermost loop around each event, or null
  std::vector<Comm> comms;
  std::vector<bool> comm_tags_vary;           // per comm: some tag rule is not constant
  std::vector<int64_t> comm_reply_bytes;      // per comm: the largest reply sent on it, or -1
  std::vector<std::vector<uint32_t>> event_of;  // [rank][record] -> tree event id or kNoEvent
  // Groups by the body they belong to (the items vector's address).
  std::map<const std::vector<lt::Item>*, std::vector<Group>> groups;
  std::vector<std::string> warnings;
  std::vector<std::string> substitutions;     // calls made differently from the original
  bool replies = false;                       // some send replies to the last wildcard source
};

// Walks the tree against the merged trace and fills events, event_of, comms, requests, taking
// the ranks one at a time, in rank order, so that the trace need not be held whole: `trace`
// gives each rank's header and samples and the meta (its records are not read), add() reads
// one rank's records. What the skeleton needs of a record later (datatype sizes, v-counts) is
// copied into the analysis.
class AnalysisBuilder {
 public:
  // `merged` and `tree` outlive the builder and the analysis.
  AnalysisBuilder(const tr::TraceSet& trace, const merge::MergedTrace& merged,
                  const lt::LoopTree& tree);
  ~AnalysisBuilder();
  AnalysisBuilder(const AnalysisBuilder&) = delete;
  AnalysisBuilder& operator=(const AnalysisBuilder&) = delete;
  // The next rank (0, 1, ...), the records the merge read; not kept.
  void add(const tr::RankTrace& rank);
  // Errors: no usable calibration, a tree that does not match the merged trace, a rank with
  // fewer records than were merged, not every rank added. Called once.
  Result<Analysis> finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Fills Analysis::groups: orders and deadlock plans, innermost bodies first.
void plan_groups(const lt::LoopTree& tree, Analysis& analysis);

// A per-rank number of meta.json (an array as long as the ranks), or 0 where it is missing or
// not a number.
double meta_calibration(const tr::TraceSet& trace, const char* key, size_t r);

// Kind helpers.
bool is_groupable(const EventInfo& info);
std::string_view function_name(tr::FunctionId fn);
// Replies (merge::reply_records): some rank's send goes to its last wildcard source; an
// MPI_Recv that some rank posts with MPI_ANY_SOURCE.
bool has_reply(const lt::Event& event);
bool is_wildcard_receive(const lt::Event& event);

// ---- scaling (scale.cpp) -------------------------------------------------------------------

struct ScaledLoop {
  const lt::Loop* loop = nullptr;
  uint64_t run = 0;       // iterations the skeleton runs
  double factor = 1;      // N / run; K for a loop scaled by work
  double seconds = 0;     // traced time in it (slowest rank)
  // Too few iterations to drop any (N / K < kMinRunIterations): every iteration runs and the
  // compute in it runs 1/K of its work at weight K, like compute outside the scaled loops.
  bool by_work = false;
};

// A loop runs at least this many iterations when scaled by iterations. One iteration weighted
// by N carries every cost of a first iteration (first touch of buffers, connections made on
// first use, caches) N times; below this the loop is scaled by work instead.
inline constexpr uint64_t kMinRunIterations = 2;

struct Scaling {
  int64_t scale = 1;
  std::vector<ScaledLoop> loops;
  double traced_seconds = 0;       // slowest rank, first call to last (the tree's sum)
  double scaled_seconds = 0;       // traced time inside the scaled loops (slowest rank)
  double estimated_skeleton_seconds = 0;
  const ScaledLoop* find(const lt::Loop* loop) const;
};

// Time of `items` on `rank` in ns (gaps, calls and loop entry gaps).
double items_ns(const std::vector<lt::Item>& items, int32_t rank);
Scaling choose_scaling(const lt::LoopTree& tree, const Analysis& analysis, int64_t scale,
                       bool auto_scale, double target_fraction, double min_seconds);

// ---- memory (memory.cpp) -------------------------------------------------------------------

// The memory-bound part of each rank's compute (skeletons/stream.h): a rank whose data grew by
// at least kMinFootprintBytes after MPI_Init is taken to stream it once per main-loop iteration,
// so that share = (footprint x the byte's cost) / (its compute per iteration), the byte's cost
// from the run's memory probes (stream_ns_per_byte_in_run) or else from MPI_Finalize's,
// at most kMaxMemoryShare; the skeleton streams that share of every gap through a working set
// of the footprint's size and computes the rest. A lower bound where the program passes over
// its data several times per iteration; no memory part where the trace has no samples or no
// stream calibration (older traces) or the data fit in the caches.
inline constexpr int64_t kMinFootprintBytes = int64_t{32} << 20;
inline constexpr double kMaxMemoryShare = 0.8;
inline constexpr double kMaxWorkingSetBytes = double(int64_t{8} << 30);

struct MemoryPlan {
  std::vector<int64_t> footprint_bytes;  // per rank, -1: unknown
  std::vector<double> ns_per_byte;       // per rank, the trace's stream calibration (0: none)
  std::vector<double> share;             // per rank, 0: core-bound only
  std::vector<double> working_set_bytes; // per rank
  // How the trace's probes streamed the bytes they priced, and so how the skeleton streams them:
  // meta.json's stream_kind, "read_write" in traces before it.
  bool stream_reads_only = false;
  bool any() const;
};
MemoryPlan plan_memory(const tr::TraceSet& trace, const lt::LoopTree& tree, const Analysis& a);

}  // namespace pskel::skeleton::detail

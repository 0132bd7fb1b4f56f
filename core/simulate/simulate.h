// Predicts a traced MPI job's run time by replaying its trace over a dependency graph (seed
// 003's application logic tree) under a communication model T = T0(P) + m/B·f(P) fitted to the
// trace's own calls; the replay's critical path is the prediction. Pure; thread-compatible.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/gaps.h"
#include "trace/reader.h"

namespace pskel::simulate {

// ---------------------------------------------------------------------------------------------
// The graph (build_graph)

// Cost families: calls whose cost follows one line T0 + m·slope. `post` is the local cost of
// any call that does not wait (Isend, Irecv, Start, Test, Iprobe, ...; T0 only), and the
// least any call costs; `p2p_send` the sender's
// cost of a blocking eager send; `p2p` a message's transfer time, from the send being posted to
// the waiting receiver having it; `p2p_recv` the receiver's cost of a receive (or of the Wait
// completing it) when the message was there already; the others are collectives.
enum class Family : uint8_t {
  post, p2p_send, p2p, p2p_recv,
  barrier, bcast, reduce, allreduce, alltoall, allgather, gather, scatter, reduce_scatter, scan,
  comm_create,
};
inline constexpr size_t kFamilyCount = 15;
std::string_view family_name(Family f);
// The collective's f(P): how its data term grows with the ranks taking part (log2 P rounds for
// tree-like families, P-1 for those where every rank's data reaches every other). 1 for
// point-to-point. Also the number of message latencies in the collective's T0(P).
double family_factor(Family f, int ranks);

// Who a collective member waits for before its part can finish.
enum class Sync : uint8_t { all, from_root, to_root };

inline constexpr uint32_t kNone = UINT32_MAX;

// One side of a message, one rank's part in a collective, or a probe waiting for a message to
// arrive. Posted by one op (its start time is the post time); an op that waits for it (the
// blocking call itself, or a Wait/Test completing its request) takes its completion time.
struct Endpoint {
  enum class Kind : uint8_t { send, recv, member, arrival };
  Kind kind = Kind::send;
  int32_t rank = 0;
  uint32_t op = kNone;        // the op that posts it (kNone for an arrival: nothing to post)
  uint32_t link = kNone;      // message (send, recv, arrival) or collective (member); kNone =
                              // unmatched
};

// How a send completes: `synchronous` (Ssend, Issend) only once the receive is posted;
// `eager` (Bsend) on its own; `standard` (Send, Rsend, Isend, Sendrecv, Send_init) eagerly up to
// the MPI's eager limit and synchronously above it (Model::rendezvous_bytes).
enum class SendMode : uint8_t { standard, synchronous, eager };

struct Message {
  uint32_t send = kNone;      // endpoint ids
  uint32_t recv = kNone;
  int64_t bytes = 0;
  SendMode mode = SendMode::standard;
};

struct Collective {
  Family family = Family::barrier;
  Sync sync = Sync::all;
  int32_t root = -1;          // world rank (from_root / to_root)
  int ranks = 0;              // members the communicator has (P)
  int64_t bytes = 0;          // the largest member's buffer bytes
  std::vector<uint32_t> members;  // endpoint ids, one per member that reached the call
};

// One traced MPI call of one rank, in the rank's call order (pseudo-records are not ops): what
// the replay reads of it, in 32 bytes aligned, two to a cache line. When it ran is apart, in
// Graph::traced: with it an op was 48 bytes and half the ops spanned two lines, and the replay
// reads an op of every rank that a collective wakes (transpose at 16,384 ranks: its user time
// 8.4-8.9 s with ops of 48 bytes, 6.8-7.5 s with 32).
struct alignas(32) Op {
  int64_t gap_ns = 0;         // traced compute before the call (its start - previous call's end)
  int64_t bytes = 0;          // bytes it sends
  // Its first post and wait in Graph::posts and Graph::waits (endpoint ids); they run to the
  // next op's first (Graph::posts_of, waits_of). No counts: 8 bytes less for each of a job's
  // calls, 130 MB at 16,384 ranks x 1,000 calls, on a VM where a fresh gigabyte costs seconds.
  uint32_t first_post = 0;
  uint32_t first_wait = 0;
  uint16_t function = 0;
  bool measured = false;      // cost not modelled: the call takes its traced duration
  bool finalize = false;      // MPI_Finalize: its start is the rank's end
};
static_assert(sizeof(Op) == 32);

// When a call ran: its record's t_start and t_end (ns, its rank's clock).
struct TracedSpan {
  int64_t start = 0;
  int64_t end = 0;
};

struct Graph {
  Graph() = default;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  Graph(const Graph&) = delete;             // `ops` points into `op_storage`
  Graph& operator=(const Graph&) = delete;

  int world_size = 0;
  std::vector<std::span<const Op>> ops;   // per rank: its ops, in op_storage
  // Every rank's ops, rank after rank, in one array. A vector per rank, allocated while the
  // trace was read, landed between the ranks' freed records all over the heap, and the replay,
  // which resumes every rank at each collective, took half again as long (transpose, 16,384
  // ranks: 14.3-16.3 s, 7.9-10.4 s in one array). One op more at the end, in no rank's span,
  // ends the last op's posts and waits.
  std::vector<Op> op_storage;
  // When each op ran, at the op's index in op_storage (none for the closing op): read by the
  // model's fit and clock offsets, not by the replay, so a caller may free it once the model is
  // fitted (drop_traced: 16 bytes a call, 260 MB at 16,384 ranks x 1,000 calls).
  std::vector<TracedSpan> traced;
  // The calls the replay does not model (Op::measured: MPI_Init, collectives on communicators
  // the trace does not define), by their index in op_storage, ascending, with what they took:
  // their traced duration less the time their rank lost within it.
  std::vector<std::pair<uint32_t, double>> measured_ns;
  std::vector<uint32_t> posts, waits;
  std::vector<Endpoint> endpoints;
  std::vector<Message> messages;
  std::vector<Collective> collectives;
  // Best-effort notes: what could not be matched or was not understood (one line each).
  uint64_t unmatched_sends = 0, unmatched_receives = 0, incomplete_collectives = 0;
  uint64_t unmodelled_calls = 0;
  std::vector<std::string> warnings;
  // Per rank, the time it lost to what is not the program (its wait for a CPU, the tracer's
  // probes: trace/gaps.h): taken out of every traced duration the model and the replay use, as
  // it is out of the gaps.
  std::vector<trace::LostTimeCurve> lost_time;

  // The traced time [from, to] of `rank`, less the time it lost within it.
  double busy_ns(int32_t rank, int64_t from, int64_t to) const {
    if (to <= from) return 0;
    const auto r = static_cast<size_t>(rank);
    const int64_t lost = r < lost_time.size() ? lost_time[r].between(from, to) : 0;
    return static_cast<double>(std::max<int64_t>(0, to - from - lost));
  }
  // REQUIRES: `op` is one of `ops`'.
  const TracedSpan& traced_of(const Op& op) const {
    return traced[static_cast<size_t>(&op - op_storage.data())];
  }
  // REQUIRES: traced is not dropped.
  double busy_ns(int32_t rank, const Op& op) const {
    const TracedSpan& t = traced_of(op);
    return busy_ns(rank, t.start, t.end);
  }
  // REQUIRES: op.measured, and `op` is one of `ops`'.
  double measured_busy_ns(const Op& op) const {
    const auto index = static_cast<uint32_t>(&op - op_storage.data());
    const auto it = std::lower_bound(measured_ns.begin(), measured_ns.end(), index,
                                     [](const auto& m, uint32_t i) { return m.first < i; });
    return it != measured_ns.end() && it->first == index ? it->second : 0.0;
  }
  // Frees `traced`; what reads it (busy_ns of an op, traced_of, fit_model, clock_offsets) must
  // not be called after.
  void drop_traced() { std::vector<TracedSpan>().swap(traced); }

  // REQUIRES: `op` is one of `ops`' (its successor in op_storage ends its range).
  std::span<const uint32_t> posts_of(const Op& op) const {
    return {posts.data() + op.first_post, (&op)[1].first_post - op.first_post};
  }
  std::span<const uint32_t> waits_of(const Op& op) const {
    return {waits.data() + op.first_wait, (&op)[1].first_wait - op.first_wait};
  }
};

// Pure. Matches sends to receives per (communicator, source, dest, tag) in post order (MPI's
// non-overtaking rule), with wildcard receives resolved from their statuses and non-blocking
// ones from the completion that finished them; matches the k-th collective call of every member
// of a communicator; a probe waits for the message the next matching receive gets. Never fails:
// what it cannot match is counted and noted in `warnings`, and replays as if the peer were
// ready. Accepts truncated ranks (RankTrace::complete false): their last op ends the rank.
Graph build_graph(const trace::TraceSet& trace);

// build_graph() a rank at a time: add ranks 0, 1, ... in order, then finish() once (ranks
// never added have no ops). A caller that reads the trace a rank at a time (read_trace_dir's
// visitor) can free each rank's records once it is added: the graph holds what the replay
// needs. `expected_records` (all ranks' records, 0 if unknown) sizes the graph's arrays once.
// add_rank throws std::logic_error past world_size ranks.
class GraphBuilder {
 public:
  explicit GraphBuilder(int world_size, size_t expected_records = 0);
  ~GraphBuilder();
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;
  void add_rank(const trace::RankTrace& rank);
  Graph finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// The model (fit_model)

// A measured call duration: m bytes took `ns`.
struct Sample {
  double bytes;
  double ns;
};

struct Fit {
  double t0_ns = 0;           // T0(P) at the traced P
  double ns_per_byte = 0;     // slope; bandwidth B = f(P) / slope
  double r2 = 0;              // over the bucket points (1 with fewer than three points)
  uint64_t samples = 0;
  uint64_t buckets = 0;       // distinct message sizes (or size bins) the line went through
  bool fitted = false;        // false: no samples, the values are a fallback
  double cost_ns(double bytes) const { return t0_ns + bytes * ns_per_byte; }
};

// Least squares of the line through per-size points: samples are grouped by message size
// (exact sizes, or powers of two when there are more than 32), each group gives the point
// (mean size, mean duration), and the points are fitted weighted by their sample counts. The
// samples must already leave out waiting for the peer (fit_model makes them so); the mean, not
// the minimum, keeps what the job really paid per call, scheduling delays on a shared machine
// included. A negative slope is clamped to 0, a negative T0 to 0 (the line then goes through
// the origin). With one size only, the slope is `fallback_ns_per_byte` and T0 takes the rest.
Fit fit_line(std::span<const Sample> samples, double fallback_ns_per_byte = 0);

// fit_line's groups, summed a sample at a time: fit_model feeds one per family with every
// call of the job, and 16,384 ranks' calls as arrays of samples were 0.8 GB of fresh pages.
// Both groupings are kept as the samples come, and each group's sums in the samples' order,
// so `fit()` is what grouping the whole array at once gave, bit for bit (fit_line is this
// class fed an array).
class LineSums {
 public:
  void add(double bytes, double ns);
  uint64_t count() const { return count_; }
  Fit fit(double fallback_ns_per_byte = 0) const;

 private:
  static constexpr size_t kMaxExactSizes = 32;
  struct Sum {
    double bytes = 0, ns = 0;
    uint64_t n = 0;
  };
  // By exact size, in ascending size, until a 33rd size comes; then by floor(log2(size)).
  std::vector<std::pair<double, Sum>> exact_;
  bool too_many_sizes_ = false;
  std::array<Sum, 64> by_power_{};   // sizes under 2 (0 and 1) share group 0
  uint64_t count_ = 0;
};

struct Model {
  int ranks = 0;
  // Standard-mode messages of at least this many bytes go by rendezvous (as if synchronous):
  // the smallest size whose blocking sends were seen waiting for the receive to be posted,
  // above every size seen completing before it. Infinity when the trace shows no rendezvous.
  double rendezvous_bytes = std::numeric_limits<double>::infinity();
  std::array<Fit, kFamilyCount> fits{};
  const Fit& operator[](Family f) const { return fits[static_cast<size_t>(f)]; }
  Fit& operator[](Family f) { return fits[static_cast<size_t>(f)]; }
};

// Pure. Per rank, the offset (ns) that puts its clock on rank 0's: ranks' t = 0 differ by the
// skew of the barrier in MPI_Init (milliseconds on a busy machine). Estimated from causality: a
// receive ends after its send started, and a synchronising collective ends on every member
// after every member arrived; each pair of ranks takes the middle of its bounds.
std::vector<double> clock_offsets(const Graph& graph);

// Pure. Samples from the traced times, with rank clocks aligned by clock_offsets: a
// collective's cost is the duration of its latest arriving member (the one that did not wait
// for the others); a message's transfer time runs from the send's start to the end of the
// receive (or of the Wait completing it), taken only when the receiver was already waiting, so
// waiting for the send to be posted is not in it; blocking sends and calls that do not wait
// give their own durations. Families without samples borrow the p2p line:
// T0 = f(P)·T0_p2p, slope = f(P)·slope_p2p.
Model fit_model(const Graph& graph);

// ---------------------------------------------------------------------------------------------
// The replay (replay)

struct WhatIf {
  double cpu_scale = 1;       // compute takes this many times as long
  double grow = 1;            // problem grows by this factor: compute and message sizes × grow
  double latency_s = -1;      // if >= 0: p2p T0, and collectives' T0 = f(P)·latency
  double bandwidth = -1;      // if > 0 (bytes/s): B of every family
};

// The model with the what-if overrides applied (the one the replay uses).
Model apply_what_if(Model model, const WhatIf& what_if);

struct Prediction {
  double predicted_seconds = 0;
  int critical_rank = 0;           // the rank that ends last
  double compute_seconds = 0;      // on the critical path
  double communication_seconds = 0;
  int rank_switches = 0;           // times the critical path crosses to another rank
  uint64_t forced = 0;             // waits the replay had to give up on (inconsistent trace)
  std::vector<double> rank_end_seconds;
};

// Pure. Discrete-event replay: each rank's clock advances by its compute gaps (× cpu_scale ×
// grow) and by modelled call costs; a call that waits ends at max(own start + post cost, the
// completion of what it waits for): a receive at max(its post, send post + T(m)), a synchronous
// send at max(send post, receive post) + T(m), a collective member at max(arrivals it depends
// on) + cost. Never deadlocks: if every unfinished rank waits for something no rank will post,
// the waiting rank with the earliest clock goes on as if its peer were ready (counted in
// `forced`). The critical path is walked back from the rank that reaches MPI_Finalize last.
Prediction replay(const Graph& graph, const Model& model, const WhatIf& what_if = {});

}  // namespace pskel::simulate

// The timeline model of `pskel timeline` (seed 003's per-node view): for each rank, its MPI
// calls on one time axis, each classified into a state (point-to-point, collective, waiting,
// setup; computing is the time between calls), and for each node its CPU and memory use along
// the run, from the optional sample files. Pure functions over a read trace; thread-compatible.
// States and the time axis are defined in docs/timeline.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/reader.h"
#include "trace/samples.h"

namespace pskel::timeline {

// Ordered as they are drawn in the legend; the values are part of the page's data format.
enum class State : uint8_t { computing = 0, point_to_point = 1, collective = 2, waiting = 3, setup = 4 };
inline constexpr int kStateCount = 5;
std::string_view state_name(State state);

// The state time inside a call of this function counts as. Waiting: the calls whose purpose is
// to block until another rank acts (MPI_Wait*, MPI_Recv, MPI_Probe, MPI_Barrier).
State state_of(trace::FunctionId function);

// One MPI call on the run's time axis (ns since the earliest rank's t = 0, ranks aligned by
// their wall clocks at t = 0).
struct Call {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint16_t function = 0;     // trace::FunctionId
  State state = State::setup;
  int32_t peer = trace::kNoRank;   // destination, else source, else root (special values kept)
  int32_t tag = trace::kNoTag;     // send tag, else receive tag
  int64_t bytes = 0;               // docs/trace-format.md §4.10
  int64_t duration() const { return end_ns - start_ns; }
};

struct Lane {
  int rank = 0;
  int node = 0;               // index into Timeline::nodes
  int64_t begin_ns = 0;       // this rank's t = 0 on the run's axis
  int64_t end_ns = 0;         // entry to MPI_Finalize (or its last call, if cut short)
  std::vector<Call> calls;    // in time order, pseudo-records left out
};

// Use over the interval that ends at t_ns (rates) or at t_ns (amounts); -1: not measured.
struct RankUsage {
  int64_t t_ns = 0;
  double cpu = -1;            // the process's CPU time / elapsed time (above 1 with threads)
  int64_t rss_bytes = -1;
};
struct NodeUsage {
  int64_t t_ns = 0;
  double cpu_busy = -1;       // fraction of the node's CPU time that was not idle
  int64_t mem_used_bytes = -1;
  int64_t mem_total_bytes = -1;
};

struct Node {
  std::string host;
  std::vector<int> ranks;           // ascending
  std::vector<NodeUsage> usage;     // from the lowest rank on the node that has samples
};

struct Timeline {
  std::string program;
  std::string mpi;
  int64_t end_ns = 0;               // the latest lane end
  std::vector<Lane> lanes;          // index = world rank
  std::vector<Node> nodes;          // in order of their lowest rank
  std::vector<std::vector<RankUsage>> rank_usage;  // index = world rank; empty: no samples
  int sample_interval_ms = 0;       // 0: the trace has no sample files
  int64_t sampler_cpu_ns = 0;       // the samplers' own CPU time, summed over ranks
};

// `samples` is indexed by world rank (missing entries or nullopt: that rank has none).
Timeline build_timeline(const trace::TraceSet& trace,
                        const std::vector<std::optional<trace::SampleSeries>>& samples);

// build_timeline() a rank at a time: add ranks in rank order with their samples, then finish()
// once with the trace's meta.json. A lane keeps a rank's calls (40 bytes each), not its records,
// so a caller reading the trace a rank at a time (read_trace_dir's visitor) can free each
// rank's records once added. Times are kept on each rank's own clock until finish() knows the
// earliest rank's start and puts every rank on the shared axis.
class TimelineBuilder {
 public:
  void add_rank(const trace::RankTrace& rank, const trace::SampleSeries* samples);
  Timeline finish(const nlohmann::json& meta);

 private:
  Timeline t_;
  std::vector<int64_t> base_;                    // per rank: header.base_realtime_ns
  std::vector<int> node_usage_rank_;             // per node: the rank its usage came from
  std::map<std::string, int> node_of_host_;
};

// Rates between consecutive samples of one rank (pure; exposed for the tests).
std::vector<RankUsage> rank_usage_of(const trace::SampleSeries& series, int64_t offset_ns);
std::vector<NodeUsage> node_usage_of(const trace::SampleSeries& series, int64_t offset_ns);

// Calls summed over lanes.
uint64_t call_count(const Timeline& timeline);

}  // namespace pskel::timeline

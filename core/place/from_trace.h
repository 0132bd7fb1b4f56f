// The placement's input taken from a trace: each rank's compute (the gaps between its MPI
// calls) and the bytes of the point-to-point messages each rank sent to each other rank.
// Collectives are not counted (docs/place.md says why). Pure function; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "place/place.h"
#include "trace/reader.h"
#include "util/result.h"

namespace pskel::place {

struct TraceWorkload {
  Workload workload;              // flows: one per (sender, receiver) pair, bytes summed
  uint64_t messages = 0;          // point-to-point messages counted (self-sends included)
  double message_bytes = 0;       // their bytes
  uint64_t collective_calls = 0;  // collective calls seen and left out, over all ranks
};

// Fails (Error naming the rank file) on a send to a rank outside the trace or a negative
// message size: field values the reader does not check.
Result<TraceWorkload> workload_from_trace(const trace::TraceSet& trace);

// workload_from_trace() over the ranks handed one at a time, in rank order, so that the trace
// need not be held whole: nothing of a rank's records is kept.
class WorkloadBuilder {
 public:
  // `dir` names the rank files of ranks without a source in errors.
  WorkloadBuilder(int world_size, std::string dir);
  void add(const trace::RankTrace& rank);
  // workload_from_trace()'s errors, for the first rank that has one. Called once.
  Result<TraceWorkload> finish();

 private:
  int32_t ranks_;
  std::string dir_;
  int32_t next_rank_ = 0;
  TraceWorkload out_;
  std::map<std::pair<Rank, Rank>, double> pair_bytes_;
  std::string problem_file_, problem_;
};

}  // namespace pskel::place

// Reads the placement's costs off a trace (docs/place.md, "What is measured").
#include "place/from_trace.h"

#include <fmt/format.h>

#include <map>
#include <unordered_map>
#include <vector>

#include "trace/functions.h"
#include "trace/gaps.h"

namespace pskel::place {
namespace {

using trace::FunctionId;
using trace::FunctionKind;

// The rank's compute (trace::compute_gaps) from the end of MPI_Init to the start of
// MPI_Finalize: the gap before the first call is start-up, not the program's work.
double compute_seconds(const trace::RankTrace& rank) {
  const std::vector<int64_t> gaps = trace::compute_gaps(rank);
  int64_t total_ns = 0;
  bool started = false;
  for (size_t i = 0; i < rank.records.size(); ++i) {
    const trace::FunctionInfo* info = trace::find_function(rank.records[i].function);
    if (info == nullptr || info->kind == FunctionKind::meta) continue;
    if (started) total_ns += gaps[i];
    started = true;
  }
  return static_cast<double>(total_ns) * 1e-9;
}

struct Message {
  int32_t peer;
  double bytes;
};

}  // namespace

WorkloadBuilder::WorkloadBuilder(int world_size, std::string dir)
    : ranks_(world_size), dir_(std::move(dir)) {}

void WorkloadBuilder::add(const trace::RankTrace& rt) {
  const int32_t rank = next_rank_++;
  if (!problem_.empty()) return;
  const std::string file =
      rt.source.empty() ? fmt::format("{}/rank.{}.pskt", dir_, rank) : rt.source;
  out_.workload.compute_seconds.push_back(compute_seconds(rt));

  // Persistent sends: the message is described once, at Send_init, and sent at each start.
  std::unordered_map<uint32_t, Message> persistent;
  const auto add = [&](size_t index, int32_t peer, double bytes) -> std::string {
    if (peer < 0) return {};  // MPI_PROC_NULL, or a rank outside MPI_COMM_WORLD
    if (peer >= ranks_)
      return fmt::format("record {} sends to rank {}, but the trace has {} ranks", index, peer,
                         ranks_);
    if (bytes < 0) return fmt::format("record {} sends a message of {} bytes", index, bytes);
    ++out_.messages;
    out_.message_bytes += bytes;
    if (peer != rank) pair_bytes_[{rank, peer}] += bytes;
    return {};
  };
  for (size_t k = 0; k < rt.records.size(); ++k) {
    const trace::Record& r = rt.records[k];
    const trace::FunctionInfo* info = trace::find_function(r.function);
    if (info == nullptr) continue;
    const double bytes = static_cast<double>(r.count) * r.type_size;
    std::string problem;
    if (info->sends && info->kind == FunctionKind::p2p) {  // Send_init sends at its Starts
      problem = add(k, r.peer, bytes);
    } else if (static_cast<FunctionId>(r.function) == FunctionId::MPI_Send_init) {
      if (r.request != 0) persistent[r.request] = {r.peer, bytes};
    } else if (info->kind == FunctionKind::start) {
      for (int64_t id : rt.aux_of(k)) {
        auto it = persistent.find(static_cast<uint32_t>(id));
        if (it != persistent.end() && problem.empty())
          problem = add(k, it->second.peer, it->second.bytes);
      }
    } else if (info->kind == FunctionKind::collective ||
               info->kind == FunctionKind::icollective) {
      ++out_.collective_calls;
    }
    if (!problem.empty()) {
      problem_file_ = file;
      problem_ = std::move(problem);
      return;
    }
  }
}

Result<TraceWorkload> WorkloadBuilder::finish() {
  if (!problem_.empty()) return Error{problem_file_, problem_};
  for (const auto& [pair, bytes] : pair_bytes_)
    out_.workload.flows.push_back({pair.first, pair.second, bytes});
  return std::move(out_);
}

Result<TraceWorkload> workload_from_trace(const trace::TraceSet& trace) {
  WorkloadBuilder builder(static_cast<int>(trace.ranks.size()), trace.dir);
  for (const trace::RankTrace& rank : trace.ranks) builder.add(rank);
  return builder.finish();
}

}  // namespace pskel::place

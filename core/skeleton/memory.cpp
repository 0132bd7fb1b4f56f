// The memory-bound part of each rank's compute; see model.h (plan_memory) and docs/skeleton.md.
#include <algorithm>

#include "skeleton/model.h"
#include "trace/format.h"

namespace pskel::skeleton::detail {

namespace {

// Compute (typical gaps and inner loops' entry gaps) of `rank` in one execution of `items`.
double compute_ns(const std::vector<lt::Item>& items, int32_t rank) {
  double ns = 0;
  for (const lt::Item& item : items) {
    if (item.is_loop()) {
      if (const lt::RankLoop* r = item.loop().timing_of(rank)) ns += r->entry_gap_ns.sum();
      ns += compute_ns(item.loop().body, rank);
      continue;
    }
    if (const lt::RankCall* call = item.event().call_of(rank))
      ns += call->gap_typical.mean * static_cast<double>(call->gap_ns.n);
  }
  return ns;
}

bool valid_ns_per_byte(double ns) { return ns > 1e-4 && ns < 1e3; }

}  // namespace

bool MemoryPlan::any() const {
  return std::any_of(share.begin(), share.end(), [](double s) { return s > 0; });
}

MemoryPlan plan_memory(const tr::TraceSet& trace, const lt::LoopTree& tree, const Analysis& a) {
  const auto ranks = static_cast<size_t>(a.world_size);
  MemoryPlan plan;
  plan.footprint_bytes.assign(ranks, -1);
  plan.ns_per_byte.assign(ranks, 0);
  plan.share.assign(ranks, 0);
  plan.working_set_bytes.assign(ranks, 0);
  plan.stream_reads_only = trace.meta.is_object() &&
                           trace.meta.value("stream_kind", trace::kStreamReadWrite) == trace::kStreamRead;
  const lt::MainLoop main = lt::main_loop(tree);
  for (size_t r = 0; r < ranks && r < trace.ranks.size(); ++r) {
    plan.footprint_bytes[r] = trace.ranks[r].footprint_bytes;
    // The run's own memory probes where there were enough; else the MPI_Finalize measurement,
    // one moment that on a VM can be half again off the run (docs/skeleton.md).
    const double in_run = meta_calibration(trace, "stream_ns_per_byte_in_run", r);
    const double at_finalize = meta_calibration(trace, "stream_ns_per_byte", r);
    if (valid_ns_per_byte(in_run))
      plan.ns_per_byte[r] = in_run;
    else if (valid_ns_per_byte(at_finalize))
      plan.ns_per_byte[r] = at_finalize;
    if (plan.footprint_bytes[r] < kMinFootprintBytes || plan.ns_per_byte[r] == 0) continue;
    // Compute per iteration of the main loop, or of the whole run without one. The body's sums
    // cover every iteration of every execution.
    double per_iteration = compute_ns(tree.items, static_cast<int32_t>(r));
    if (main.loop != nullptr) {
      const double passes = static_cast<double>(main.loop->iterations * main.loop->executions);
      per_iteration = compute_ns(main.loop->body, static_cast<int32_t>(r)) / std::max(1.0, passes);
    }
    if (per_iteration <= 0) continue;
    const double ws = std::min(static_cast<double>(plan.footprint_bytes[r]), kMaxWorkingSetBytes);
    plan.working_set_bytes[r] = ws;
    plan.share[r] = std::min(kMaxMemoryShare, ws * plan.ns_per_byte[r] / per_iteration);
  }
  return plan;
}

}  // namespace pskel::skeleton::detail

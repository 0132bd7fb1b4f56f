#include "timeline/timeline.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace pskel::timeline {
namespace {

using trace::FunctionId;
using trace::FunctionKind;

int32_t first_rank(std::initializer_list<int32_t> ranks) {
  for (const int32_t r : ranks)
    if (r != trace::kNoRank) return r;
  return trace::kNoRank;
}

// The peer and tag of a completion: those of the first receive it completed (§4.5).
void completion_peer(std::span<const int64_t> aux, Call& call) {
  for (size_t at = 0; at + trace::kCompletionWords <= aux.size(); at += trace::kCompletionWords) {
    if (aux[at + 1] >= 0) {
      call.peer = static_cast<int32_t>(aux[at + 1]);
      call.tag = static_cast<int32_t>(aux[at + 2]);
      return;
    }
  }
}

Lane lane_of(const trace::RankTrace& rank, int64_t offset_ns) {
  Lane lane;
  lane.rank = rank.header.rank;
  lane.begin_ns = offset_ns;
  lane.calls.reserve(rank.records.size());
  for (size_t i = 0; i < rank.records.size(); ++i) {
    const trace::Record& r = rank.records[i];
    const trace::FunctionInfo* info = trace::find_function(r.function);
    if (info == nullptr || info->kind == FunctionKind::meta) continue;  // not a call
    Call call;
    // MPI_Init starts long before t = 0 (§4.2): the view begins at t = 0.
    const int64_t start = std::max<int64_t>(r.t_start, 0);
    call.start_ns = start + offset_ns;
    call.end_ns = std::max(r.t_end, start) + offset_ns;
    call.function = r.function;
    call.state = state_of(info->id);
    call.peer = first_rank({r.peer, r.source, r.root});
    call.tag = r.tag != trace::kNoTag ? r.tag : r.recv_tag;
    call.bytes = r.bytes;
    if (info->kind == FunctionKind::completion) completion_peer(rank.aux_of(i), call);
    lane.calls.push_back(call);
  }
  // Call order is time order (§4.9, with pseudo-records gone); sorting guards hand-made files.
  std::stable_sort(lane.calls.begin(), lane.calls.end(),
                   [](const Call& a, const Call& b) { return a.start_ns < b.start_ns; });
  lane.end_ns = rank.complete ? rank.end.end_ns + offset_ns
                              : (lane.calls.empty() ? offset_ns : lane.calls.back().end_ns);
  if (!lane.calls.empty()) lane.end_ns = std::max(lane.end_ns, lane.calls.back().end_ns);
  return lane;
}

}  // namespace

std::string_view state_name(State state) {
  switch (state) {
    case State::computing: return "computing";
    case State::point_to_point: return "point-to-point";
    case State::collective: return "collective";
    case State::waiting: return "waiting";
    case State::setup: return "setup";
  }
  return "setup";
}

State state_of(FunctionId function) {
  switch (function) {
    case FunctionId::MPI_Wait:
    case FunctionId::MPI_Waitall:
    case FunctionId::MPI_Waitany:
    case FunctionId::MPI_Waitsome:
    case FunctionId::MPI_Recv:
    case FunctionId::MPI_Probe:
    case FunctionId::MPI_Barrier:
      return State::waiting;
    default:
      break;
  }
  const trace::FunctionInfo* info = trace::find_function(static_cast<uint16_t>(function));
  if (info == nullptr) return State::setup;
  switch (info->kind) {
    case FunctionKind::p2p:
    case FunctionKind::p2p_init:
    case FunctionKind::start:
    case FunctionKind::completion:
    case FunctionKind::probe:
    case FunctionKind::request:
      return State::point_to_point;
    case FunctionKind::collective:
    case FunctionKind::icollective:
      return State::collective;
    case FunctionKind::env:
    case FunctionKind::comm:
    case FunctionKind::meta:
      return State::setup;
  }
  return State::setup;
}

std::vector<RankUsage> rank_usage_of(const trace::SampleSeries& series, int64_t offset_ns) {
  std::vector<RankUsage> out;
  out.reserve(series.samples.size());
  const trace::ResourceSample* previous = nullptr;
  for (const trace::ResourceSample& s : series.samples) {
    RankUsage u;
    u.t_ns = s.t_ns + offset_ns;
    u.rss_bytes = s.rss_bytes;
    if (previous != nullptr && s.t_ns > previous->t_ns && s.process_cpu_ns >= 0 &&
        previous->process_cpu_ns >= 0 && s.process_cpu_ns >= previous->process_cpu_ns) {
      u.cpu = static_cast<double>(s.process_cpu_ns - previous->process_cpu_ns) /
              static_cast<double>(s.t_ns - previous->t_ns);
    }
    out.push_back(u);
    previous = &s;
  }
  return out;
}

std::vector<NodeUsage> node_usage_of(const trace::SampleSeries& series, int64_t offset_ns) {
  std::vector<NodeUsage> out;
  out.reserve(series.samples.size());
  const trace::ResourceSample* previous = nullptr;
  for (const trace::ResourceSample& s : series.samples) {
    NodeUsage u;
    u.t_ns = s.t_ns + offset_ns;
    u.mem_used_bytes = s.node_mem_used_bytes;
    u.mem_total_bytes = s.node_mem_total_bytes;
    if (previous != nullptr && s.node_total_ticks >= 0 && previous->node_total_ticks >= 0 &&
        s.node_busy_ticks >= previous->node_busy_ticks && previous->node_busy_ticks >= 0 &&
        s.node_total_ticks > previous->node_total_ticks) {
      const double busy = static_cast<double>(s.node_busy_ticks - previous->node_busy_ticks);
      const double total = static_cast<double>(s.node_total_ticks - previous->node_total_ticks);
      u.cpu_busy = std::min(1.0, busy / total);
    }
    out.push_back(u);
    previous = &s;
  }
  return out;
}

void TimelineBuilder::add_rank(const trace::RankTrace& rank, const trace::SampleSeries* samples) {
  const auto r = t_.lanes.size();
  Lane lane = lane_of(rank, 0);
  base_.push_back(rank.header.base_realtime_ns);
  const std::string host = trace::host_name(rank.header);
  auto [it, added] = node_of_host_.try_emplace(host, static_cast<int>(t_.nodes.size()));
  if (added) {
    t_.nodes.push_back(Node{host, {}, {}});
    node_usage_rank_.push_back(-1);
  }
  Node& node = t_.nodes[static_cast<size_t>(it->second)];
  lane.node = it->second;
  node.ranks.push_back(static_cast<int>(r));
  t_.rank_usage.emplace_back();
  if (samples != nullptr) {
    t_.rank_usage[r] = rank_usage_of(*samples, 0);
    if (node.usage.empty()) {
      node.usage = node_usage_of(*samples, 0);
      node_usage_rank_[static_cast<size_t>(lane.node)] = static_cast<int>(r);
    }
    if (t_.sample_interval_ms == 0) t_.sample_interval_ms = samples->interval_ms;
    if (samples->sampler_cpu_ns > 0) t_.sampler_cpu_ns += samples->sampler_cpu_ns;
  }
  t_.lanes.push_back(std::move(lane));
}

Timeline TimelineBuilder::finish(const nlohmann::json& meta) {
  Timeline t = std::move(t_);
  t.program = meta.value("executable", "");
  t.mpi = meta.value("mpi", "");
  const int64_t base = base_.empty() ? 0 : *std::min_element(base_.begin(), base_.end());
  const auto offset_of = [&](size_t r) { return base_[r] - base; };
  for (size_t r = 0; r < t.lanes.size(); ++r) {
    const int64_t offset = offset_of(r);
    Lane& lane = t.lanes[r];
    lane.begin_ns += offset;
    lane.end_ns += offset;
    for (Call& call : lane.calls) {
      call.start_ns += offset;
      call.end_ns += offset;
    }
    for (RankUsage& u : t.rank_usage[r]) u.t_ns += offset;
    t.end_ns = std::max(t.end_ns, lane.end_ns);
  }
  for (size_t n = 0; n < t.nodes.size(); ++n)
    if (node_usage_rank_[n] >= 0)
      for (NodeUsage& u : t.nodes[n].usage) u.t_ns += offset_of(static_cast<size_t>(node_usage_rank_[n]));
  return t;
}

Timeline build_timeline(const trace::TraceSet& trace,
                        const std::vector<std::optional<trace::SampleSeries>>& samples) {
  TimelineBuilder builder;
  for (size_t r = 0; r < trace.ranks.size(); ++r)
    builder.add_rank(trace.ranks[r], r < samples.size() && samples[r] ? &*samples[r] : nullptr);
  return builder.finish(trace.meta);
}

uint64_t call_count(const Timeline& timeline) {
  uint64_t n = 0;
  for (const Lane& lane : timeline.lanes) n += lane.calls.size();
  return n;
}

}  // namespace pskel::timeline

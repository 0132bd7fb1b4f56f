// Which loops the skeleton scales, and by how much (seed 000 §4: the loops that carry the run
// shrink by K; compute outside them is scaled by 1/K). See model.h.
#include <algorithm>
#include <cmath>

#include "skeleton/model.h"

namespace pskel::skeleton::detail {

namespace {

double item_ns(const lt::Item& item, int32_t rank) {
  if (!item.is_loop()) {
    // MPI_Init's duration is the library's start (and the tracer's): not part of the run the
    // skeleton replays between its own MPI_Init and MPI_Finalize.
    const auto fn = static_cast<tr::FunctionId>(item.event().function);
    if (fn == tr::FunctionId::MPI_Init || fn == tr::FunctionId::MPI_Init_thread) return 0;
    for (const lt::RankCall& call : item.event().ranks)
      if (call.rank == rank) return call.gap_ns.sum() + call.comm_ns.sum();
    return 0;
  }
  double ns = 0;
  for (const lt::RankLoop& r : item.loop().ranks)
    if (r.rank == rank) ns += r.entry_gap_ns.sum();
  return ns + items_ns(item.loop().body, rank);
}

// Time of a loop on its slowest rank, all its executions together (Stat sums cover every
// instance).
double loop_ns(const lt::Loop& loop) {
  double worst = 0;
  for (const lt::RankLoop& r : loop.ranks) {
    double ns = r.entry_gap_ns.sum();
    ns += items_ns(loop.body, r.rank);
    worst = std::max(worst, ns);
  }
  return worst;
}

// Whether every iteration of the loop leaves state later calls need: it makes or frees
// communicators or persistent requests. Running fewer iterations would lose them.
bool makes_state(const std::vector<lt::Item>& items) {
  for (const lt::Item& item : items) {
    if (item.is_loop()) {
      if (makes_state(item.loop().body)) return true;
      continue;
    }
    const tr::FunctionInfo* f = tr::find_function(item.event().function);
    if (f == nullptr) continue;
    if (f->kind == tr::FunctionKind::comm || f->kind == tr::FunctionKind::p2p_init ||
        f->kind == tr::FunctionKind::request)
      return true;
  }
  return false;
}

// The loops inside `loop` (itself included) to scale by `k`: the loop itself if it has at least
// k iterations; otherwise inner loops that do, if they carry at least half of its time;
// otherwise the loop itself (it then runs once). Loops that make state are not scaled (their
// inner loops may be).
void candidates(const lt::Loop& loop, int64_t k, std::vector<const lt::Loop*>& out) {
  const bool state = makes_state(loop.body);
  if (state) {
    for (const lt::Item& item : loop.body)
      if (item.is_loop()) candidates(item.loop(), k, out);
    return;
  }
  if (loop.iterations >= static_cast<uint64_t>(k)) {
    out.push_back(&loop);
    return;
  }
  std::vector<const lt::Loop*> inner;
  for (const lt::Item& item : loop.body)
    if (item.is_loop()) candidates(item.loop(), k, inner);
  double inner_ns = 0;
  for (const lt::Loop* l : inner) inner_ns += loop_ns(*l);
  if (!inner.empty() && inner_ns >= 0.5 * loop_ns(loop)) {
    out.insert(out.end(), inner.begin(), inner.end());
  } else {
    out.push_back(&loop);
  }
}

bool contains(const lt::Loop& loop, const lt::Loop* inner) {
  if (&loop == inner) return true;
  for (const lt::Item& item : loop.body)
    if (item.is_loop() && contains(item.loop(), inner)) return true;
  return false;
}

std::vector<const lt::Loop*> choose(const lt::LoopTree& tree, int64_t k, double total_ns) {
  std::vector<const lt::Loop*> chosen;
  if (k <= 1) return chosen;
  const lt::Loop* main = lt::main_loop(tree).loop;
  for (const lt::Item& item : tree.items) {
    if (!item.is_loop()) continue;
    // Loops that carry less than 1 % of the run (a few setup calls) run in full; the main
    // loop (the most calls) is always scaled.
    if (loop_ns(item.loop()) < 0.01 * total_ns && !contains(item.loop(), main)) continue;
    candidates(item.loop(), k, chosen);
  }
  return chosen;
}

}  // namespace

double items_ns(const std::vector<lt::Item>& items, int32_t rank) {
  double ns = 0;
  for (const lt::Item& item : items) ns += item_ns(item, rank);
  return ns;
}

const ScaledLoop* Scaling::find(const lt::Loop* loop) const {
  for (const ScaledLoop& s : loops)
    if (s.loop == loop) return &s;
  return nullptr;
}

Scaling choose_scaling(const lt::LoopTree& tree, int64_t scale, bool auto_scale,
                       double target_fraction, double min_seconds) {
  Scaling out;
  double total_ns = 0;
  for (int32_t r = 0; r < tree.world_size; ++r)
    total_ns = std::max(total_ns, items_ns(tree.items, r));
  out.traced_seconds = total_ns * 1e-9;

  auto scaled_ns = [&](const std::vector<const lt::Loop*>& loops) {
    double ns = 0;
    for (const lt::Loop* l : loops) ns += loop_ns(*l);
    return ns;
  };

  int64_t k = std::max<int64_t>(1, scale);
  if (auto_scale) {
    // K such that scaled/K + the rest is about the target; the rest does not shrink.
    const double target_ns = std::max(target_fraction * total_ns, min_seconds * 1e9);
    k = 1;
    const lt::MainLoop main = lt::main_loop(tree);
    if (total_ns > target_ns && main.loop != nullptr) {
      const double s = scaled_ns(choose(tree, 10, total_ns));
      const double rest = total_ns - s;
      const double room = target_ns - rest;
      const double want = room > 0 ? s / room : static_cast<double>(main.loop->iterations);
      k = static_cast<int64_t>(std::floor(want));
      k = std::clamp<int64_t>(k, 1, static_cast<int64_t>(main.loop->iterations));
    }
  }
  out.scale = k;
  for (const lt::Loop* loop : choose(tree, k, total_ns)) {
    ScaledLoop s;
    s.loop = loop;
    s.run = std::max<uint64_t>(1, loop->iterations / static_cast<uint64_t>(k));
    s.factor = static_cast<double>(loop->iterations) / static_cast<double>(s.run);
    s.seconds = loop_ns(*loop) * 1e-9;
    out.loops.push_back(s);
  }
  double in_loops = 0;
  for (const ScaledLoop& s : out.loops) in_loops += s.seconds;
  out.scaled_seconds = in_loops;
  out.estimated_skeleton_seconds =
      k > 1 ? in_loops / static_cast<double>(k) + (out.traced_seconds - in_loops) : out.traced_seconds;
  return out;
}

}  // namespace pskel::skeleton::detail

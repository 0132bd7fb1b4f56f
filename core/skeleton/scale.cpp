// Which loops the skeleton scales, and by how much (seed 000 §4: the loops that carry the run
// shrink by K; compute outside them is scaled by 1/K). See model.h and docs/skeleton.md.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "skeleton/model.h"

namespace pskel::skeleton::detail {

namespace {

using tr::FunctionId;

enum class Part { all, compute };  // calls and gaps, or the gaps (compute) alone

double part_ns(const std::vector<lt::Item>& items, int32_t rank, Part part);

double item_ns(const lt::Item& item, int32_t rank, Part part) {
  if (!item.is_loop()) {
    // MPI_Init's duration is the library's start (and the tracer's): not part of the run the
    // skeleton replays between its own MPI_Init and MPI_Finalize.
    const auto fn = static_cast<tr::FunctionId>(item.event().function);
    if (fn == tr::FunctionId::MPI_Init || fn == tr::FunctionId::MPI_Init_thread) return 0;
    const lt::RankCall* call = item.event().call_of(rank);
    if (!call) return 0;
    return call->gap_ns.sum() + (part == Part::all ? call->comm_ns.sum() : 0);
  }
  const lt::RankLoop* r = item.loop().timing_of(rank);
  return (r ? r->entry_gap_ns.sum() : 0) + part_ns(item.loop().body, rank, part);
}

double part_ns(const std::vector<lt::Item>& items, int32_t rank, Part part) {
  double ns = 0;
  for (const lt::Item& item : items) ns += item_ns(item, rank, part);
  return ns;
}

// Time of a loop on its slowest rank (or its compute on the rank with the most), all its
// executions together (Stat sums cover every instance).
double loop_ns(const lt::Loop& loop, Part part = Part::all) {
  double worst = 0;
  for (const lt::RankLoop& r : loop.ranks)
    worst = std::max(worst, r.entry_gap_ns.sum() + part_ns(loop.body, r.rank, part));
  return worst;
}

bool contains(const lt::Loop& loop, const lt::Loop* inner) {
  if (&loop == inner) return true;
  for (const lt::Item& item : loop.body)
    if (item.is_loop() && contains(item.loop(), inner)) return true;
  return false;
}

class Chooser {
 public:
  Chooser(const lt::LoopTree& tree, const Analysis& a) : tree_(tree), a_(a) {}

  std::vector<const lt::Loop*> choose(int64_t k, double total_ns) {
    std::vector<const lt::Loop*> chosen;
    if (k <= 1) return chosen;
    main_ = lt::main_loop(tree_).loop;
    for (const lt::Item& item : tree_.items) {
      if (!item.is_loop()) continue;
      // Loops that carry less than 1 % of the run (a few setup calls) run in full; the main
      // loop (the most calls) is always scaled if it can be.
      if (loop_ns(item.loop()) < 0.01 * total_ns && !contains(item.loop(), main_)) continue;
      candidates(item.loop(), k, chosen);
    }
    return chosen;
  }

  // Whether every iteration of the loop leaves state later calls need: it makes or frees
  // communicators or persistent requests. Running fewer iterations would lose them.
  static bool makes_state(const std::vector<lt::Item>& items) {
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

 private:
  // The loops inside `loop` (itself included) to scale by `k`: the loop itself if it has at
  // least kMinRunIterations x k iterations and every iteration is self-contained (balanced:
  // each message sent in an iteration is received in it, each collective reached by all
  // members); otherwise inner loops that are; the main loop itself (scaled by work, as it has
  // too few iterations) if no inner loop qualifies. Loops that make state are not scaled
  // (their inner loops may be).
  void candidates(const lt::Loop& loop, int64_t k, std::vector<const lt::Loop*>& out) {
    const bool scalable = !makes_state(loop.body) && balanced(loop);
    if (scalable && loop.iterations >= kMinRunIterations * static_cast<uint64_t>(k)) {
      out.push_back(&loop);
      return;
    }
    std::vector<const lt::Loop*> inner;
    for (const lt::Item& item : loop.body)
      if (item.is_loop()) candidates(item.loop(), k, inner);
    double inner_ns = 0;
    for (const lt::Loop* l : inner) inner_ns += loop_ns(*l);
    if (scalable && &loop == main_ && (inner.empty() || inner_ns < 0.5 * loop_ns(loop))) {
      out.push_back(&loop);
      return;
    }
    out.insert(out.end(), inner.begin(), inner.end());
  }

  // Message and collective counts of one iteration of the body.
  struct Counts {
    std::map<std::tuple<int, int32_t, int32_t>, int64_t> sends, recvs;  // (comm, from, to)
    std::map<std::pair<int, int32_t>, int64_t> collectives;             // (comm, rank)
    std::map<std::pair<int, int32_t>, int64_t> replies;                 // (comm, from)
  };

  void count(const std::vector<lt::Item>& items, int64_t times, Counts& c) const {
    for (const lt::Item& item : items) {
      if (item.is_loop()) {
        count(item.loop().body, times * static_cast<int64_t>(item.loop().iterations), c);
        continue;
      }
      const EventInfo& info = a_.events[item.event().id];
      if (!info.skip.empty()) continue;
      for (size_t j = 0; j < info.event->ranks.size(); ++j) {
        const lt::RankCall& call = info.event->ranks[j];
        const int comm = info.comm[j];
        auto send = [&](int32_t to, int cm) {
          if (to >= 0) c.sends[{cm, call.rank, to}] += times;
          if (to == lt::kLastWildcardSource) c.replies[{cm, call.rank}] += times;
        };
        auto recv = [&](int32_t from, int cm) {
          if (from >= 0 || from == tr::kAnySource) c.recvs[{cm, from, call.rank}] += times;
        };
        switch (info.fn) {
          case FunctionId::MPI_Send:
          case FunctionId::MPI_Ssend:
          case FunctionId::MPI_Rsend:
          case FunctionId::MPI_Bsend:
          case FunctionId::MPI_Isend:
          case FunctionId::MPI_Issend: send(call.peer, comm); break;
          case FunctionId::MPI_Recv:
          case FunctionId::MPI_Irecv: recv(call.source, comm); break;
          case FunctionId::MPI_Sendrecv:
          case FunctionId::MPI_Sendrecv_replace:
            send(call.peer, comm);
            recv(call.source, comm);
            break;
          case FunctionId::MPI_Start:
          case FunctionId::MPI_Startall:
            for (uint32_t init : info.starts[j]) {
              const EventInfo& in = a_.events[init];
              for (size_t x = 0; x < in.event->ranks.size(); ++x) {
                const lt::RankCall& ic = in.event->ranks[x];
                if (ic.rank != call.rank) continue;
                if (in.fn == FunctionId::MPI_Send_init) send(ic.peer, in.comm[x]);
                else recv(ic.source, in.comm[x]);
              }
            }
            break;
          default:
            if (info.kind == tr::FunctionKind::collective || info.kind == tr::FunctionKind::icollective)
              c.collectives[{comm, call.rank}] += times;
            break;
        }
      }
    }
  }

  // A reply goes to whoever came first: it balances a receive from its sender that no send of
  // the iteration does. Adds the replies to `c.sends` that way; false if some are left over.
  static bool place_replies(Counts& c) {
    for (auto& [key, replies] : c.replies) {
      const auto [comm, from] = key;
      for (const auto& [recv, n] : c.recvs) {
        if (std::get<0>(recv) != comm || std::get<1>(recv) != from || replies == 0) continue;
        int64_t& sent = c.sends[recv];
        const int64_t placed = std::clamp<int64_t>(n - sent, 0, replies);
        sent += placed;
        replies -= placed;
      }
      if (replies != 0) return false;
    }
    return true;
  }

  bool balanced(const lt::Loop& loop) {
    const auto known = balanced_.find(&loop);
    if (known != balanced_.end()) return known->second;
    Counts c;
    count(loop.body, 1, c);
    bool ok = place_replies(c);
    // Per destination: as many messages arrive as are received; per source too, unless the
    // destination receives from any source.
    std::map<std::pair<int, int32_t>, int64_t> net;
    std::set<std::pair<int, int32_t>> wildcard;
    for (const auto& [key, n] : c.sends) net[{std::get<0>(key), std::get<2>(key)}] += n;
    for (const auto& [key, n] : c.recvs) {
      net[{std::get<0>(key), std::get<2>(key)}] -= n;
      if (std::get<1>(key) == tr::kAnySource) wildcard.insert({std::get<0>(key), std::get<2>(key)});
    }
    for (const auto& [key, n] : net) ok = ok && n == 0;
    auto same = [&](const auto& key) {
      if (std::get<1>(key) == tr::kAnySource || wildcard.count({std::get<0>(key), std::get<2>(key)}) != 0)
        return true;
      const auto s = c.sends.find(key);
      const auto r = c.recvs.find(key);
      return (s == c.sends.end() ? 0 : s->second) == (r == c.recvs.end() ? 0 : r->second);
    };
    for (const auto& [key, n] : c.sends) ok = ok && same(key);
    for (const auto& [key, n] : c.recvs) ok = ok && same(key);
    // Collectives: every member of the communicator the same number of times (each
    // communicator's members checked once: per entry would be quadratic in its size).
    std::map<int, int64_t> per_comm;
    for (const auto& [key, n] : c.collectives) {
      const auto [it, fresh] = per_comm.try_emplace(key.first, n);
      if (!fresh && it->second != n) ok = false;
    }
    for (const auto& [comm, n] : per_comm) {
      if (comm >= 2 && static_cast<size_t>(comm) < a_.comms.size()) {
        for (int32_t m : a_.comms[static_cast<size_t>(comm)].members)
          if (c.collectives.count({comm, m}) == 0) ok = false;
      } else if (comm == 0) {
        for (int32_t m = 0; m < a_.world_size; ++m)
          if (c.collectives.count({comm, m}) == 0) ok = false;
      }
    }
    balanced_[&loop] = ok;
    return ok;
  }

  const lt::LoopTree& tree_;
  const Analysis& a_;
  const lt::Loop* main_ = nullptr;
  std::map<const lt::Loop*, bool> balanced_;
};

}  // namespace

double items_ns(const std::vector<lt::Item>& items, int32_t rank) {
  return part_ns(items, rank, Part::all);
}

const ScaledLoop* Scaling::find(const lt::Loop* loop) const {
  for (const ScaledLoop& s : loops)
    if (s.loop == loop) return &s;
  return nullptr;
}

Scaling choose_scaling(const lt::LoopTree& tree, const Analysis& analysis, int64_t scale,
                       bool auto_scale, double target_fraction, double min_seconds) {
  Scaling out;
  double total_ns = 0;
  for (int32_t r = 0; r < tree.world_size; ++r)
    total_ns = std::max(total_ns, items_ns(tree.items, r));
  out.traced_seconds = total_ns * 1e-9;
  Chooser chooser(tree, analysis);

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
      const double s = scaled_ns(chooser.choose(10, total_ns));
      const double rest = total_ns - s;
      const double room = target_ns - rest;
      const double want = room > 0 ? s / room : static_cast<double>(main.loop->iterations);
      k = static_cast<int64_t>(std::floor(want));
      k = std::clamp<int64_t>(k, 1, static_cast<int64_t>(main.loop->iterations));
    }
  }
  out.scale = k;
  for (const lt::Loop* loop : chooser.choose(k, total_ns)) {
    ScaledLoop s;
    s.loop = loop;
    s.seconds = loop_ns(*loop) * 1e-9;
    s.run = loop->iterations / static_cast<uint64_t>(k);
    if (s.run < kMinRunIterations) {
      s.by_work = true;
      s.run = loop->iterations;
      s.factor = static_cast<double>(k);
    } else {
      s.factor = static_cast<double>(loop->iterations) / static_cast<double>(s.run);
    }
    out.loops.push_back(s);
  }
  double in_loops = 0;
  for (const ScaledLoop& s : out.loops) in_loops += s.seconds;
  out.scaled_seconds = in_loops;
  double estimate = out.traced_seconds;
  for (const ScaledLoop& s : out.loops) {
    const double shrinks = s.by_work ? loop_ns(*s.loop, Part::compute) * 1e-9 : s.seconds;
    estimate -= shrinks * (1.0 - 1.0 / s.factor);
  }
  out.estimated_skeleton_seconds = estimate;
  return out;
}

}  // namespace pskel::skeleton::detail

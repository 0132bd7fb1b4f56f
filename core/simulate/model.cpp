// The communication model: a line T0 + m·slope per call family, fitted to the trace's own calls
// that did not wait (simulate.h, fit_line / fit_model / apply_what_if).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "simulate/simulate.h"
#include "trace/functions.h"

namespace pskel::simulate {
namespace {

namespace tr = pskel::trace;
using Fn = tr::FunctionId;

struct Point {
  double bytes, ns, weight;
};

// Least squares of the line through weighted points (fit_line).
Fit fit_points(const std::vector<Point>& points, uint64_t samples, double fallback_ns_per_byte) {
  Fit fit;
  fit.samples = samples;
  if (samples == 0) return fit;
  fit.fitted = true;
  fit.buckets = points.size();
  double w = 0, mx = 0, my = 0;
  for (const Point& p : points) {
    w += p.weight;
    mx += p.weight * p.bytes;
    my += p.weight * p.ns;
  }
  mx /= w;
  my /= w;
  double sxx = 0, sxy = 0, syy = 0;
  for (const Point& p : points) {
    sxx += p.weight * (p.bytes - mx) * (p.bytes - mx);
    sxy += p.weight * (p.bytes - mx) * (p.ns - my);
    syy += p.weight * (p.ns - my) * (p.ns - my);
  }
  if (points.size() < 2 || sxx <= 0) {
    fit.ns_per_byte = std::max(0.0, fallback_ns_per_byte);
    fit.t0_ns = std::max(0.0, my - fit.ns_per_byte * mx);
  } else {
    fit.ns_per_byte = std::max(0.0, sxy / sxx);
    fit.t0_ns = my - fit.ns_per_byte * mx;
    if (fit.t0_ns < 0) {   // through the origin instead
      double sxy0 = 0, sxx0 = 0;
      for (const Point& p : points) {
        sxy0 += p.weight * p.bytes * p.ns;
        sxx0 += p.weight * p.bytes * p.bytes;
      }
      fit.t0_ns = 0;
      fit.ns_per_byte = sxx0 > 0 ? std::max(0.0, sxy0 / sxx0) : 0;
    }
  }
  fit.r2 = 1;
  if (points.size() >= 3 && syy > 0) {
    double residual = 0;
    for (const Point& p : points) {
      const double e = p.ns - fit.cost_ns(p.bytes);
      residual += p.weight * e * e;
    }
    fit.r2 = 1 - residual / syy;
  }
  return fit;
}

// Per endpoint, the op that first waits for it: the blocking call itself, or the Wait/Test
// that completes its request; kNone if none does. Its rank is the endpoint's (a rank waits
// only for what it posted), so the op's index in op_storage says it in 4 bytes. One flat
// array: a vector per endpoint was an allocation for each of the job's endpoints.
struct Completer {
  uint32_t op = kNone;
  bool found() const { return op != kNone; }
};
// The op that a found completer names, and the op that posts an endpoint (not an arrival's).
const Op& completing_op(const Graph& graph, const Completer& c) { return graph.op_storage[c.op]; }
const Op& posting_op(const Graph& graph, const Endpoint& ep) {
  return graph.ops[static_cast<size_t>(ep.rank)][ep.op];
}

// What the fit and the clock offsets read first: the op of each endpoint's completion, and the
// traced spans, which must still be there (Graph::drop_traced).
std::vector<Completer> completers(const Graph& graph) {
  if (graph.traced.size() + 1 < graph.op_storage.size())
    throw std::logic_error("simulate: the graph's traced spans were dropped before the fit");
  std::vector<Completer> out(graph.endpoints.size());
  for (const std::span<const Op>& ops : graph.ops)
    for (const Op& op : ops)
      for (uint32_t e : graph.waits_of(op))
        if (!out[e].found()) out[e] = {static_cast<uint32_t>(&op - graph.op_storage.data())};
  return out;
}

// Calls visit(k) for k = 0 .. n-1, where visit reads the endpoint endpoint_at(k) names, its op
// and (given `completer`) its completer. The passes over messages read each one's send, in
// another rank's part of the arrays, and those over a collective's members one rank after
// another: each read a miss of the cache and the TLB that the hardware cannot foresee (one
// loop reads a handful of senders, or every rank, in turn), which at 16,384 ranks were most of
// fit_model's time. They are fetched ahead: the endpoint twice as far ahead as the op it names.
template <class EndpointAt, class Visit>
void visit_fetching_ahead(const Graph& graph, std::span<const Completer> completer, size_t n,
                          EndpointAt&& endpoint_at, Visit&& visit) {
  constexpr size_t kAhead = 16;
  for (size_t k = 0; k < n; ++k) {
    if (k + 2 * kAhead < n) {
      const uint32_t e = endpoint_at(k + 2 * kAhead);
      __builtin_prefetch(&graph.endpoints[e]);
      if (!completer.empty()) __builtin_prefetch(&completer[e]);
    }
    if (k + kAhead < n) {
      const Endpoint& ahead = graph.endpoints[endpoint_at(k + kAhead)];
      if (ahead.op != kNone)
        __builtin_prefetch(&graph.traced_of(posting_op(graph, ahead)));
    }
    visit(k);
  }
}

// Every message in order (its receive is read where the loop is: no completer fetched).
template <class Visit>
void for_each_message(const Graph& graph, Visit&& visit) {
  const std::vector<Message>& messages = graph.messages;
  visit_fetching_ahead(graph, {}, messages.size(), [&](size_t k) { return messages[k].send; },
                       [&](size_t k) { visit(messages[k]); });
}

// Every member of `c`, in order, as its endpoint id.
template <class Visit>
void for_each_member(const Graph& graph, std::span<const Completer> completer,
                     const Collective& c, Visit&& visit) {
  visit_fetching_ahead(graph, completer, c.members.size(), [&](size_t k) { return c.members[k]; },
                       [&](size_t k) { visit(c.members[k]); });
}

}  // namespace

void LineSums::add(double bytes, double ns) {
  ++count_;
  // floor(log2), at most 63 (a size that is no int64, infinite or NaN, in group 63: no UB).
  Sum& power = by_power_[bytes < 1 ? 0 : static_cast<size_t>(std::min(63.0, std::log2(bytes)))];
  power.bytes += bytes;
  power.ns += ns;
  ++power.n;
  if (too_many_sizes_) return;
  auto it = std::lower_bound(exact_.begin(), exact_.end(), bytes,
                             [](const auto& group, double b) { return group.first < b; });
  if (it == exact_.end() || it->first != bytes) {
    if (exact_.size() == kMaxExactSizes) {
      too_many_sizes_ = true;
      exact_.clear();
      return;
    }
    it = exact_.insert(it, {bytes, Sum{}});
  }
  it->second.bytes += bytes;
  it->second.ns += ns;
  ++it->second.n;
}

Fit LineSums::fit(double fallback_ns_per_byte) const {
  std::vector<Point> points;
  auto point = [&](const Sum& sum) {
    const auto n = static_cast<double>(sum.n);
    points.push_back({sum.bytes / n, sum.ns / n, n});
  };
  if (too_many_sizes_) {
    for (const Sum& sum : by_power_)
      if (sum.n > 0) point(sum);
  } else {
    for (const auto& [bytes, sum] : exact_) point(sum);
  }
  return fit_points(points, count_, fallback_ns_per_byte);
}

Fit fit_line(std::span<const Sample> samples, double fallback_ns_per_byte) {
  LineSums sums;
  for (const Sample& s : samples) sums.add(s.bytes, s.ns);
  return sums.fit(fallback_ns_per_byte);
}

namespace {

struct RankPairHash {
  size_t operator()(const std::pair<int32_t, int32_t>& p) const {
    const uint64_t h = ((uint64_t{static_cast<uint32_t>(p.first)} << 32) |
                        static_cast<uint32_t>(p.second)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(h ^ (h >> 32));
  }
};

std::vector<double> clock_offsets(const Graph& graph, const std::vector<Completer>& completer) {
  // lower[{a, b}]: off[b] - off[a] is at least this much (a waited-for event on a happened
  // before the waiting one on b ended). Hashed: an ordered map of every pair of ranks that
  // exchange cost a cache miss per level per message at 16,384 ranks.
  std::unordered_map<std::pair<int32_t, int32_t>, double, RankPairHash> lower;
  auto bound = [&](int32_t a, int32_t b, double v) {
    if (a == b) return;
    auto [it, inserted] = lower.try_emplace({a, b}, v);
    if (!inserted) it->second = std::max(it->second, v);
  };
  // When the op that completes `e` ran (nullptr if none does), and when the op that posts it did.
  auto done_of = [&](uint32_t e) -> const TracedSpan* {
    const Completer& c = completer[e];
    return c.found() ? &graph.traced_of(completing_op(graph, c)) : nullptr;
  };
  auto start_of = [&](uint32_t e) { return graph.traced_of(posting_op(graph, graph.endpoints[e])).start; };
  // Bounds against one rank at a time, the anchor (a message's receiver, a collective's first
  // member), are gathered in two arrays by rank and go to `lower` when the anchor changes, and
  // at the end (a maximum, in any order). A hashed update per message, and per member and
  // collective, was most of this function at 16,384 ranks; messages come receiver after
  // receiver (build_graph matches them so), and collectives mostly with one first member.
  const double kNoBound = -std::numeric_limits<double>::infinity();
  int32_t anchor = -1;
  std::vector<double> from_anchor(static_cast<size_t>(graph.world_size), kNoBound);  // bound(anchor, b)
  std::vector<double> to_anchor(static_cast<size_t>(graph.world_size), kNoBound);    // bound(b, anchor)
  std::vector<int32_t> bounded;                    // ranks with a bound in them
  auto anchor_at = [&](int32_t a) {
    if (a == anchor) return;
    for (const int32_t b : bounded) {
      const auto k = static_cast<size_t>(b);
      if (from_anchor[k] != kNoBound) bound(anchor, b, from_anchor[k]);
      if (to_anchor[k] != kNoBound) bound(b, anchor, to_anchor[k]);
      from_anchor[k] = to_anchor[k] = kNoBound;
    }
    bounded.clear();
    anchor = a;
  };
  auto bound_anchored = [&](std::vector<double>& side, int32_t b, double v) {
    const auto k = static_cast<size_t>(b);
    if (from_anchor[k] == kNoBound && to_anchor[k] == kNoBound) bounded.push_back(b);
    side[k] = std::max(side[k], v);
  };
  for_each_message(graph, [&](const Message& m) {
    const TracedSpan* done = done_of(m.recv);
    if (done == nullptr) return;
    const int32_t a = graph.endpoints[m.send].rank, b = graph.endpoints[m.recv].rank;
    if (a == b) return;
    anchor_at(b);
    bound_anchored(to_anchor, a, static_cast<double>(start_of(m.send) - done->end));
  });
  for (const Collective& c : graph.collectives) {
    if (c.sync != Sync::all || c.members.size() < 2) continue;
    const uint32_t first = c.members[0];
    const TracedSpan* first_done = done_of(first);
    if (first_done == nullptr) continue;
    const int32_t a = graph.endpoints[first].rank;
    anchor_at(a);
    for_each_member(graph, completer, c, [&](uint32_t e) {
      const TracedSpan* done = done_of(e);
      const int32_t b = graph.endpoints[e].rank;
      if (done == nullptr || b == a) return;
      bound_anchored(from_anchor, b, static_cast<double>(start_of(first) - done->end));
      bound_anchored(to_anchor, b, static_cast<double>(start_of(e) - first_done->end));
    });
  }
  anchor_at(-1);   // the last anchor's bounds to `lower`
  // Each pair's offset: the middle of its bounds (or the one bound there is), spread from rank 0.
  // (The pairs in ascending order, as an ordered map gave them: the spread's order decides
  // which bound wins where they disagree.)
  std::vector<std::pair<int32_t, int32_t>> pairs;
  pairs.reserve(lower.size());
  for (const auto& [pair, v] : lower) pairs.push_back(pair);
  std::sort(pairs.begin(), pairs.end());
  std::vector<std::vector<int32_t>> neighbours(static_cast<size_t>(graph.world_size));
  for (const auto& [a, b] : pairs) {
    neighbours[static_cast<size_t>(a)].push_back(b);
    neighbours[static_cast<size_t>(b)].push_back(a);
  }
  std::vector<double> offset(static_cast<size_t>(graph.world_size), 0.0);
  std::vector<bool> seen(offset.size(), false);
  std::vector<int32_t> queue;
  for (int32_t start = 0; start < graph.world_size; ++start) {
    if (seen[static_cast<size_t>(start)]) continue;
    seen[static_cast<size_t>(start)] = true;
    queue.assign(1, start);
    for (size_t q = 0; q < queue.size(); ++q) {
      const int32_t a = queue[q];
      for (int32_t b : neighbours[static_cast<size_t>(a)]) {
        if (seen[static_cast<size_t>(b)]) continue;
        const auto lo = lower.find({a, b}), up = lower.find({b, a});
        double d = 0;
        if (lo != lower.end() && up != lower.end())
          d = (lo->second - up->second) / 2;
        else
          d = lo != lower.end() ? lo->second : -up->second;
        offset[static_cast<size_t>(b)] = offset[static_cast<size_t>(a)] + d;
        seen[static_cast<size_t>(b)] = true;
        queue.push_back(b);
      }
    }
  }
  return offset;
}

}  // namespace

std::vector<double> clock_offsets(const Graph& graph) { return clock_offsets(graph, completers(graph)); }

Model fit_model(const Graph& graph) {
  std::array<LineSums, kFamilyCount> samples;
  auto add = [&](Family f, double bytes, double ns) {
    samples[static_cast<size_t>(f)].add(bytes, std::max(0.0, ns));
  };
  const std::vector<Completer> completer = completers(graph);
  const std::vector<double> offset = clock_offsets(graph, completer);
  auto op_of = [&](uint32_t e) -> const Op& { return posting_op(graph, graph.endpoints[e]); };
  auto start_of = [&](uint32_t e) { return graph.traced_of(op_of(e)).start; };
  // On the common clock (rank 0's): a rank's t plus its offset.
  auto common = [&](uint32_t endpoint, int64_t t) {
    return static_cast<double>(t) + offset[static_cast<size_t>(graph.endpoints[endpoint].rank)];
  };
  // A window [from, to] on the common clock that needs all of `ranks` running (a transfer needs
  // its sender and its receiver, a collective all its members), less the longest wait for a CPU
  // of any of them within it: on a busy node one descheduled member stalls the others.
  auto clean_window = [&](std::span<const int32_t> ranks, double from, double to) {
    double waited = 0;
    for (const int32_t r : ranks) {
      const double off = offset[static_cast<size_t>(r)];
      const auto a = static_cast<int64_t>(from - off), b = static_cast<int64_t>(to - off);
      waited = std::max(waited, static_cast<double>(b - a) - graph.busy_ns(r, a, b));
    }
    return std::max(0.0, to - from - waited);
  };
  // The eager limit: the largest size of a blocking standard send that ended before its receive was
  // posted, and the smallest larger one that was still running when the receive was posted.
  double eager_max = -1;
  std::map<double, bool> waited;   // size -> some send of it ran into its receive's post
  for_each_message(graph, [&](const Message& m) {
    const Op& send = op_of(m.send);
    const auto f = static_cast<Fn>(send.function);
    if (f != Fn::MPI_Send && f != Fn::MPI_Rsend) return;
    const double recv_post = common(m.recv, start_of(m.recv));
    const double bytes = static_cast<double>(m.bytes);
    const TracedSpan& sent = graph.traced_of(send);
    if (common(m.send, sent.end) < recv_post)
      eager_max = std::max(eager_max, bytes);
    else if (common(m.send, sent.start) < recv_post)
      waited[bytes] = true;
  });
  double rendezvous = std::numeric_limits<double>::infinity();
  for (const auto& [bytes, yes] : waited)
    if (yes && bytes > eager_max) {
      rendezvous = bytes;
      break;
    }
  for (size_t r = 0; r < graph.ops.size(); ++r)
    for (const Op& op : graph.ops[r]) {
      if (op.measured || op.finalize) continue;
      const auto f = static_cast<Fn>(op.function);
      const double ns = graph.busy_ns(static_cast<int32_t>(r), op);
      if (graph.waits_of(op).empty()) {   // local bookkeeping: no size term (an Irecv moves nothing yet)
        add(Family::post, 0, ns);
      } else if (f == Fn::MPI_Bsend ||
                 ((f == Fn::MPI_Send || f == Fn::MPI_Rsend) &&
                  static_cast<double>(op.bytes) < rendezvous)) {
        add(Family::p2p_send, static_cast<double>(op.bytes), ns);
      }
    }
  // Transfers: from the send's post (or the receive's, if later) to the end of the receive or
  // of the Wait that completes it, when the receiver was already waiting for it.
  LineSums transfers, all_transfers;
  for_each_message(graph, [&](const Message& m) {
    const Completer& c = completer[m.recv];
    if (!c.found()) return;
    const int32_t receiver = graph.endpoints[m.recv].rank;
    const Op& done = completing_op(graph, c);
    const TracedSpan& done_at = graph.traced_of(done);
    const double sent = common(m.send, start_of(m.send));
    const double waiting_from = common(m.recv, done_at.start);
    const double received = common(m.recv, done_at.end);
    const double from = std::min(received, std::max(waiting_from, sent));
    const std::array<int32_t, 2> both = {graph.endpoints[m.send].rank, receiver};
    const Sample s{static_cast<double>(m.bytes), clean_window(both, from, received)};
    all_transfers.add(s.bytes, s.ns);
    if (sent >= waiting_from)
      transfers.add(s.bytes, s.ns);
    else   // the message was there: what the receive itself cost
      add(Family::p2p_recv, s.bytes, graph.busy_ns(receiver, done));
  });
  samples[static_cast<size_t>(Family::p2p)] = transfers.count() == 0 ? all_transfers : transfers;
  // Collectives: the latest arriving member's time from its post to its completion.
  std::vector<int32_t> members;
  for (const Collective& c : graph.collectives) {
    uint32_t latest = kNone;
    for_each_member(graph, {}, c, [&](uint32_t e) {
      if (latest == kNone ||
          common(e, start_of(e)) > common(latest, start_of(latest)))
        latest = e;
    });
    if (latest == kNone || !completer[latest].found()) continue;
    const Op& done = completing_op(graph, completer[latest]);
    const double from = common(latest, start_of(latest));
    const double to = std::max(from, common(latest, graph.traced_of(done).end));
    members.clear();
    for (uint32_t e : c.members) members.push_back(graph.endpoints[e].rank);
    add(c.family, static_cast<double>(c.bytes), clean_window(members, from, to));
  }

  Model model;
  model.ranks = graph.world_size;
  model.rendezvous_bytes = rendezvous;
  model[Family::p2p] = samples[static_cast<size_t>(Family::p2p)].fit();
  const Fit& p2p = model[Family::p2p];
  for (size_t k = 0; k < kFamilyCount; ++k) {
    const auto f = static_cast<Family>(k);
    if (f == Family::p2p) continue;
    // The collective's P: the ranks of its communicator (the first instance's; usually world).
    int ranks = graph.world_size;
    for (const Collective& c : graph.collectives)
      if (c.family == f) {
        ranks = c.ranks;
        break;
      }
    const double factor = family_factor(f, ranks);
    Fit fit = samples[k].fit(p2p.ns_per_byte * factor);
    if (!fit.fitted) {
      fit.t0_ns = p2p.t0_ns * factor;
      fit.ns_per_byte = p2p.ns_per_byte * factor;
    }
    model.fits[k] = fit;
  }
  return model;
}

Model apply_what_if(Model model, const WhatIf& what_if) {
  for (size_t k = 0; k < kFamilyCount; ++k) {
    const auto f = static_cast<Family>(k);
    Fit& fit = model.fits[k];
    const double factor = family_factor(f, model.ranks);
    if (what_if.latency_s >= 0 && f != Family::post && f != Family::p2p_send &&
        f != Family::p2p_recv)
      fit.t0_ns = what_if.latency_s * 1e9 * factor;
    if (what_if.bandwidth > 0 && f != Family::post) fit.ns_per_byte = factor * 1e9 / what_if.bandwidth;
  }
  return model;
}

}  // namespace pskel::simulate

// Rank placement: the cost model, the standard layouts, seed 002's Algorithm 1 and the local
// search that follows it. docs/place.md explains each step and what was added to the seed.
#include "place/place.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

namespace pskel::place {
namespace {

// The traffic as an undirected graph: weight(i, j) = bytes i sent to j + bytes j sent to i,
// which is what crosses the links of both nodes when i and j are apart (the seed's c_ij + c_ji).
class TrafficGraph {
 public:
  struct Edge {
    Rank peer;
    double bytes;
  };

  TrafficGraph(const std::vector<Flow>& flows, int ranks) : edges_(ranks), total_(ranks, 0.0) {
    for (const Flow& f : flows) {
      if (f.from == f.to || f.bytes == 0) continue;
      edges_[f.from].push_back({f.to, f.bytes});
      edges_[f.to].push_back({f.from, f.bytes});
    }
    for (int r = 0; r < ranks; ++r) {
      std::vector<Edge>& list = edges_[r];
      std::sort(list.begin(), list.end(),
                [](const Edge& a, const Edge& b) { return a.peer < b.peer; });
      std::vector<Edge> merged;
      for (const Edge& e : list) {
        if (!merged.empty() && merged.back().peer == e.peer)
          merged.back().bytes += e.bytes;
        else
          merged.push_back(e);
        total_[r] += e.bytes;
      }
      list = std::move(merged);
    }
  }

  const std::vector<Edge>& edges(Rank r) const { return edges_[r]; }
  double total(Rank r) const { return total_[r]; }
  double weight(Rank a, Rank b) const {
    const std::vector<Edge>& list = edges_[a];
    auto it = std::lower_bound(list.begin(), list.end(), b,
                               [](const Edge& e, Rank peer) { return e.peer < peer; });
    return it != list.end() && it->peer == b ? it->bytes : 0.0;
  }

 private:
  std::vector<std::vector<Edge>> edges_;
  std::vector<double> total_;
};

constexpr Node kUnplaced = -1;

// Loads before and after a candidate change, for the two nodes it touches.
struct Change {
  Rank rank = -1;
  Rank partner = -1;  // the rank swapped with, or -1 for a move
  Node to = kUnplaced;
  double new_max = 0;        // max of the two nodes' loads afterwards
  double traffic_delta = 0;  // change of the summed inter-node bytes of all nodes (2x the cut)
};

// A (partial) assignment with the sums the search needs kept up to date: per node its compute,
// its inter-node bytes, its ranks; per rank and node the bytes between the rank and that node.
// Unplaced ranks count as being on another node.
class Layout {
 public:
  Layout(const Workload& workload, const Machine& machine, const TrafficGraph& graph,
         Assignment assignment)
      : compute_(workload.compute_seconds),
        graph_(graph),
        nodes_(machine.nodes),
        cores_(machine.cores_per_node),
        bandwidth_(machine.bandwidth_bytes_per_second),
        node_of_(std::move(assignment)),
        members_(nodes_),
        node_compute_(nodes_, 0.0),
        node_traffic_(nodes_, 0.0),
        conn_(node_of_.size() * static_cast<size_t>(nodes_), 0.0) {
    const Rank ranks = static_cast<Rank>(node_of_.size());
    for (Rank r = 0; r < ranks; ++r) {
      if (node_of_[r] == kUnplaced) continue;
      members_[node_of_[r]].push_back(r);
      node_compute_[node_of_[r]] += compute_[r];
      for (const auto& e : graph_.edges(r)) conn_at(e.peer, node_of_[r]) += e.bytes;
    }
    for (Rank r = 0; r < ranks; ++r)
      if (node_of_[r] != kUnplaced)
        node_traffic_[node_of_[r]] += graph_.total(r) - conn(r, node_of_[r]);
  }

  const Assignment& assignment() const { return node_of_; }
  Node node_of(Rank r) const { return node_of_[r]; }
  const std::vector<Rank>& members(Node n) const { return members_[n]; }
  bool has_room(Node n) const { return static_cast<int>(members_[n].size()) < cores_; }
  int nodes() const { return nodes_; }
  double load(Node n) const { return load_of(node_compute_[n], node_traffic_[n]); }
  double total_traffic() const {
    return std::accumulate(node_traffic_.begin(), node_traffic_.end(), 0.0);
  }
  double conn(Rank r, Node n) const { return conn_[static_cast<size_t>(r) * nodes_ + n]; }

  // The rise in node n's load if unplaced rank r joined it (the seed's D).
  double join_cost(Rank r, Node n) const {
    return compute_[r] / cores_ + (graph_.total(r) - 2 * conn(r, n)) / bandwidth_;
  }

  Change move_change(Rank r, Node to) const {
    const Node from = node_of_[r];
    const double w = graph_.total(r);
    const double from_traffic = node_traffic_[from] - w + 2 * conn(r, from);
    const double to_traffic = node_traffic_[to] + w - 2 * conn(r, to);
    Change c;
    c.rank = r;
    c.to = to;
    c.new_max = std::max(load_of(node_compute_[from] - compute_[r], from_traffic),
                         load_of(node_compute_[to] + compute_[r], to_traffic));
    c.traffic_delta = from_traffic + to_traffic - node_traffic_[from] - node_traffic_[to];
    return c;
  }

  // Exchanging i and j is moving i to j's node, then j to i's (with conn seen after the first).
  Change swap_change(Rank i, Rank j) const {
    const Node a = node_of_[i], b = node_of_[j];
    const double wi = graph_.total(i), wj = graph_.total(j), wij = graph_.weight(i, j);
    const double a_traffic = node_traffic_[a] - wi + 2 * conn(i, a) + wj - 2 * (conn(j, a) - wij);
    const double b_traffic = node_traffic_[b] + wi - 2 * conn(i, b) - wj + 2 * (conn(j, b) + wij);
    Change c;
    c.rank = i;
    c.partner = j;
    c.to = b;
    c.new_max = std::max(load_of(node_compute_[a] - compute_[i] + compute_[j], a_traffic),
                         load_of(node_compute_[b] + compute_[i] - compute_[j], b_traffic));
    c.traffic_delta = a_traffic + b_traffic - node_traffic_[a] - node_traffic_[b];
    return c;
  }

  void apply(const Change& c) {
    if (c.partner < 0) {
      move(c.rank, c.to);
    } else {
      const Node a = node_of_[c.rank];
      move(c.rank, c.to);
      move(c.partner, a);
    }
  }

  // Places an unplaced rank, or moves a placed one (capacity is the caller's business).
  void move(Rank r, Node to) {
    const Node from = node_of_[r];
    const double w = graph_.total(r);
    if (from != kUnplaced) {
      node_traffic_[from] += -w + 2 * conn(r, from);
      node_compute_[from] -= compute_[r];
      auto& m = members_[from];
      m.erase(std::find(m.begin(), m.end(), r));
    }
    node_traffic_[to] += w - 2 * conn(r, to);
    node_compute_[to] += compute_[r];
    members_[to].push_back(r);
    for (const auto& e : graph_.edges(r)) {
      if (from != kUnplaced) conn_at(e.peer, from) -= e.bytes;
      conn_at(e.peer, to) += e.bytes;
    }
    node_of_[r] = to;
  }

  Node most_loaded() const {
    Node best = 0;
    for (Node n = 1; n < nodes_; ++n)
      if (load(n) > load(best)) best = n;
    return best;
  }

 private:
  double load_of(double compute, double traffic) const {
    return compute / cores_ + traffic / bandwidth_;
  }
  double& conn_at(Rank r, Node n) { return conn_[static_cast<size_t>(r) * nodes_ + n]; }

  const std::vector<double>& compute_;
  const TrafficGraph& graph_;
  int nodes_;
  int cores_;
  double bandwidth_;
  Assignment node_of_;
  std::vector<std::vector<Rank>> members_;
  std::vector<double> node_compute_;
  std::vector<double> node_traffic_;  // bytes in and out of the node's link
  std::vector<double> conn_;          // [rank * nodes + node]
};

// x is below y by more than rounding (sums are kept incrementally).
bool clearly_below(double x, double y) { return x < y - 1e-9 * std::abs(y); }

// Prefers the lower new max, then the bigger traffic cut: the order of the seed's step 4.
bool lower_max_first(const Change& a, const Change& b) {
  if (a.new_max != b.new_max) return a.new_max < b.new_max;
  return a.traffic_delta < b.traffic_delta;
}

// Seed step 4: the best move of a rank off the most loaded node to a node with a free core.
std::optional<Change> best_move_off(const Layout& layout, Node from) {
  std::optional<Change> best;
  for (Rank r : layout.members(from))
    for (Node to = 0; to < layout.nodes(); ++to) {
      if (to == from || !layout.has_room(to)) continue;
      const Change c = layout.move_change(r, to);
      if (!best || lower_max_first(c, *best)) best = c;
    }
  return best;
}

// Added: the best exchange of a rank of the most loaded node with a rank elsewhere, the only
// change possible when every other node is full.
std::optional<Change> best_swap_off(const Layout& layout, Node from) {
  std::optional<Change> best;
  for (Rank i : layout.members(from))
    for (Node to = 0; to < layout.nodes(); ++to) {
      if (to == from) continue;
      for (Rank j : layout.members(to)) {
        const Change c = layout.swap_change(i, j);
        if (!best || lower_max_first(c, *best)) best = c;
      }
    }
  return best;
}

// Added: the move or swap that cuts the most inter-node traffic while neither node it touches
// ends above the current max load, so the max never rises. Only nodes where a rank has partners
// can cut its traffic, so only those are tried.
std::optional<Change> best_traffic_cut(const Layout& layout, const TrafficGraph& graph,
                                       double max_load, double min_cut) {
  std::optional<Change> best;
  const auto consider = [&](const Change& c) {
    if (c.traffic_delta >= -min_cut || c.new_max > max_load) return;
    if (!best || c.traffic_delta < best->traffic_delta) best = c;
  };
  const Rank ranks = static_cast<Rank>(layout.assignment().size());
  for (Rank i = 0; i < ranks; ++i) {
    const Node a = layout.node_of(i);
    Node previous = kUnplaced;
    for (const auto& e : graph.edges(i)) {
      const Node b = layout.node_of(e.peer);
      if (b == a || b == previous) continue;
      previous = b;
      if (layout.has_room(b)) consider(layout.move_change(i, b));
      for (Rank j : layout.members(b)) consider(layout.swap_change(i, j));
    }
  }
  return best;
}

struct Key {
  double max_load;
  double traffic;
  bool operator<(const Key& o) const {
    return max_load != o.max_load ? max_load < o.max_load : traffic < o.traffic;
  }
};

Key key_of(const Layout& layout) {
  return {layout.load(layout.most_loaded()), layout.total_traffic()};
}

std::string check(const Workload& workload, const Machine& machine) {
  const int64_t ranks = static_cast<int64_t>(workload.compute_seconds.size());
  if (ranks == 0) return "no ranks to place";
  if (machine.nodes < 1) return fmt::format("{} nodes: need at least one", machine.nodes);
  if (machine.cores_per_node < 1)
    return fmt::format("{} cores per node: need at least one", machine.cores_per_node);
  if (!(machine.bandwidth_bytes_per_second > 0) ||
      !std::isfinite(machine.bandwidth_bytes_per_second))
    return fmt::format("bandwidth {} bytes/s: need a positive number",
                       machine.bandwidth_bytes_per_second);
  const int64_t cores = int64_t{machine.nodes} * machine.cores_per_node;
  if (ranks > cores)
    return fmt::format("{} ranks do not fit on {} nodes of {} cores ({} cores)", ranks,
                       machine.nodes, machine.cores_per_node, cores);
  if (ranks > kMaxCells / machine.nodes)
    return fmt::format("{} ranks on {} nodes: more than the {} rank-node pairs the search keeps",
                       ranks, machine.nodes, kMaxCells);
  for (int64_t r = 0; r < ranks; ++r) {
    const double s = workload.compute_seconds[r];
    if (!std::isfinite(s) || s < 0)
      return fmt::format("rank {}: compute {} s is not a finite number >= 0", r, s);
  }
  for (const Flow& f : workload.flows) {
    if (f.from < 0 || f.from >= ranks || f.to < 0 || f.to >= ranks)
      return fmt::format("traffic from rank {} to rank {}: no such rank (0..{})", f.from, f.to,
                         ranks - 1);
    if (!std::isfinite(f.bytes) || f.bytes < 0)
      return fmt::format("traffic from rank {} to rank {}: {} bytes is not a finite number >= 0",
                         f.from, f.to, f.bytes);
  }
  return {};
}

}  // namespace

Figures evaluate(const Workload& workload, const Machine& machine, const Assignment& assignment) {
  std::vector<double> compute(machine.nodes, 0.0), traffic(machine.nodes, 0.0);
  for (size_t r = 0; r < assignment.size(); ++r)
    compute[assignment[r]] += workload.compute_seconds[r];
  Figures out;
  for (const Flow& f : workload.flows) {
    const Node a = assignment[f.from], b = assignment[f.to];
    if (a == b) continue;
    traffic[a] += f.bytes;
    traffic[b] += f.bytes;
    out.inter_node_bytes += f.bytes;
  }
  out.load_seconds.resize(machine.nodes);
  for (Node n = 0; n < machine.nodes; ++n) {
    out.load_seconds[n] =
        compute[n] / machine.cores_per_node + traffic[n] / machine.bandwidth_bytes_per_second;
    if (out.load_seconds[n] > out.load_seconds[out.most_loaded_node]) out.most_loaded_node = n;
  }
  out.max_load_seconds = out.load_seconds[out.most_loaded_node];
  return out;
}

bool better(const Figures& a, const Figures& b) {
  if (a.max_load_seconds != b.max_load_seconds) return a.max_load_seconds < b.max_load_seconds;
  return a.inter_node_bytes < b.inter_node_bytes;
}

Assignment block_placement(int ranks, const Machine& machine) {
  Assignment out(ranks);
  const int per_node = ranks / machine.nodes, larger = ranks % machine.nodes;
  Rank r = 0;
  for (Node n = 0; n < machine.nodes; ++n)
    for (int k = 0; k < per_node + (n < larger ? 1 : 0); ++k) out[r++] = n;
  return out;
}

Assignment cyclic_placement(int ranks, const Machine& machine) {
  Assignment out(ranks);
  for (Rank r = 0; r < ranks; ++r) out[r] = r % machine.nodes;
  return out;
}

Assignment greedy_placement(const Workload& workload, const Machine& machine) {
  const Rank ranks = static_cast<Rank>(workload.compute_seconds.size());
  const TrafficGraph graph(workload.flows, ranks);
  Layout layout(workload, machine, graph, Assignment(ranks, kUnplaced));

  // Step 1: the ranks with the most compute, one per node.
  std::vector<Rank> order(ranks);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](Rank a, Rank b) {
    return workload.compute_seconds[a] > workload.compute_seconds[b];
  });
  const Rank seeded = std::min<Rank>(ranks, machine.nodes);
  for (Rank k = 0; k < seeded; ++k) layout.move(order[k], k);
  std::vector<Rank> rest(order.begin() + seeded, order.end());

  // Step 2: the pair (rank, node) that raises the node's load least; the seed only looks at
  // nodes holding a partner of the rank (c_kj != 0), and so do we when one has a free core.
  while (!rest.empty()) {
    Node least = kUnplaced;
    for (Node n = 0; n < machine.nodes; ++n)
      if (layout.has_room(n) && (least == kUnplaced || layout.load(n) < layout.load(least)))
        least = n;
    struct Pick {
      size_t index;
      Node node;
      double rise;
      double load;
    };
    std::optional<Pick> best;
    const auto consider = [&](size_t index, Node n) {
      const double rise = layout.join_cost(rest[index], n);
      const Pick p{index, n, rise, layout.load(n) + rise};
      if (!best || p.rise < best->rise || (p.rise == best->rise && p.load < best->load)) best = p;
    };
    for (size_t k = 0; k < rest.size(); ++k) {
      bool partnered = false;
      for (const auto& e : graph.edges(rest[k])) {
        const Node n = layout.node_of(e.peer);
        if (n == kUnplaced || !layout.has_room(n)) continue;
        partnered = true;
        consider(k, n);
      }
      if (!partnered) consider(k, least);
    }
    layout.move(rest[best->index], best->node);
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(best->index));
  }
  return layout.assignment();
}

Assignment grown_placement(const Workload& workload, const Machine& machine, Fill fill) {
  const Rank ranks = static_cast<Rank>(workload.compute_seconds.size());
  const TrafficGraph graph(workload.flows, ranks);
  Layout layout(workload, machine, graph, Assignment(ranks, kUnplaced));
  std::vector<Rank> by_compute(ranks);
  std::iota(by_compute.begin(), by_compute.end(), 0);
  std::stable_sort(by_compute.begin(), by_compute.end(), [&](Rank a, Rank b) {
    return workload.compute_seconds[a] > workload.compute_seconds[b];
  });
  std::vector<int> quota(machine.nodes, 0);
  if (fill == Fill::like_block) {
    for (Node n : block_placement(ranks, machine)) ++quota[n];
  } else {
    int left = ranks;
    for (Node n = 0; n < machine.nodes; ++n) {
      quota[n] = std::min(left, machine.cores_per_node);
      left -= quota[n];
    }
  }

  size_t next_seed = 0;  // by_compute[next_seed ..] holds every unplaced rank
  for (Node n = 0; n < machine.nodes; ++n) {
    for (int k = 0; k < quota[n]; ++k) {
      while (layout.node_of(by_compute[next_seed]) != kUnplaced) ++next_seed;
      Rank pick = by_compute[next_seed];
      double most = 0;
      for (Rank r : by_compute)
        if (layout.node_of(r) == kUnplaced && layout.conn(r, n) > most) {
          most = layout.conn(r, n);
          pick = r;
        }
      layout.move(pick, n);
    }
  }
  return layout.assignment();
}

Assignment improve(const Workload& workload, const Machine& machine, Assignment start,
                   SearchStats* stats) {
  const Rank ranks = static_cast<Rank>(workload.compute_seconds.size());
  const TrafficGraph graph(workload.flows, ranks);
  Layout layout(workload, machine, graph, start);
  SearchStats counted;

  double all_traffic = 0;
  for (Rank r = 0; r < ranks; ++r) all_traffic += graph.total(r);
  const double min_cut = 1e-9 * std::max(1.0, all_traffic);

  Assignment best = start;
  Key best_key = key_of(layout);
  // Each step lowers the most loaded node's load or the traffic; the cap only guards against
  // rounding making two steps undo each other.
  const int64_t max_steps = 10 * int64_t{ranks} + 1000;
  for (int64_t step = 0; step < max_steps; ++step) {
    // Step 3: the most loaded node.
    const Node top = layout.most_loaded();
    const double top_load = layout.load(top);
    // Steps 4-5: move a rank off it while that lowers the larger of the two loads.
    std::optional<Change> change = best_move_off(layout, top);
    if (change && clearly_below(change->new_max, top_load)) {
      ++counted.moves;
    } else if ((change = best_swap_off(layout, top)) && clearly_below(change->new_max, top_load)) {
      ++counted.swaps;
    } else if ((change = best_traffic_cut(layout, graph, top_load, min_cut))) {
      ++counted.traffic_steps;
    } else {
      break;
    }
    layout.apply(*change);
    const Key key = key_of(layout);
    if (key < best_key) {
      best_key = key;
      best = layout.assignment();
    }
  }
  if (stats) *stats = counted;
  // The kept sums are incremental: check the choice against exact figures.
  if (better(evaluate(workload, machine, start), evaluate(workload, machine, best))) return start;
  return best;
}

Result<Placement> place(const Workload& workload, const Machine& machine) {
  if (std::string problem = check(workload, machine); !problem.empty())
    return Error{"", std::move(problem)};
  const int ranks = static_cast<int>(workload.compute_seconds.size());

  Placement out;
  out.block = evaluate(workload, machine, block_placement(ranks, machine));
  out.cyclic = evaluate(workload, machine, cyclic_placement(ranks, machine));
  const std::pair<const char*, Assignment> starts[] = {
      {"block", block_placement(ranks, machine)},
      {"cyclic", cyclic_placement(ranks, machine)},
      {"greedy", greedy_placement(workload, machine)},
      {"grown", grown_placement(workload, machine, Fill::like_block)},
      {"packed", grown_placement(workload, machine, Fill::full_nodes)},
  };
  bool first = true;
  for (const auto& [name, start] : starts) {
    SearchStats stats;
    Assignment found = improve(workload, machine, start, &stats);
    Figures figures = evaluate(workload, machine, found);
    if (first || better(figures, out.figures)) {
      out.assignment = std::move(found);
      out.figures = std::move(figures);
      out.start = name;
      out.stats = stats;
      first = false;
    }
  }
  return out;
}

}  // namespace pskel::place

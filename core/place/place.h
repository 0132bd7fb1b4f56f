// Rank placement: which node each MPI rank should run on, so that the busiest node (its compute
// plus its inter-node traffic) finishes soonest. Seed 002's task allocation (NUCAPPT, Alg. 1)
// with pairwise swaps added. Pure functions over numbers, no I/O; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace pskel::place {

using Rank = int32_t;
using Node = int32_t;

// A default network: about one 100 Gb/s link per node.
inline constexpr double kDefaultBandwidth = 1e10;  // bytes per second

// Point-to-point bytes that rank `from` sent to rank `to` (repeats add up; from == to is
// ignored: a rank talking to itself never crosses a node).
struct Flow {
  Rank from = 0;
  Rank to = 0;
  double bytes = 0;
};

// What the ranks do: the seed's execution times (c_kk) and communication costs (c_kl).
struct Workload {
  std::vector<double> compute_seconds;  // [0 .. ranks-1], each finite and >= 0
  std::vector<Flow> flows;              // any order; ranks in [0, ranks), bytes finite, >= 0
};

struct Machine {
  int nodes = 1;
  // At most this many ranks on one node.
  int cores_per_node = 1;
  // Of each node's link to the others, > 0.
  double bandwidth_bytes_per_second = kDefaultBandwidth;
};

// node of each rank: [0 .. ranks-1] -> [0, nodes)
using Assignment = std::vector<Node>;

// The cost model (docs/place.md): a node's load is the compute of its ranks spread over its
// cores plus the bytes its ranks exchange with ranks on other nodes over its link:
//   load(node) = sum(compute of its ranks) / cores_per_node + bytes_in_and_out / bandwidth.
struct Figures {
  std::vector<double> load_seconds;  // [0 .. nodes-1]
  double max_load_seconds = 0;       // the objective: the seed's completion time ET(X)
  Node most_loaded_node = 0;         // the lowest-numbered node with the max load
  double inter_node_bytes = 0;       // bytes of the flows whose ends are on different nodes
};

// REQUIRES: the workload and the assignment are valid for the machine (see place()).
Figures evaluate(const Workload& workload, const Machine& machine, const Assignment& assignment);

// True if `a` is a better placement than `b`: lower max load, then fewer inter-node bytes.
bool better(const Figures& a, const Figures& b);

// Slurm's two standard layouts for `ranks` ranks on all the machine's nodes:
// block  = consecutive ranks together, ceil or floor of ranks/nodes per node (the first
//          ranks % nodes nodes take one more), like `srun -N nodes -n ranks -m block`;
// cyclic = rank r on node r % nodes, like `-m cyclic`.
// REQUIRES: 1 <= ranks <= nodes * cores_per_node.
Assignment block_placement(int ranks, const Machine& machine);
Assignment cyclic_placement(int ranks, const Machine& machine);

// The seed's initial assignment (Alg. 1 steps 1-2): the `nodes` ranks with the most compute
// one per node, then repeatedly the (rank, node) pair that raises that node's load least,
// among nodes where the rank has partners when there are any, never past cores_per_node.
// REQUIRES: as block_placement.
Assignment greedy_placement(const Workload& workload, const Machine& machine);

// Added to the seed: nodes filled one after the other, each starting from the unplaced rank
// with the most compute and then taking the unplaced rank that exchanges the most bytes with
// the node so far (greedy graph growing). Finds groups of ranks that talk among themselves,
// which the seed's start can split. `Fill` says how many ranks each node takes.
enum class Fill {
  like_block,  // as many as block_placement gives the node: the compute stays spread
  full_nodes,  // cores_per_node, node after node: fewest nodes, least traffic
};
// REQUIRES: as block_placement.
Assignment grown_placement(const Workload& workload, const Machine& machine, Fill fill);

struct SearchStats {
  int moves = 0;          // ranks moved off the most loaded node (seed steps 3-5)
  int swaps = 0;          // two ranks on different nodes exchanged (added: full nodes)
  int traffic_steps = 0;  // moves or swaps that cut inter-node bytes without raising a load past
                          // the pair's old max (added: escapes the seed's local minima)
};

// Local search from `start` (the seed's steps 3-5, then swaps, then traffic steps; see
// docs/place.md). The result is never worse than `start` by better().
// REQUIRES: `start` valid for the machine.
Assignment improve(const Workload& workload, const Machine& machine, Assignment start,
                   SearchStats* stats = nullptr);

struct Placement {
  Assignment assignment;
  Figures figures;
  Figures block;      // block_placement's figures, for comparison
  Figures cyclic;     // cyclic_placement's figures
  // The start the result was improved from: "block", "cyclic", "greedy", "grown" or "packed"
  // (grown_placement with Fill::like_block or Fill::full_nodes).
  std::string start;
  SearchStats stats;  // of that start's search
};

// Checks the inputs (one Error line for the first problem: no ranks, ranks that do not fit
// on nodes * cores_per_node, a flow naming a rank out of range, a negative or non-finite
// number, more than kMaxCells ranks x nodes), improves the block, cyclic, greedy, grown and
// packed starts and keeps the best (block on a tie). By construction never worse than block by better().
Result<Placement> place(const Workload& workload, const Machine& machine);

// The search keeps a ranks x nodes table of connection weights: this bounds its memory.
inline constexpr int64_t kMaxCells = int64_t{1} << 25;

}  // namespace pskel::place

// Rank placement (core/place): the cost model, block/cyclic, the seed's greedy start and moves,
// the swaps added for full nodes, and the adapter from traces, on workloads built by hand.
#include "place/place.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "place/from_trace.h"
#include "trace_builder.h"

namespace pl = pskel::place;
using pskel::test::Fn;

namespace {

// `groups` groups of ranks; the members of each, in rank order, form a ring, each member
// sending `bytes` to the next and to the previous one. Every rank computes one second.
pl::Workload ring_groups(const std::vector<int>& group_of, int groups, double bytes) {
  pl::Workload w;
  const int ranks = static_cast<int>(group_of.size());
  w.compute_seconds.assign(ranks, 1.0);
  for (int g = 0; g < groups; ++g) {
    std::vector<int> members;
    for (int r = 0; r < ranks; ++r)
      if (group_of[r] == g) members.push_back(r);
    const int m = static_cast<int>(members.size());
    for (int k = 0; k < m && m > 1; ++k) {
      w.flows.push_back({members[k], members[(k + 1) % m], bytes});
      w.flows.push_back({members[k], members[(k + m - 1) % m], bytes});
    }
  }
  return w;
}

// The groups test program's pattern: rank r in group (r + r/4) % 4, neither block nor cyclic.
std::vector<int> diagonal_groups(int ranks) {
  std::vector<int> g(ranks);
  for (int r = 0; r < ranks; ++r) g[r] = (r + r / 4) % 4;
  return g;
}

void check_capacity(const pl::Assignment& a, const pl::Machine& m) {
  std::vector<int> used(m.nodes, 0);
  for (pl::Node n : a) {
    REQUIRE(n >= 0);
    REQUIRE(n < m.nodes);
    ++used[n];
  }
  for (int u : used) CHECK(u <= m.cores_per_node);
}

}  // namespace

TEST_CASE("evaluate: compute over the node's cores plus in-and-out bytes over the bandwidth") {
  pl::Workload w;
  w.compute_seconds = {2.0, 4.0, 1.0};
  w.flows = {{0, 2, 100.0}, {2, 0, 50.0}, {0, 1, 1000.0}, {1, 1, 7.0}};
  const pl::Machine m{2, 2, 100.0};
  const pl::Figures f = pl::evaluate(w, m, {0, 0, 1});
  // Node 0: (2 + 4) / 2 cores + (100 + 50) bytes / 100; node 1: 1 / 2 + 150 / 100.
  CHECK(f.load_seconds[0] == doctest::Approx(4.5));
  CHECK(f.load_seconds[1] == doctest::Approx(2.0));
  CHECK(f.max_load_seconds == doctest::Approx(4.5));
  CHECK(f.most_loaded_node == 0);
  CHECK(f.inter_node_bytes == doctest::Approx(150.0));
}

TEST_CASE("block and cyclic spread the ranks over all nodes like Slurm") {
  const pl::Machine m{4, 3, 1.0};
  CHECK(pl::block_placement(10, m) == pl::Assignment{0, 0, 0, 1, 1, 1, 2, 2, 3, 3});
  CHECK(pl::cyclic_placement(10, m) == pl::Assignment{0, 1, 2, 3, 0, 1, 2, 3, 0, 1});
  CHECK(pl::block_placement(3, m) == pl::Assignment{0, 1, 2});
}

TEST_CASE("greedy start (seed steps 1-2): a rank joins the node holding its partner") {
  pl::Workload w;
  w.compute_seconds = {1, 1, 1, 1};
  w.flows = {{0, 2, 1e6}, {1, 3, 1e6}};
  const pl::Machine m{2, 2, 1e6};
  CHECK(pl::greedy_placement(w, m) == pl::Assignment{0, 1, 0, 1});
}

TEST_CASE(
    "greedy start without traffic: the seed adds the smallest rise first; swaps then balance") {
  pl::Workload w;
  w.compute_seconds = {1, 5, 2, 4, 3, 3};
  const pl::Machine m{2, 3, 1.0};
  const pl::Assignment a = pl::greedy_placement(w, m);
  // 5 and 4 open the nodes; then 1, 2, 3, 3 in that order, each to the lighter node with room:
  // {5, 2, 3} and {4, 1, 3}.
  CHECK(a == pl::Assignment{1, 0, 0, 1, 1, 0});
  CHECK(pl::evaluate(w, m, a).max_load_seconds == doctest::Approx(10.0 / 3));
  pl::SearchStats stats;
  const pl::Assignment b = pl::improve(w, m, a, &stats);
  CHECK(stats.swaps == 1);  // both nodes are full: only a swap (2 for 1) can help
  CHECK(pl::evaluate(w, m, b).max_load_seconds == doctest::Approx(9.0 / 3));
}

TEST_CASE("grown starts: nodes grow along the traffic, like block's counts or full") {
  // A ring 0-1-2-3-0: block's {0,1},{2,3} cuts two edges, which no single move or swap
  // improves; on one node nothing crosses.
  pl::Workload w;
  w.compute_seconds = {1, 1, 1, 1};
  w.flows = {{0, 1, 1e6}, {1, 2, 1e6}, {2, 3, 1e6}, {3, 0, 1e6}};
  const pl::Machine m{2, 4, 1e6};
  CHECK(pl::grown_placement(w, m, pl::Fill::like_block) == pl::Assignment{0, 0, 1, 1});
  CHECK(pl::grown_placement(w, m, pl::Fill::full_nodes) == pl::Assignment{0, 0, 0, 0});
  pl::SearchStats stats;
  const pl::Assignment from_block = pl::improve(w, m, pl::block_placement(4, m), &stats);
  CHECK(pl::evaluate(w, m, from_block).inter_node_bytes == doctest::Approx(2e6));
  auto found = pl::place(w, m);
  REQUIRE(found);
  CHECK(found.value().start == "packed");
  CHECK(found.value().figures.inter_node_bytes == 0);
  CHECK(found.value().figures.max_load_seconds == doctest::Approx(1.0));  // 4 s over 4 cores
}

TEST_CASE("seed steps 3-5: ranks move off the most loaded node while its load drops") {
  pl::Workload w;
  w.compute_seconds = {5, 5, 1, 1};
  const pl::Machine m{2, 4, 1.0};
  const pl::Assignment block = pl::block_placement(4, m);  // {0,0,1,1}: loads 2.5 and 0.5
  pl::SearchStats stats;
  const pl::Assignment a = pl::improve(w, m, block, &stats);
  CHECK(stats.moves >= 1);
  CHECK(pl::evaluate(w, m, a).max_load_seconds == doctest::Approx(6.0 / 4));
  check_capacity(a, m);
}

TEST_CASE("16 ranks in 4 groups on 4 full nodes: no inter-node traffic") {
  const pl::Workload w = ring_groups(diagonal_groups(16), 4, 1e6);
  const pl::Machine m{4, 4, 1e9};
  const pl::Figures block = pl::evaluate(w, m, pl::block_placement(16, m));
  const pl::Figures cyclic = pl::evaluate(w, m, pl::cyclic_placement(16, m));
  CHECK(block.inter_node_bytes == doctest::Approx(32e6));  // every ring edge crosses
  CHECK(cyclic.inter_node_bytes == doctest::Approx(32e6));

  auto found = pl::place(w, m);
  REQUIRE(found);
  const pl::Placement& p = found.value();
  CHECK(p.figures.inter_node_bytes == 0);
  CHECK(p.figures.max_load_seconds == doctest::Approx(1.0));  // 4 ranks x 1 s over 4 cores
  check_capacity(p.assignment, m);
  for (int r = 0; r < 16; ++r)
    for (int q = 0; q < 16; ++q)
      if (diagonal_groups(16)[r] == diagonal_groups(16)[q])
        CHECK(p.assignment[r] == p.assignment[q]);

  SUBCASE("from block alone: nodes are full, so the seed's moves cannot start; swaps can") {
    pl::SearchStats stats;
    const pl::Assignment a = pl::improve(w, m, pl::block_placement(16, m), &stats);
    CHECK(stats.moves == 0);
    CHECK(stats.swaps > 0);
    const pl::Figures f = pl::evaluate(w, m, a);
    MESSAGE("block improved: " << f.inter_node_bytes << " inter-node bytes, max load "
                               << f.max_load_seconds << " s, " << stats.swaps << " swaps, "
                               << stats.traffic_steps << " traffic steps");
    CHECK(f.inter_node_bytes < block.inter_node_bytes);
  }
}

TEST_CASE("random group layouts: always all groups together") {
  std::mt19937 random(12345);
  int solved = 0, tries = 0;
  for (int groups : {2, 4, 8}) {
    for (int seed = 0; seed < 20; ++seed, ++tries) {
      const int size = 32 / groups, ranks = groups * size;
      std::vector<int> group_of(ranks);
      for (int r = 0; r < ranks; ++r) group_of[r] = r % groups;
      std::shuffle(group_of.begin(), group_of.end(), random);
      const pl::Workload w = ring_groups(group_of, groups, 1e6);
      const pl::Machine m{groups, size, 1e9};
      auto found = pl::place(w, m);
      REQUIRE(found);
      check_capacity(found.value().assignment, m);
      if (found.value().figures.inter_node_bytes == 0) ++solved;
    }
  }
  MESSAGE("solved " << solved << " of " << tries);
  CHECK(solved == tries);
}

TEST_CASE("never worse than block, on random workloads") {
  std::mt19937 random(777);
  std::uniform_real_distribution<double> seconds(0.0, 2.0), bytes(0.0, 1e7);
  for (int trial = 0; trial < 200; ++trial) {
    const int nodes = 1 + trial % 5, cores = 1 + (trial / 5) % 4;
    const int ranks = 1 + static_cast<int>(random() % static_cast<unsigned>(nodes * cores));
    pl::Workload w;
    for (int r = 0; r < ranks; ++r) w.compute_seconds.push_back(seconds(random));
    for (int k = 0; k < 2 * ranks; ++k)
      w.flows.push_back({static_cast<pl::Rank>(random() % ranks),
                         static_cast<pl::Rank>(random() % ranks), bytes(random)});
    const pl::Machine m{nodes, cores, 1e7};
    auto found = pl::place(w, m);
    REQUIRE(found);
    check_capacity(found.value().assignment, m);
    CHECK_FALSE(pl::better(found.value().block, found.value().figures));
    CHECK_FALSE(pl::better(found.value().cyclic, found.value().figures));
    CHECK(found.value().block.max_load_seconds ==
          pl::evaluate(w, m, pl::block_placement(ranks, m)).max_load_seconds);
  }
}

TEST_CASE("bad input: one line saying what is wrong") {
  pl::Workload w;
  w.compute_seconds = {1, 1, 1, 1, 1};
  auto r = pl::place(w, {2, 2, 1.0});
  REQUIRE_FALSE(r);
  CHECK(r.error().line() == "5 ranks do not fit on 2 nodes of 2 cores (4 cores)");

  CHECK_FALSE(pl::place(pl::Workload{}, {1, 1, 1.0}));
  w.flows = {{0, 5, 1.0}};
  r = pl::place(w, {3, 2, 1.0});
  REQUIRE_FALSE(r);
  CHECK(r.error().line() == "traffic from rank 0 to rank 5: no such rank (0..4)");
  w.flows.clear();
  w.compute_seconds[2] = -1;
  CHECK_FALSE(pl::place(w, {3, 2, 1.0}));
  w.compute_seconds[2] = 1;
  CHECK_FALSE(pl::place(w, {3, 2, 0.0}));
  CHECK(pl::place(w, {3, 2, 1.0}));
}

TEST_CASE("from a trace: gaps between calls, point-to-point bytes per pair, collectives left out") {
  auto ranks = pskel::test::world(3);
  auto& r0 = ranks[0];
  r0.timing(1000, 100);
  r0.add(Fn::MPI_Init);
  r0.send(1, 0, 100);                   // 800 bytes to 1
  r0.isend(2, 0, 10);                   // 80 bytes to 2
  const uint32_t id = r0.send_init(1);  // 8 bytes to 1, at each start
  r0.startall({id});
  r0.start(id);
  r0.send(0, 0, 5);  // to itself: never crosses a node
  r0.send(pskel::trace::kProcNull, 0, 5);
  r0.collective(Fn::MPI_Allreduce, 1000);
  r0.add(Fn::MPI_Finalize);
  ranks[1].add(Fn::MPI_Init);
  ranks[1].sendrecv(2, 2, 0, 4);  // 32 bytes to 2
  ranks[1].add(Fn::MPI_Finalize);
  ranks[2].add(Fn::MPI_Init);
  ranks[2].add(Fn::MPI_Finalize);
  const auto set = pskel::test::trace_set(ranks);

  auto got = pl::workload_from_trace(set);
  REQUIRE(got);
  const pl::TraceWorkload& t = got.value();
  // Rank 0 made 11 calls: 10 gaps of 1000 ns after MPI_Init's end.
  CHECK(t.workload.compute_seconds[0] == doctest::Approx(10 * 1000e-9));
  CHECK(t.workload.compute_seconds[1] == doctest::Approx(2 * 1000e-9));
  CHECK(t.collective_calls == 1);
  CHECK(t.messages == 6);  // send, isend, two starts, self-send, sendrecv
  std::vector<std::tuple<int, int, double>> flows;
  for (const pl::Flow& f : t.workload.flows) flows.emplace_back(f.from, f.to, f.bytes);
  CHECK(flows ==
        std::vector<std::tuple<int, int, double>>{{0, 1, 816.0}, {0, 2, 80.0}, {1, 2, 32.0}});
}

TEST_CASE("from a trace: a send to a rank outside the trace names the rank file") {
  auto ranks = pskel::test::world(2);
  ranks[0].add(Fn::MPI_Init);
  ranks[0].send(5);
  ranks[0].add(Fn::MPI_Finalize);
  ranks[1].add(Fn::MPI_Init);
  ranks[1].add(Fn::MPI_Finalize);
  const auto set = pskel::test::trace_set(ranks);
  auto got = pl::workload_from_trace(set);
  REQUIRE_FALSE(got);
  CHECK(got.error().line() ==
        "(in memory)/rank.0.pskt: record 1 sends to rank 5, but the trace has 2 ranks");
}

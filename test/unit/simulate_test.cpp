// The replay predictor (core/simulate) on traces built in memory: a ping-pong whose critical
// path is known to the nanosecond, collectives, the model fit on synthetic points, what-if
// scaling, matching of wildcard and non-blocking receives, and traces that cannot be replayed
// consistently (no hang, no crash); the graph built a rank at a time, records freed.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "simulate/simulate.h"
#include "synthetic_trace.h"
#include "trace_builder.h"

using namespace pskel::test;
namespace sim = pskel::simulate;

namespace {

// A model with round numbers: messages take 100 ns + 0.5 ns/byte, a blocking send 10 ns, calls
// that do not wait nothing, every collective 50 ns.
sim::Model round_model(int ranks) {
  sim::Model m;
  m.ranks = ranks;
  for (sim::Fit& f : m.fits) f.t0_ns = 50;
  m[sim::Family::p2p] = {100, 0.5, 1, 1, 1, true};
  m[sim::Family::p2p_send] = {10, 0, 1, 1, 1, true};
  m[sim::Family::post] = {0, 0, 1, 1, 1, true};
  m[sim::Family::p2p_recv] = {0, 0, 1, 1, 1, true};
  return m;
}

void init(RankBuilder& b) { b.timing(0, 0).add(Fn::MPI_Init); }

// The next call of `b` at absolute times [start, end]; `clock` is the end of its previous call.
RankBuilder& at(RankBuilder& b, int64_t& clock, int64_t start, int64_t end) {
  b.timing(start - clock, end - start);
  clock = end;
  return b;
}

}  // namespace

TEST_CASE("simulate: a ping-pong replays to its exact critical path") {
  auto w = world(2);
  // Rank 0: compute 1000, send 8 bytes to 1, receive the answer, compute 200, finalize.
  init(w[0]);
  w[0].timing(1000, 50).send(1);
  w[0].timing(0, 500).recv(1);
  w[0].timing(200, 0).add(Fn::MPI_Finalize);
  // Rank 1: receive, compute 300, answer, compute 100, finalize.
  init(w[1]);
  w[1].timing(0, 1100).recv(0);
  w[1].timing(300, 20).send(0);
  w[1].timing(100, 0).add(Fn::MPI_Finalize);
  const auto trace = trace_set(w);

  const sim::Graph g = sim::build_graph(trace);
  REQUIRE(g.messages.size() == 2);
  CHECK(g.unmatched_sends == 0);
  CHECK(g.unmatched_receives == 0);

  const sim::Prediction p = sim::replay(g, round_model(2));
  // Rank 0 sends at 1000; the message (8 bytes: 104 ns) reaches rank 1 at 1104; rank 1
  // answers at 1404, which reaches rank 0 at 1508; rank 0 finalizes at 1708, rank 1 at 1514.
  CHECK(p.predicted_seconds == doctest::Approx(1708e-9).epsilon(1e-12));
  CHECK(p.rank_end_seconds[1] == doctest::Approx(1514e-9).epsilon(1e-12));
  CHECK(p.critical_rank == 0);
  CHECK(p.compute_seconds == doctest::Approx(1500e-9).epsilon(1e-12));      // 1000 + 300 + 200
  CHECK(p.communication_seconds == doctest::Approx(208e-9).epsilon(1e-12)); // two messages
  CHECK(p.rank_switches == 2);
  CHECK(p.forced == 0);
}

TEST_CASE("simulate: the replay reads what unmodelled calls took once the traced spans are freed") {
  // MPI_Init is not modelled: each rank's takes its traced time (5000 and 100 ns), and the
  // barrier after it waits for the slower one.
  auto w = world(2);
  w[0].timing(0, 5000).add(Fn::MPI_Init);
  w[0].timing(10, 0).collective(Fn::MPI_Barrier, 0);
  w[0].timing(0, 0).add(Fn::MPI_Finalize);
  w[1].timing(0, 100).add(Fn::MPI_Init);
  w[1].timing(10, 0).collective(Fn::MPI_Barrier, 0);
  w[1].timing(0, 0).add(Fn::MPI_Finalize);
  sim::Graph g = sim::build_graph(trace_set(w));
  CHECK_NOTHROW(sim::fit_model(g));
  const sim::Prediction before = sim::replay(g, round_model(2));
  CHECK(before.predicted_seconds == doctest::Approx(5060e-9).epsilon(1e-12));   // 5000 + 10 + 50
  g.drop_traced();
  CHECK(g.traced.empty());
  CHECK(sim::replay(g, round_model(2)).predicted_seconds == before.predicted_seconds);
  CHECK_THROWS_AS(sim::fit_model(g), std::logic_error);   // the fit needs them
}

TEST_CASE("simulate: an allreduce ends for everybody at the last arrival plus its cost") {
  auto w = world(3);
  const int64_t gaps[3] = {100, 500, 300};
  for (int r = 0; r < 3; ++r) {
    init(w[r]);
    w[r].timing(gaps[r], 10).collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    w[r].timing(0, 0).add(Fn::MPI_Finalize);
  }
  const auto trace = trace_set(w);
  const sim::Graph g = sim::build_graph(trace);
  REQUIRE(g.collectives.size() == 1);
  CHECK(g.collectives[0].members.size() == 3);
  const sim::Prediction p = sim::replay(g, round_model(3));
  for (double end : p.rank_end_seconds) CHECK(end == doctest::Approx(550e-9).epsilon(1e-12));
  CHECK(p.compute_seconds == doctest::Approx(500e-9).epsilon(1e-12));  // rank 1's gap
  CHECK(p.communication_seconds == doctest::Approx(50e-9).epsilon(1e-12));
}

TEST_CASE("simulate: a reduce waits only at the root, a bcast only for the root") {
  auto w = world(2);
  // Rank 1 arrives at the reduce late (800), rank 0 (the root) early (100); then a bcast from
  // rank 0, which rank 1 reaches at once.
  init(w[0]);
  w[0].timing(100, 10).collective(Fn::MPI_Reduce, 1, 0, tr::Op::sum);
  w[0].timing(1000, 10).collective(Fn::MPI_Bcast, 1, 0);
  w[0].timing(0, 0).add(Fn::MPI_Finalize);
  init(w[1]);
  w[1].timing(800, 10).collective(Fn::MPI_Reduce, 1, 0, tr::Op::sum);
  w[1].timing(0, 10).collective(Fn::MPI_Bcast, 1, 0);
  w[1].timing(0, 0).add(Fn::MPI_Finalize);
  const auto trace = trace_set(w);
  const sim::Prediction p = sim::replay(sim::build_graph(trace), round_model(2));
  // Root: reduce ends at 850, bcast posted at 1850, ends 1900. Rank 1: reduce ends at 850
  // (its own arrival + 50), bcast posted at 850 waits for the root: 1900.
  CHECK(p.rank_end_seconds[0] == doctest::Approx(1900e-9).epsilon(1e-12));
  CHECK(p.rank_end_seconds[1] == doctest::Approx(1900e-9).epsilon(1e-12));
}

TEST_CASE("simulate: the fit recovers T0 and B from noisy points") {
  // True line: 2000 ns + 0.25 ns/byte (B = 4 GB/s). Per size 8 samples spread symmetrically
  // around it (scheduling noise), plus sizes seen once.
  std::vector<sim::Sample> samples;
  for (double bytes : {0.0, 1024.0, 8192.0, 65536.0, 262144.0}) {
    const double ns = 2000 + 0.25 * bytes;
    for (int k = 1; k <= 4; ++k) {
      samples.push_back({bytes, ns + 300.0 * k});
      samples.push_back({bytes, ns - 300.0 * k});
    }
  }
  const sim::Fit fit = sim::fit_line(samples);
  CHECK(fit.fitted);
  CHECK(fit.samples == 40);
  CHECK(fit.buckets == 5);
  CHECK(fit.t0_ns == doctest::Approx(2000).epsilon(1e-9));
  CHECK(fit.ns_per_byte == doctest::Approx(0.25).epsilon(1e-9));
  CHECK(fit.r2 == doctest::Approx(1.0).epsilon(1e-9));
  // Many distinct sizes: grouped by powers of two, still on the line.
  std::vector<sim::Sample> spread;
  for (int k = 1; k <= 200; ++k) {
    const double bytes = 97.0 * k * k;
    spread.push_back({bytes, 2000 + 0.25 * bytes});
  }
  const sim::Fit binned = sim::fit_line(spread);
  CHECK(binned.buckets < 33);
  CHECK(binned.t0_ns == doctest::Approx(2000).epsilon(0.05));
  CHECK(binned.ns_per_byte == doctest::Approx(0.25).epsilon(0.02));

  // One size only: the slope comes from the fallback, T0 takes the rest.
  const std::vector<sim::Sample> one = {{1000, 3000}, {1000, 3000}, {1000, 3000}, {1000, 5000}};
  const sim::Fit single = sim::fit_line(one, 0.5);
  CHECK(single.ns_per_byte == doctest::Approx(0.5));
  CHECK(single.t0_ns == doctest::Approx(3000));
  // No samples: not fitted.
  CHECK_FALSE(sim::fit_line({}).fitted);
}

TEST_CASE("simulate: the fit groups by exact size up to 32 sizes, by powers of two past them") {
  // Sizes 1..32 (times 100 bytes) are 32 groups; a 33rd size makes them powers of two: sizes
  // 100..3300 fall in floor(log2) groups 6 to 11.
  std::vector<sim::Sample> samples;
  for (int k = 1; k <= 32; ++k) samples.push_back({100.0 * k, 1000 + 0.5 * 100 * k});
  CHECK(sim::fit_line(samples).buckets == 32);
  samples.push_back({3300, 1000 + 0.5 * 3300});
  const sim::Fit binned = sim::fit_line(samples);
  CHECK(binned.buckets == 6);
  CHECK(binned.samples == 33);
  // The samples fed one at a time in another order give the same groups (sums in their order).
  sim::LineSums reversed;
  for (auto it = samples.rbegin(); it != samples.rend(); ++it) reversed.add(it->bytes, it->ns);
  CHECK(reversed.count() == 33);
  CHECK(reversed.fit().buckets == 6);
  CHECK(reversed.fit().ns_per_byte == doctest::Approx(binned.ns_per_byte).epsilon(1e-9));
  // Sizes under 2 bytes share group 0 (0 and 1 byte), beside 2 bytes' group 1.
  sim::LineSums small;
  for (int k = 0; k < 40; ++k) small.add(k < 34 ? k : k % 3, 100);
  CHECK(small.fit().buckets == 6);   // groups 0 (0, 1 B), 1 (2, 3), 2, 3, 4, 5 (32, 33)
}

TEST_CASE("simulate: a Waitall on requests that complete out of order ends at the last one") {
  // Rank 0 waits for messages from ranks 1, 2 and 3, posted at 900, 500 and 100 ns: the replay
  // finds them missing in another order than they come.
  auto w = world(4);
  init(w[0]);
  const uint32_t a = w[0].irecv(1, 1);
  const uint32_t b = w[0].irecv(2, 1);
  const uint32_t c = w[0].irecv(3, 1);
  w[0].complete(Fn::MPI_Waitall, {a, b, c});
  w[0].timing(0, 0).add(Fn::MPI_Finalize);
  const int64_t gaps[4] = {0, 900, 500, 100};
  for (int r = 1; r < 4; ++r) {
    init(w[r]);
    w[r].timing(gaps[r], 10).send(0, 1, 1);
    w[r].timing(0, 0).add(Fn::MPI_Finalize);
  }
  const auto trace = trace_set(w);
  const sim::Prediction p = sim::replay(sim::build_graph(trace), round_model(4));
  // The last message leaves rank 1 at 900 and takes 100 + 0.5 x 8 ns.
  CHECK(p.rank_end_seconds[0] == doctest::Approx(1004e-9).epsilon(1e-12));
  CHECK(p.forced == 0);
}

TEST_CASE("simulate: a rank forced past a deadlock still waits for what it needs later") {
  // Both ranks Ssend first (a deadlock the replay must break), then receive each other's. The
  // forced rank 0 is still on the list of the post it was waiting for when rank 1 makes it:
  // that must not count as one of the two messages rank 0 waits for afterwards.
  auto w = world(2);
  init(w[0]);
  w[0].send(1, 1, 1, Fn::MPI_Ssend);
  w[0].recv(1, 1);
  const uint32_t a = w[0].irecv(1, 2);
  const uint32_t b = w[0].irecv(1, 3);
  w[0].complete(Fn::MPI_Waitall, {a, b});
  w[0].timing(0, 0).add(Fn::MPI_Finalize);
  init(w[1]);
  w[1].send(0, 1, 1, Fn::MPI_Ssend);
  w[1].recv(0, 1);
  w[1].timing(1000, 10).send(0, 2, 1);
  w[1].timing(500, 10).send(0, 3, 1);
  w[1].timing(0, 0).add(Fn::MPI_Finalize);
  const auto trace = trace_set(w);
  const sim::Prediction p = sim::replay(sim::build_graph(trace), round_model(2));
  CHECK(p.forced == 1);
  // Rank 1 ends 10 ns (a blocking send) after posting the message of tag 3, which reaches
  // rank 0 104 ns after that post.
  CHECK(p.rank_end_seconds[0] == doctest::Approx(p.rank_end_seconds[1] + 94e-9).epsilon(1e-12));
}

TEST_CASE("simulate: the critical path through a forced call follows what the replay decided") {
  // Both ranks Ssend first (rank 0 at 100, rank 1 at 200), then receive each other's: the
  // replay forces rank 0's send to end at 100 + 104 without its receive, posted only at 308.
  // Evaluated again once that receive is posted, the send would end at 412, bound to rank 1's
  // receive, and the walk back would go round between the ranks' sends and receives.
  auto w = world(2);
  init(w[0]);
  w[0].timing(100, 10).send(1, 1, 1, Fn::MPI_Ssend);
  w[0].timing(0, 10).recv(1, 1);
  w[0].timing(5000, 0).add(Fn::MPI_Finalize);
  init(w[1]);
  w[1].timing(200, 10).send(0, 1, 1, Fn::MPI_Ssend);
  w[1].timing(0, 10).recv(0, 1);
  w[1].timing(0, 0).add(Fn::MPI_Finalize);
  const auto trace = trace_set(w);
  const sim::Prediction p = sim::replay(sim::build_graph(trace), round_model(2));
  CHECK(p.forced == 1);
  // Rank 0: its send forced to 204, its receive (rank 1's message, posted at 200) at 204 + 104,
  // then 5000 of compute.
  CHECK(p.critical_rank == 0);
  CHECK(p.predicted_seconds == doctest::Approx(5308e-9).epsilon(1e-12));
  CHECK(p.compute_seconds == doctest::Approx(5100e-9).epsilon(1e-12));
  CHECK(p.communication_seconds == doctest::Approx(208e-9).epsilon(1e-12));
  CHECK(p.rank_switches == 0);
}

TEST_CASE("simulate: fit_model measures transfers and collective costs from the trace") {
  // 20 messages of 8 bytes: the receiver is always already waiting, and the message takes
  // 700 ns from the send's start to the end of the receive; each allreduce takes 400 ns (both
  // ranks arrive together, which also pins the ranks' clocks together).
  auto w = world(2);
  init(w[0]);
  init(w[1]);
  int64_t t0 = 0, t1 = 0;
  int64_t now = 1000;
  for (int k = 0; k < 20; ++k) {
    at(w[1], t1, now - 500, now + 700).recv(0);
    at(w[0], t0, now, now + 100).send(1);
    now += 2000;
    at(w[0], t0, now, now + 400).collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    at(w[1], t1, now, now + 400).collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    now += 2000;
  }
  at(w[0], t0, now, now).add(Fn::MPI_Finalize);
  at(w[1], t1, now, now).add(Fn::MPI_Finalize);
  const auto trace = trace_set(w);
  const sim::Model m = sim::fit_model(sim::build_graph(trace));
  CHECK(m[sim::Family::p2p].samples == 20);
  CHECK(m[sim::Family::p2p].t0_ns + 8 * m[sim::Family::p2p].ns_per_byte == doctest::Approx(700));
  CHECK(m[sim::Family::p2p_send].cost_ns(8) == doctest::Approx(100));
  CHECK(m[sim::Family::allreduce].samples == 20);
  CHECK(m[sim::Family::allreduce].cost_ns(8) == doctest::Approx(400));
}

TEST_CASE("simulate: clock offsets undo the skew between ranks' t = 0") {
  // Rank 1's clock reads 5000 ns more than rank 0's. Ping-pongs both ways, 100 ns per message.
  auto w = world(2);
  init(w[0]);
  init(w[1]);
  int64_t t0 = 0, t1 = 0;
  const int64_t skew = 5000;
  int64_t now = 10000;   // rank 0's clock
  for (int k = 0; k < 5; ++k) {
    at(w[0], t0, now, now + 20).send(1);
    at(w[1], t1, now - 50 + skew, now + 100 + skew).recv(0);
    now += 1000;
    at(w[1], t1, now + skew, now + 20 + skew).send(0);
    at(w[0], t0, now - 50, now + 100).recv(1);
    now += 1000;
  }
  const auto trace = trace_set(w);
  const std::vector<double> offset = sim::clock_offsets(sim::build_graph(trace));
  REQUIRE(offset.size() == 2);
  CHECK(offset[0] == 0);
  CHECK(offset[1] == doctest::Approx(-skew));
  // Without the offsets every transfer would look 5 us long one way and be clamped to 0 the other.
  const sim::Model m = sim::fit_model(sim::build_graph(trace));
  CHECK(m[sim::Family::p2p].cost_ns(8) == doctest::Approx(100));
}

TEST_CASE("simulate: cpu-scale 2 doubles a compute-only program, grow scales it too") {
  auto w = world(2);
  for (int r = 0; r < 2; ++r) {
    init(w[r]);
    w[r].timing(1000000 * (r + 1), 0).add(Fn::MPI_Finalize);
  }
  const auto trace = trace_set(w);
  const sim::Graph g = sim::build_graph(trace);
  const sim::Model m = round_model(2);
  const double base = sim::replay(g, m).predicted_seconds;
  CHECK(base == doctest::Approx(2e-3));
  sim::WhatIf slow;
  slow.cpu_scale = 2;
  CHECK(sim::replay(g, m, slow).predicted_seconds == doctest::Approx(2 * base));
  sim::WhatIf grow;
  grow.grow = 3;
  CHECK(sim::replay(g, m, grow).predicted_seconds == doctest::Approx(3 * base));
}

TEST_CASE("simulate: latency and bandwidth overrides replace the fitted line") {
  sim::Model m = round_model(4);
  sim::WhatIf w;
  w.latency_s = 2e-6;
  w.bandwidth = 1e9;
  const sim::Model o = sim::apply_what_if(m, w);
  CHECK(o[sim::Family::p2p].t0_ns == doctest::Approx(2000));
  CHECK(o[sim::Family::p2p].ns_per_byte == doctest::Approx(1));
  CHECK(o[sim::Family::allreduce].t0_ns == doctest::Approx(4000));     // log2(4) rounds
  CHECK(o[sim::Family::alltoall].ns_per_byte == doctest::Approx(3));   // P - 1
  CHECK(o[sim::Family::post].t0_ns == doctest::Approx(0));             // local cost stays
}

TEST_CASE("simulate: wildcard and non-blocking receives match in post order") {
  auto w = world(3);
  init(w[0]);
  const uint32_t a = w[0].irecv(1, 5);
  const uint32_t b = w[0].irecv(1, 5);
  w[0].complete(Fn::MPI_Waitall, {a, b});
  w[0].recv_any(2, 7);
  w[0].add(Fn::MPI_Finalize);
  init(w[1]);
  w[1].send(0, 5, 10);
  w[1].send(0, 5, 20);
  w[1].add(Fn::MPI_Finalize);
  init(w[2]);
  w[2].send(0, 7, 30);
  w[2].add(Fn::MPI_Finalize);
  const auto trace = trace_set(w);
  const sim::Graph g = sim::build_graph(trace);
  CHECK(g.unmatched_sends == 0);
  CHECK(g.unmatched_receives == 0);
  REQUIRE(g.messages.size() == 3);
  std::vector<int64_t> sizes;
  for (const sim::Message& m : g.messages) sizes.push_back(m.bytes);
  CHECK(sizes == std::vector<int64_t>{80, 160, 240});
  // The Waitall waits for both receives.
  CHECK(g.waits_of(g.ops[0][3]).size() == 2);
}

TEST_CASE("simulate: a probe waits for the message of the next receive on its channel") {
  auto w = world(3);
  init(w[0]);
  w[0].recv(1, 3, 10);
  w[0].recv(1, 3, 20, Fn::MPI_Probe);   // the tracer records what a probe found as received
  w[0].recv(2, 7, 40, Fn::MPI_Probe);   // another channel between the probe and its receive
  w[0].recv(1, 3, 20);
  w[0].recv(2, 7, 40);
  w[0].recv(1, 3, 30, Fn::MPI_Probe);
  w[0].recv(1, 3, 30);
  w[0].recv(1, 3, 50, Fn::MPI_Probe);   // no receive after it: nothing to wait for
  w[0].add(Fn::MPI_Finalize);
  init(w[1]);
  for (int64_t count : {10, 20, 30}) w[1].send(0, 3, count);
  w[1].add(Fn::MPI_Finalize);
  init(w[2]);
  w[2].send(0, 7, 40);
  w[2].add(Fn::MPI_Finalize);
  const sim::Graph g = sim::build_graph(trace_set(w));
  std::vector<int64_t> probed;   // per probe, in its order: the bytes of the message it waits for
  for (const sim::Endpoint& e : g.endpoints)
    if (e.kind == sim::Endpoint::Kind::arrival)
      probed.push_back(e.link == sim::kNone ? -1 : g.messages[e.link].bytes);
  CHECK(probed == std::vector<int64_t>{160, 320, 240, -1});
  CHECK(sim::replay(g, round_model(3)).forced == 0);
}

TEST_CASE("simulate: unmatched calls and an impossible trace replay without hanging") {
  auto w = world(2);
  // Both ranks Ssend first: a deadlock that a real run could not have traced; plus a receive
  // nobody sends to.
  init(w[0]);
  w[0].send(1, 1, 1, Fn::MPI_Ssend);
  w[0].recv(1, 1);
  w[0].recv(1, 9);
  w[0].add(Fn::MPI_Finalize);
  init(w[1]);
  w[1].send(0, 1, 1, Fn::MPI_Ssend);
  w[1].recv(0, 1);
  w[1].add(Fn::MPI_Finalize);
  const auto trace = trace_set(w);
  const sim::Graph g = sim::build_graph(trace);
  CHECK(g.unmatched_receives == 1);
  CHECK_FALSE(g.warnings.empty());
  const sim::Prediction p = sim::replay(g, round_model(2));
  CHECK(p.forced >= 1);
  CHECK(std::isfinite(p.predicted_seconds));
  CHECK(p.predicted_seconds > 0);

  // A rank cut short (no Finalize, no end block): its last call ends it.
  auto cut = world(2);
  init(cut[0]);
  cut[0].timing(500, 10).collective(Fn::MPI_Barrier, 0);
  cut[0].timing(0, 0).add(Fn::MPI_Finalize);
  init(cut[1]);
  auto cut_trace = trace_set(cut);
  cut_trace.ranks[1].complete = false;
  const sim::Graph cg = sim::build_graph(cut_trace);
  CHECK(cg.incomplete_collectives == 1);
  const sim::Prediction cp = sim::replay(cg, round_model(2));
  CHECK(cp.predicted_seconds == doctest::Approx(550e-9));
}

TEST_CASE("simulate: messages are matched in whichever order their ranks come, links kept") {
  // Rank 1 receives from rank 0 (added before it) and from rank 2 (after it): one of rank 2's
  // messages never comes, so the message reserved for it is dropped and those after renumbered;
  // a probe waits for the dropped one, another for a later one. Rank 2 also sends one message
  // nobody receives.
  auto w = world(3);
  init(w[0]);
  w[0].send(1, 1, 10);
  w[0].add(Fn::MPI_Finalize);
  init(w[1]);
  w[1].recv(2, 4, 20);                  // matched when rank 2 comes
  w[1].recv(2, 5, 1, Fn::MPI_Probe);    // waits for the receive below: never sent
  w[1].recv(2, 5);
  w[1].recv(0, 1, 10);                  // matched at once
  w[1].recv(2, 6, 40, Fn::MPI_Probe);
  w[1].recv(2, 6, 40);
  w[1].add(Fn::MPI_Finalize);
  init(w[2]);
  w[2].send(1, 4, 20, Fn::MPI_Ssend);
  w[2].send(1, 6, 40);
  w[2].send(1, 9, 80);                  // nobody receives tag 9
  w[2].add(Fn::MPI_Finalize);
  const sim::Graph g = sim::build_graph(trace_set(w));
  CHECK(g.unmatched_receives == 1);
  CHECK(g.unmatched_sends == 1);
  // Receiver after receiver, each in post order, as if every send had been posted first.
  REQUIRE(g.messages.size() == 3);
  std::vector<int64_t> sizes;
  for (const sim::Message& m : g.messages) sizes.push_back(m.bytes);
  CHECK(sizes == std::vector<int64_t>{160, 80, 320});
  CHECK(g.messages[0].mode == sim::SendMode::synchronous);
  CHECK(g.messages[2].mode == sim::SendMode::standard);
  for (uint32_t m = 0; m < g.messages.size(); ++m) {
    CHECK(g.endpoints[g.messages[m].send].link == m);
    CHECK(g.endpoints[g.messages[m].recv].link == m);
  }
  size_t unlinked_p2p = 0;
  std::vector<int64_t> probed;
  for (const sim::Endpoint& e : g.endpoints) {
    if (e.kind == sim::Endpoint::Kind::arrival)
      probed.push_back(e.link == sim::kNone ? -1 : g.messages[e.link].bytes);
    else if (e.kind != sim::Endpoint::Kind::member && e.link == sim::kNone)
      ++unlinked_p2p;
  }
  CHECK(probed == std::vector<int64_t>{-1, 320});
  CHECK(unlinked_p2p == 2);   // the receive never sent to, the send never received
  CHECK(std::isfinite(sim::replay(g, round_model(3)).predicted_seconds));
}

TEST_CASE("simulate: a graph built a rank at a time, each rank freed once added, is build_graph's") {
  // Master/worker at 150 ranks: more than the 64 ranks after which the arrays are sized from
  // a projection, with the masters' longer ranks skewing it; halo3d with its requests.
  for (const Pattern pattern : {Pattern::master_worker, Pattern::halo3d}) {
    CAPTURE(kPatternNames[static_cast<size_t>(pattern)]);
    const int32_t ranks = 150;
    tr::TraceSet whole;
    for (int32_t r = 0; r < ranks; ++r)
      whole.ranks.push_back(synthetic_rank(pattern, r, ranks, 300, 5, GapSource()));
    const sim::Graph expected = sim::build_graph(whole);

    sim::GraphBuilder builder(ranks);
    for (int32_t r = 0; r < ranks; ++r) {
      tr::RankTrace rank = synthetic_rank(pattern, r, ranks, 300, 5, GapSource());
      builder.add_rank(rank);
      rank.drop_records();   // the graph keeps nothing of it
    }
    const sim::Graph got = builder.finish();

    REQUIRE(got.ops.size() == expected.ops.size());
    for (size_t r = 0; r < got.ops.size(); ++r) {
      REQUIRE(got.ops[r].size() == expected.ops[r].size());
      for (size_t i = 0; i < got.ops[r].size(); ++i) {
        const sim::Op& a = got.ops[r][i];
        const sim::Op& b = expected.ops[r][i];
        CHECK(a.gap_ns == b.gap_ns);
        CHECK(got.traced_of(a).end == expected.traced_of(b).end);
        CHECK(a.first_post == b.first_post);
        CHECK(got.waits_of(a).size() == expected.waits_of(b).size());
      }
    }
    CHECK(got.endpoints.size() == expected.endpoints.size());
    CHECK(got.posts == expected.posts);
    CHECK(got.waits == expected.waits);
    REQUIRE(got.messages.size() == expected.messages.size());
    CHECK(got.messages.size() > 0);
    for (size_t m = 0; m < got.messages.size(); ++m) {
      CHECK(got.messages[m].send == expected.messages[m].send);
      CHECK(got.messages[m].recv == expected.messages[m].recv);
    }
    CHECK(got.collectives.size() == expected.collectives.size());
    CHECK(got.unmatched_sends + got.unmatched_receives == 0);
    const sim::Model model = sim::fit_model(got);
    CHECK(sim::replay(got, model).predicted_seconds ==
          sim::replay(expected, sim::fit_model(expected)).predicted_seconds);
  }
}

TEST_CASE("simulate: a graph builder takes no more ranks than the job has; missing ones are empty") {
  auto w = world(3);
  init(w[0]);
  w[0].send(1, 5, 10);
  w[0].add(Fn::MPI_Finalize);
  init(w[1]);
  w[1].recv(0, 5);
  w[1].add(Fn::MPI_Finalize);
  init(w[2]);
  w[2].add(Fn::MPI_Finalize);
  const auto trace = trace_set(w);
  sim::GraphBuilder builder(2);
  builder.add_rank(trace.ranks[0]);
  builder.add_rank(trace.ranks[1]);
  CHECK_THROWS_AS(builder.add_rank(trace.ranks[2]), std::logic_error);

  sim::GraphBuilder partial(3);
  partial.add_rank(trace.ranks[0]);
  const sim::Graph g = partial.finish();
  REQUIRE(g.ops.size() == 3);
  CHECK(g.ops[0].size() == 3);
  CHECK(g.ops[1].empty());
  CHECK(g.ops[2].empty());
  CHECK(g.unmatched_sends == 1);
}

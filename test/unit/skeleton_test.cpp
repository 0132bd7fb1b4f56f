// The skeleton generator on traces built in memory (trace_builder.h) and run through the real
// merge, loop compression and loop tree: loops stay loops, per-rank values become expressions
// or tables, compute becomes calibrated work, scaling divides the dominant loop, requests and
// communicators are reproduced, and orders that need eager buffering are planned away.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "compress/compress.h"
#include "looptree/looptree.h"
#include "merge/merge.h"
#include "pskel_runtime.h"  // skeletons/: the C side of the tables the generator writes
#include "skeleton/cexpr.h"
#include "skeleton/skeleton.h"
#include "synthetic_trace.h"
#include "trace_builder.h"
#include "util/file_read.h"

namespace sk = pskel::skeleton;
namespace lt = pskel::looptree;
namespace tr = pskel::trace;
using pskel::test::Fn;
using pskel::test::RankBuilder;

namespace {

struct Built {
  tr::TraceSet trace;
  pskel::merge::MergedTrace merged;
  lt::LoopTree tree;
};

Built build(std::vector<RankBuilder>& ranks, double ns_per_unit = 2.0) {
  Built b;
  b.trace = pskel::test::trace_set(ranks);
  b.trace.meta = {{"mpi", "mpich"}, {"ranks", b.trace.ranks.size()}};
  for (tr::RankTrace& r : b.trace.ranks) r.header.work_ns_per_unit = ns_per_unit;
  b.merged = pskel::merge::merge(b.trace);
  const auto folded = pskel::compress::compress(b.merged.symbols());
  b.tree = lt::build(b.trace, b.merged, folded);
  return b;
}

// What `pskel skeleton` keeps of a trace across its reads: each rank without its records.
tr::TraceSet without_records(const tr::TraceSet& trace) {
  tr::TraceSet kept;
  kept.dir = trace.dir;
  kept.meta = trace.meta;
  for (const tr::RankTrace& rank : trace.ranks) kept.ranks.push_back(rank.without_records());
  return kept;
}

// `b`'s ranks handed one at a time to a Generator whose set holds no records, as
// `pskel skeleton` reads a trace.
pskel::Result<sk::Skeleton> generate_streamed(const Built& b, const sk::Options& o) {
  const tr::TraceSet kept = without_records(b.trace);
  sk::Generator generator(kept, b.merged, b.tree);
  for (const tr::RankTrace& rank : b.trace.ranks) generator.add(rank);
  return generator.finish(o);
}

// Every skeleton of these tests is also made from the ranks one at a time, and must be the same.
sk::Skeleton generate(const Built& b, int64_t scale = 1) {
  sk::Options o;
  o.scale = scale;
  o.name = "test";
  auto g = sk::generate(b.trace, b.merged, b.tree, o);
  REQUIRE_MESSAGE(g.ok(), g.error().line());
  auto streamed = generate_streamed(b, o);
  REQUIRE_MESSAGE(streamed.ok(), streamed.error().line());
  CHECK(streamed.value().source == g.value().source);
  CHECK(streamed.value().description == g.value().description);
  return g.value();
}

// A generated trace of `ranks` ranks of `events` calls (synthetic_trace.h) through the merge,
// loop compression and loop tree.
Built synthetic(pskel::test::Pattern pattern, int ranks, int events) {
  Built b;
  for (int r = 0; r < ranks; ++r)
    b.trace.ranks.push_back(
        pskel::test::synthetic_rank(pattern, r, ranks, events, 1, pskel::test::GapSource()));
  b.trace.meta = {{"mpi", "mpich"}, {"ranks", ranks}};
  for (tr::RankTrace& r : b.trace.ranks) r.header.work_ns_per_unit = 2.0;
  b.merged = pskel::merge::merge(b.trace);
  b.tree = lt::build(b.trace, b.merged, pskel::compress::compress(b.merged.symbols()));
  return b;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every rank: Init, `iters` x (Sendrecv to the right, from the left; Allreduce), Finalize.
std::vector<RankBuilder> halo_ring(int ranks, int iters, int64_t gap = 1000) {
  auto w = pskel::test::world(ranks);
  for (int r = 0; r < ranks; ++r) {
    w[r].timing(gap, 100);
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < iters; ++i) {
      w[r].sendrecv((r + 1) % ranks, (r + ranks - 1) % ranks, 7, 1000);
      w[r].collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    }
    w[r].add(Fn::MPI_Finalize);
  }
  return w;
}

}  // namespace

TEST_CASE("skeleton: a loop of halo exchanges is a C loop with peers as expressions of the rank") {
  auto w = halo_ring(4, 40);
  const sk::Skeleton s = generate(build(w));
  CHECK(has(s.source, "for (long i0 = 0; i0 < 40; ++i0) {"));
  CHECK(has(s.source, "MPI_Sendrecv(pskel_sbuf, 8000, MPI_BYTE, (rank + 1) % size, 7"));
  CHECK(has(s.source, "(rank + 3) % size"));  // the left neighbour
  CHECK(has(s.source, "MPI_Allreduce(pskel_sbuf, pskel_rbuf, 1, MPI_DOUBLE, MPI_SUM, pskel_comm[0])"));
  CHECK(has(s.source, "pskel_begin(&argc, &argv, &config);"));
  CHECK(has(s.source, "return pskel_end();"));
  CHECK(has(s.source, ".world_size = 4,"));
  CHECK(count(s.source, "MPI_Sendrecv(") == 1);  // not unrolled
  CHECK(s.description["scale"] == 1);
  CHECK(s.description["rewritten_groups"].empty());
}

TEST_CASE("skeleton: compute gaps are calibrated work units") {
  auto w = halo_ring(2, 10, 5000);
  const sk::Skeleton s = generate(build(w, 2.5));
  // 5000 ns at 2.5 ns per unit: 2000 units before each call, inside the loop.
  CHECK(has(s.source, "pskel_compute(2000.0);"));
  CHECK(!has(s.source, "sleep"));
  CHECK(s.description["work_ns_per_unit"][0] == doctest::Approx(2.5));
}

TEST_CASE("skeleton: the calibrations of MPI_Init and MPI_Finalize are combined") {
  auto w = halo_ring(2, 10, 5000);
  Built b = build(w, 2.5);
  // Rank 0's two agree (within 2 %): their mean. Rank 1's disagree: the lower (a slow moment
  // of the host inflated one of them).
  b.trace.meta["work_ns_per_unit_at_finalize"] = {2.54, 3.5};
  sk::Skeleton s = generate(b);
  CHECK(s.description["work_ns_per_unit"][0] == doctest::Approx(2.52));
  CHECK(s.description["work_ns_per_unit"][1] == doctest::Approx(2.5));
  b.trace.meta["work_ns_per_unit_at_finalize"] = {2.0, 2.5};  // lower at the end
  s = generate(b);
  CHECK(s.description["work_ns_per_unit"][0] == doctest::Approx(2.0));
  CHECK(s.description["work_ns_per_unit"][1] == doctest::Approx(2.5));
  // Missing values, or an array of the wrong length, leave the MPI_Init values.
  b.trace.meta["work_ns_per_unit_at_finalize"] = nlohmann::json::parse("[null, 2.49]");
  s = generate(b);
  CHECK(s.description["work_ns_per_unit"][0] == doctest::Approx(2.5));
  CHECK(s.description["work_ns_per_unit"][1] == doctest::Approx(2.495));
  b.trace.meta["work_ns_per_unit_at_finalize"] = {1.0};
  s = generate(b);
  CHECK(s.description["work_ns_per_unit"][0] == doctest::Approx(2.5));
}

TEST_CASE("skeleton: the calibration probes of the whole run come first where a rank has them") {
  auto w = halo_ring(2, 10, 5000);
  Built b = build(w, 2.5);
  b.trace.meta["work_ns_per_unit_at_finalize"] = {2.54, 3.5};
  b.trace.meta["work_ns_per_unit_in_run"] = {2.6, -1};  // rank 1 had too few probes
  sk::Skeleton s = generate(b);
  CHECK(s.description["work_ns_per_unit"][0] == doctest::Approx(2.6));
  CHECK(s.description["work_ns_per_unit"][1] == doctest::Approx(2.5));  // MPI_Init and _Finalize
  b.trace.meta["work_ns_per_unit_in_run"] = {2.6};  // wrong length: not used
  s = generate(b);
  CHECK(s.description["work_ns_per_unit"][0] == doctest::Approx(2.52));
}

TEST_CASE("skeleton: --scale K divides the dominant loop; the runtime weights it back by N/run") {
  auto w = halo_ring(2, 400);
  const sk::Skeleton s = generate(build(w), 10);
  CHECK(s.scale == 10);
  CHECK(has(s.source, "i0 < 40;"));
  CHECK(has(s.source, "pskel_section(10.0);  /* scaled loop: 400 iterations run as 40 */"));
  CHECK(has(s.source, "pskel_section(1.0);"));
  REQUIRE(s.description["scaled_loops"].size() == 1);
  CHECK(s.description["scaled_loops"][0]["iterations"] == 400);
  CHECK(s.description["scaled_loops"][0]["run_iterations"] == 40);
  CHECK(s.description["main_loop"]["run_iterations"] == 40);
  // Compute outside the scaled loop runs 1/K of its work, accounted at factor K.
  CHECK(has(s.source, "pskel_compute_outside("));
}

TEST_CASE("skeleton: a remainder is weighted exactly (N / floor(N/K))") {
  auto w = halo_ring(2, 45);
  const sk::Skeleton s = generate(build(w), 10);
  REQUIRE(s.description["scaled_loops"].size() == 1);
  CHECK(s.description["scaled_loops"][0]["run_iterations"] == 4);
  CHECK(s.description["scaled_loops"][0]["factor"].get<double>() == doctest::Approx(11.25));
  CHECK(has(s.source, "pskel_section(11.25);"));
}

TEST_CASE("skeleton: a loop of fewer than 2K iterations runs them all, its compute scaled by 1/K") {
  // 11 iterations at K = 10: one iteration weighted by 11 would carry what only a first
  // iteration costs (first touch, connections made on first use) 11 times.
  auto w = halo_ring(2, 11, 50000);
  const sk::Skeleton s = generate(build(w), 10);
  CHECK(s.scale == 10);
  CHECK(has(s.source, "i0 < 11;"));
  CHECK(!has(s.source, "pskel_section("));
  CHECK(has(s.source, "/* scaled by work: all 11 iterations run, their compute 1/10"));
  CHECK(has(s.source, "pskel_compute_outside(25000.0);"));  // 50000 ns / 2 ns per unit
  CHECK(!has(s.source, "pskel_compute(25000.0);"));
  REQUIRE(s.description["scaled_loops"].size() == 1);
  const auto& loop = s.description["scaled_loops"][0];
  CHECK(loop["mode"] == "work");
  CHECK(loop["run_iterations"] == 11);
  CHECK(loop["factor"].get<double>() == doctest::Approx(10.0));
  CHECK(s.description["main_loop"]["run_iterations"] == 11);
  bool warned = false;
  for (const auto& line : s.description["warnings"])
    warned = warned || has(line.get<std::string>(), "a loop of 11 iterations");
  CHECK(warned);
  // The estimate shrinks the compute, not the calls: 11 x (50 us + 100 ns) of compute and 2
  // calls of 100 ns each, the compute by 10.
  CHECK(s.description["estimated_skeleton_seconds"].get<double>() <
        0.2 * s.description["traced_seconds"].get<double>());
}

TEST_CASE("skeleton: from 2K iterations on a loop is scaled by iterations, at least two run") {
  auto w = halo_ring(2, 25);
  const sk::Skeleton s = generate(build(w), 10);
  REQUIRE(s.description["scaled_loops"].size() == 1);
  CHECK(s.description["scaled_loops"][0]["mode"] == "iterations");
  CHECK(s.description["scaled_loops"][0]["run_iterations"] == 2);
  CHECK(has(s.source, "pskel_section(12.5);"));
}

TEST_CASE("skeleton: a main loop of few iterations lets its long inner loop be scaled instead") {
  // 11 x (Allreduce, 100 x Sendrecv): the inner loop carries the time and has enough
  // iterations to drop some; the outer runs all 11.
  auto w = pskel::test::world(2);
  for (int r = 0; r < 2; ++r) {
    w[r].timing(1000, 100);
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < 11; ++i) {
      w[r].collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
      for (int j = 0; j < 100; ++j) w[r].sendrecv(1 - r, 1 - r, 3, 100);
    }
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w), 10);
  REQUIRE(s.description["scaled_loops"].size() == 1);
  CHECK(s.description["scaled_loops"][0]["mode"] == "iterations");
  CHECK(s.description["scaled_loops"][0]["iterations"] == 100);
  CHECK(has(s.source, "i0 < 11;"));
  CHECK(has(s.source, "i1 < 10;"));
}

TEST_CASE("skeleton: a burst of interference in the traced run is left out of its compute") {
  // 200 iterations with 10 us of compute before each call; on rank 1, iterations 50-59 took
  // 100 us (another process on its core).
  auto w = pskel::test::world(2);
  for (int r = 0; r < 2; ++r) {
    w[r].timing(10000, 100);
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < 200; ++i) {
      w[r].timing(r == 1 && i >= 50 && i < 60 ? 100000 : 10000, 100);
      w[r].sendrecv(1 - r, 1 - r, 7, 1000);
      w[r].collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    }
    w[r].add(Fn::MPI_Finalize);
  }
  const Built b = build(w);
  sk::Skeleton s = generate(b);
  // 10 us at 2 ns per unit on both ranks: one literal, not a table of two values.
  CHECK(has(s.source, "pskel_compute(5000.0);"));
  CHECK(s.description["gaps"] == "typical");
  const auto& noise = s.description["trace_noise"];
  CHECK(noise["left_out_share"].get<double>() > 0.25);
  REQUIRE(noise["ranks"].size() == 1);
  CHECK(noise["ranks"][0]["rank"] == 1);
  CHECK(noise["ranks"][0]["left_out_seconds"].get<double>() == doctest::Approx(0.0018).epsilon(0.01));
  bool warned = false;
  for (const auto& line : s.description["warnings"])
    warned = warned || has(line.get<std::string>(), "the traced run was disturbed");
  CHECK(warned);

  // --gaps mean: the run as traced, the burst spread over every iteration of rank 1.
  sk::Options o;
  o.typical_gaps = false;
  auto plain = sk::generate(b.trace, b.merged, b.tree, o);
  REQUIRE(plain.ok());
  CHECK(plain.value().description["gaps"] == "mean");
  CHECK(has(plain.value().source, "7250.0"));  // 10 us + 10 x 90 us / 200, at 2 ns per unit
  CHECK(!has(s.source, "7250.0"));
}

TEST_CASE("skeleton: an undisturbed trace leaves nothing out and warns of nothing") {
  auto w = halo_ring(2, 200, 10000);
  const sk::Skeleton s = generate(build(w));
  CHECK(s.description["trace_noise"]["left_out_share"] == 0.0);
  CHECK(s.description["trace_noise"]["ranks"].empty());
  CHECK(s.description["warnings"].empty());
}

namespace {

// 100 iterations of 2 x 1 ms of compute on 2 ranks whose data grew by these many bytes after
// MPI_Init, a byte streamed at 0.01 ns by MPI_Finalize's probe on both.
constexpr double kRingComputePerIterationNs = 199 * 1e6 / 100;  // the first gap is the entry's
Built ring_with_footprints(int64_t rank0_bytes, int64_t rank1_bytes) {
  auto w = halo_ring(2, 100, 1000000);
  Built b = build(w);
  b.trace.ranks[0].footprint_bytes = rank0_bytes;
  b.trace.ranks[1].footprint_bytes = rank1_bytes;
  b.trace.meta["stream_ns_per_byte"] = {0.01, 0.01};
  return b;
}

}  // namespace

TEST_CASE("skeleton: a rank whose data outgrew the caches streams its share of each gap") {
  // Rank 0's 100 MB streamed once take 1 ms of the 1.99 ms of compute per iteration; rank 1's
  // 20 MB fit in the caches.
  Built b = ring_with_footprints(int64_t{100} << 20, int64_t{20} << 20);
  sk::Skeleton s = generate(b);
  const auto& memory = s.description["memory"];
  const double expected = (100 << 20) * 0.01 / kRingComputePerIterationNs;
  CHECK(memory["share"][0].get<double>() == doctest::Approx(expected));
  CHECK(memory["share"][1] == 0.0);
  CHECK(memory["working_set_bytes"][0].get<double>() == doctest::Approx(100 << 20));
  CHECK(has(s.source, "static const double pskel_memory[2][4] = {"));
  CHECK(has(s.source, ".memory = pskel_memory,"));

  // Data that would take longer to stream than the compute: capped, some work stays core-bound.
  b.trace.ranks[0].footprint_bytes = int64_t{1} << 30;
  s = generate(b);
  CHECK(s.description["memory"]["share"][0] == doctest::Approx(0.8));

  // No stream calibration (a trace of an older tracer), or no samples: core-bound only.
  b.trace.meta.erase("stream_ns_per_byte");
  s = generate(b);
  CHECK(s.description["memory"]["share"][0] == 0.0);
  CHECK(!has(s.source, "pskel_memory"));
  b.trace.meta["stream_ns_per_byte"] = {0.01, 0.01};
  b.trace.ranks[0].footprint_bytes = -1;
  s = generate(b);
  CHECK(!has(s.source, "pskel_memory"));
}

TEST_CASE("skeleton: a skeleton streams its bytes the way the trace's probes priced them") {
  Built b = ring_with_footprints(int64_t{100} << 20, int64_t{20} << 20);
  // A trace without stream_kind (before 2026-12-02) priced a byte read and written back.
  sk::Skeleton s = generate(b);
  CHECK(s.description["memory"]["stream_kind"] == "read_write");
  CHECK(has(s.source, ".stream_kind = PSKEL_STREAM_READ_WRITE,"));
  b.trace.meta["stream_kind"] = "read";
  s = generate(b);
  CHECK(s.description["memory"]["stream_kind"] == "read");
  CHECK(has(s.source, ".stream_kind = PSKEL_STREAM_READ,"));
  // The same share either way: the price already says what a byte of that kind costs.
  CHECK(s.description["memory"]["share"][0].get<double>() ==
        doctest::Approx((100 << 20) * 0.01 / kRingComputePerIterationNs));
}

TEST_CASE("skeleton: the run's memory probes price a byte before MPI_Finalize's single probe") {
  Built b = ring_with_footprints(int64_t{100} << 20, int64_t{100} << 20);
  // Rank 0 had enough probes in its run; rank 1 had too few (-1): it keeps the other value.
  b.trace.meta["stream_ns_per_byte_in_run"] = {0.005, -1};
  const sk::Skeleton s = generate(b);
  const auto& memory = s.description["memory"];
  CHECK(memory["stream_ns_per_byte"][0] == doctest::Approx(0.005));
  CHECK(memory["stream_ns_per_byte"][1] == doctest::Approx(0.01));
  CHECK(memory["share"][0].get<double>() ==
        doctest::Approx((100 << 20) * 0.005 / kRingComputePerIterationNs));
  CHECK(memory["share"][1].get<double>() ==
        doctest::Approx((100 << 20) * 0.01 / kRingComputePerIterationNs));
}

namespace {

// Rank r of three sends to the next before it receives from the one before, 20 times, a barrier
// after each: a deadlock unless the plan posts the receives first.
void send_first_ring(RankBuilder& rank, int r) {
  for (int i = 0; i < 20; ++i) {
    rank.send((r + 1) % 3, 1, 100000);
    rank.recv((r + 2) % 3, 1, 100000);
    rank.collective(Fn::MPI_Barrier);
  }
}

}  // namespace

TEST_CASE("skeleton: every rank sending before receiving is planned: receives first, one Waitall") {
  auto w = pskel::test::world(3);
  for (int r = 0; r < 3; ++r) {
    w[r].add(Fn::MPI_Init);
    send_first_ring(w[r], r);
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  REQUIRE(s.description["rewritten_groups"].size() == 1);
  CHECK(s.description["rewritten_groups"][0]["plan"] == "receives_first");
  const size_t irecv = s.source.find("MPI_Irecv(pskel_rbuf, 800000");
  const size_t isend = s.source.find("MPI_Isend(pskel_sbuf, 800000");
  REQUIRE(irecv != std::string::npos);
  REQUIRE(isend != std::string::npos);
  CHECK(irecv < isend);
  CHECK(has(s.source, "CHK(pskel_group_wait());"));
  CHECK(!has(s.source, "CHK(MPI_Send("));
}

// The plan's check steps a rank again only when a post may have released it: a blocking send
// is released by the receive that matches it, though its receiver sends nothing back. Had the
// pipeline below stalled the check, the ring after it would not have been reached, and its
// deadlock not planned away.
TEST_CASE("skeleton: a send released by its receive lets the plan's check reach a later deadlock") {
  auto w = pskel::test::world(3);
  for (int r = 0; r < 3; ++r) {
    w[r].add(Fn::MPI_Init);
    if (r > 0) w[r].recv(r - 1, 2, 100000);   // a pipeline 0 -> 1 -> 2, once
    if (r < 2) w[r].send(r + 1, 2, 100000);
    w[r].collective(Fn::MPI_Barrier);
    send_first_ring(w[r], r);
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  REQUIRE(s.description["rewritten_groups"].size() == 1);
  CHECK(s.description["rewritten_groups"][0]["plan"] == "receives_first");
}

// A collective releases every member when the last arrives, though the last sends nothing to
// them: ranks 0 and 1 then send to each other before receiving (a deadlock the plan must see),
// while rank 2, the last to arrive, only receives.
TEST_CASE("skeleton: a collective's last arrival lets the plan's check reach a later deadlock") {
  auto w = pskel::test::world(3);
  for (int r = 0; r < 3; ++r) {
    w[r].add(Fn::MPI_Init);
    w[r].collective(Fn::MPI_Barrier);
    for (int i = 0; i < 20; ++i) {
      if (r == 0) {
        w[r].send(1, 1, 100000);
        w[r].recv(1, 1, 100000);
        w[r].send(2, 1, 100000);
      } else if (r == 1) {
        w[r].send(0, 1, 100000);
        w[r].recv(0, 1, 100000);
      } else {
        w[r].recv(0, 1, 100000);
      }
      w[r].collective(Fn::MPI_Barrier);
    }
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  CHECK(s.description["rewritten_groups"].size() >= 1);
}

TEST_CASE("skeleton: an even/odd ordered exchange is safe as traced and keeps each rank's order") {
  auto w = pskel::test::world(2);
  for (int r = 0; r < 2; ++r) {
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < 10; ++i) {
      if (r == 0) {
        w[r].send(1, 1, 100000);
        w[r].recv(1, 1, 100000);
      } else {
        w[r].recv(0, 1, 100000);
        w[r].send(0, 1, 100000);
      }
      w[r].collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    }
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  CHECK(s.description["rewritten_groups"].empty());
  // The merge puts sends first on every rank; the skeleton restores rank 1's receive-first order.
  CHECK(s.description["reordered_groups"].size() == 1);
  const size_t branch = s.source.find("} else {");
  REQUIRE(branch != std::string::npos);
  CHECK(s.source.find("MPI_Recv(", branch) < s.source.find("MPI_Send(", branch));
}

TEST_CASE("skeleton: non-blocking requests are completed by the completions that completed them") {
  auto w = pskel::test::world(2);
  for (int r = 0; r < 2; ++r) {
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < 8; ++i) {
      const uint32_t a = w[r].irecv(1 - r, 3, 50);
      const uint32_t b = w[r].isend(1 - r, 3, 50);
      w[r].complete(Fn::MPI_Waitall, {a, b});
    }
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  CHECK(has(s.source, "pskel_request("));
  CHECK(has(s.source, "MPI_Request r[2];"));
  CHECK(has(s.source, "pskel_take(r, 2, 2, "));
  CHECK(has(s.source, "CHK(MPI_Waitall(2, r, pskel_statuses));"));
  CHECK(has(s.source, "pskel_give_back(r, 2);"));
  CHECK((has(s.source, "1 - rank") || has(s.source, "(rank + 1) % size")));
}

TEST_CASE("skeleton: a completion whose instances complete different requests in turn follows them") {
  auto w = pskel::test::world(2);
  for (int r = 0; r < 2; ++r) {
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < 10; ++i) {
      const uint32_t a = w[r].irecv(1 - r, 3, 50);
      const uint32_t b = w[r].isend(1 - r, 3, 50);
      w[r].complete(Fn::MPI_Wait, {a});  // the two Waits fold into one event: (Wait)^2
      w[r].complete(Fn::MPI_Wait, {b});
    }
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  CHECK(has(s.source, "% 2) {  /* instances complete different requests in turn */"));
  CHECK(count(s.source, "case 0:") == 1);
  CHECK(count(s.source, "case 1:") == 1);
}

TEST_CASE("skeleton: persistent requests are made once, started and completed in the loop, freed") {
  auto w = pskel::test::world(2);
  for (int r = 0; r < 2; ++r) {
    w[r].add(Fn::MPI_Init);
    const uint32_t rq = w[r].recv_init(1 - r, 5);
    const uint32_t sq = w[r].send_init(1 - r, 5);
    for (int i = 0; i < 12; ++i) {
      tr::Record& st = w[r].add(Fn::MPI_Startall, {rq, sq});
      st.count = 2;
      st.request = rq;
      w[r].complete(Fn::MPI_Waitall, {rq, sq});
    }
    w[r].add(Fn::MPI_Request_free).request = rq;
    w[r].add(Fn::MPI_Request_free).request = sq;
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  CHECK(count(s.source, "MPI_Recv_init(") == 1);
  CHECK(count(s.source, "MPI_Send_init(") == 1);
  CHECK(has(s.source, "pskel_persistent("));
  CHECK(has(s.source, "r[k] = *pskel_started("));
  CHECK(has(s.source, "CHK(MPI_Startall(2, r));"));
  CHECK(count(s.source, "pskel_free_request(") >= 1);
}

TEST_CASE("skeleton: a sub-communicator is made again with the members and order it had") {
  auto w = pskel::test::world(4);
  for (int r = 0; r < 4; ++r) {
    w[r].add(Fn::MPI_Init);
    // Rows of two: {0, 1} and {2, 3}; each rank sees its row as communicator id 2.
    const int64_t a = r < 2 ? 0 : 2;
    w[r].comm_define(2, {a, a + 1});
    tr::Record& split = w[r].add(Fn::MPI_Comm_split, {2});
    split.comm = tr::kCommWorld;
    for (int i = 0; i < 6; ++i) w[r].collective(Fn::MPI_Bcast, 10, static_cast<int32_t>(a), tr::Op::none, 2);
    w[r].add(Fn::MPI_Comm_free).comm = 2;
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  CHECK(has(s.source, "CHK(MPI_Comm_split(pskel_comm[0], "));
  CHECK(has(s.source, "pskel_comm_out("));
  // The root is world rank 0 or 2: rank 0 of each row's communicator.
  CHECK(has(s.source, "MPI_Bcast(pskel_rbuf, 80, MPI_BYTE, 0, pskel_comm["));
  CHECK(has(s.source, "CHK(MPI_Comm_free(&pskel_comm["));
  CHECK(s.description["communicators"].size() == 2);
}

TEST_CASE("skeleton: a wildcard receive is posted with MPI_ANY_SOURCE") {
  auto w = pskel::test::world(3);
  for (int r = 0; r < 3; ++r) w[r].add(Fn::MPI_Init);
  for (int i = 0; i < 4; ++i) {
    w[1].send(0, 9, 2);
    w[2].send(0, 9, 2);
    w[0].recv_any(1, 9, 2);
    w[0].recv_any(2, 9, 2);
  }
  for (int r = 0; r < 3; ++r) w[r].add(Fn::MPI_Finalize);
  const sk::Skeleton s = generate(build(w));
  CHECK(has(s.source, "MPI_ANY_SOURCE"));
}

TEST_CASE("skeleton: auto scale aims at a tenth of the traced time, capped by the main loop") {
  // 1000 iterations of ~2 ms each per rank: 2 s traced; target max(0.2 s, min_seconds).
  auto w = halo_ring(2, 1000, 2000000);
  const Built b = build(w);
  sk::Options o;
  o.auto_scale = true;
  o.min_seconds = 0.1;
  auto g = sk::generate(b.trace, b.merged, b.tree, o);
  REQUIRE(g.ok());
  CHECK(g.value().scale >= 8);
  CHECK(g.value().scale <= 12);
  CHECK(g.value().description["scale_mode"] == "auto");
  o.min_seconds = 100;  // longer than the run: no scaling
  auto whole = sk::generate(b.trace, b.merged, b.tree, o);
  REQUIRE(whole.ok());
  CHECK(whole.value().scale == 1);
}

TEST_CASE("skeleton: a trace without a usable calibration is an error, not a guess") {
  auto w = halo_ring(2, 5);
  const Built b = build(w, 0.0);
  auto g = sk::generate(b.trace, b.merged, b.tree, sk::Options{});
  REQUIRE(!g.ok());
  CHECK(has(g.error().line(), "calibration"));
}

TEST_CASE("skeleton: a loop tree of another trace is refused") {
  auto w = halo_ring(2, 5);
  auto v = halo_ring(2, 7);
  const Built a = build(w), b = build(v);
  auto g = sk::generate(a.trace, a.merged, b.tree, sk::Options{});
  REQUIRE(!g.ok());
  CHECK(has(g.error().line(), "does not match"));
}

TEST_CASE("skeleton: a rank handed to the generator with fewer records than were merged is an error") {
  auto w = halo_ring(4, 20);
  Built b = build(w);
  const tr::TraceSet kept = without_records(b.trace);
  sk::Generator generator(kept, b.merged, b.tree);
  for (size_t r = 0; r < b.trace.ranks.size(); ++r) {
    tr::RankTrace rank = b.trace.ranks[r];
    rank.source = "rank." + std::to_string(r) + ".pskt";
    if (r == 2) rank.records.resize(rank.records.size() / 2);
    generator.add(rank);
  }
  auto g = generator.finish(sk::Options{});
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().file == "rank.2.pskt");
  CHECK(has(g.error().what, "fewer than were merged"));
}

TEST_CASE("skeleton: a generator given fewer ranks than the trace has is an error") {
  auto w = halo_ring(4, 20);
  Built b = build(w);
  sk::Generator generator(b.trace, b.merged, b.tree);
  for (size_t r = 0; r + 1 < b.trace.ranks.size(); ++r) generator.add(b.trace.ranks[r]);
  auto g = generator.finish(sk::Options{});
  REQUIRE_FALSE(g.ok());
  CHECK(has(g.error().what, "3 of the trace's 4 ranks"));
}

TEST_CASE("skeleton: the runtime sources are embedded and listed for compiling") {
  bool header = false, work = false, stream = false;
  for (const sk::RuntimeFile& f : sk::runtime_files()) {
    header = header || (f.name == "pskel_runtime.h" && has(std::string(f.text), "pskel_begin"));
    work = work || (f.name == "work.c" && has(std::string(f.text), "pskel_work"));
    stream = stream || (f.name == "stream.c" && has(std::string(f.text), "pskel_stream"));
  }
  CHECK(header);
  CHECK(work);
  CHECK(stream);
  const auto units = sk::compile_units();
  REQUIRE(units.size() == 4);
  CHECK(units[0] == "skeleton.c");
}

TEST_CASE("skeleton: a loop's entry gap replaces its first call's gap in the first iteration") {
  // Per iteration: a long compute (9000 ns) before the first Allreduce and a short one (1000 ns)
  // before the second; the two fold into one event in a loop of 2, whose first instance's gap
  // is the loop's entry gap (S1) and whose in-loop mean is the second's.
  auto w = pskel::test::world(2);
  for (int r = 0; r < 2; ++r) {
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < 6; ++i) {
      w[r].timing(500, 100);
      w[r].send(1 - r, 1, 1, Fn::MPI_Sendrecv).source = 1 - r;
      w[r].timing(9000, 100);
      w[r].collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
      w[r].timing(1000, 100);
      w[r].collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    }
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w, 1.0));
  CHECK(has(s.source, "for (long i1 = 0; i1 < 2; ++i1) {"));
  CHECK(has(s.source, "if (i1 > 0) {  /* iteration 0: the loop's entry gap instead */"));
  CHECK(has(s.source, "pskel_compute(9000.0);"));  // the entry gap, before the inner loop
  CHECK(has(s.source, "pskel_compute(1000.0);"));  // the in-loop gap, iterations 1..
}

// Issue 22: meta.json's `mpi` text was pasted unescaped into a comment of skeleton.c: "*/" ended
// the comment and what followed was compiled and run. Text from the trace or the command line
// now reaches the source only as comment text that cannot end its comment, and as an escaped
// string literal (no quote, backslash, newline or trigraph of its own).
TEST_CASE("TraceTextCannotEndTheSkeletonsCommentOrStringLiteral") {
  auto w = halo_ring(2, 20);
  Built b = build(w);
  b.trace.meta["mpi"] = "mpich */ int injected_by_trace = 1; /* \n#include </etc/shadow>";
  sk::Options o;
  o.name = "app\" ; int injected_by_name = 1; //?" "?/\n\xff";  // "?" "?": no trigraph here
  const auto g = sk::generate(b.trace, b.merged, b.tree, o);
  REQUIRE_MESSAGE(g.ok(), g.error().line());
  const std::string& src = g.value().source;
  // The header comment ends once, where pskel ends it.
  CHECK(src.find("*/") == src.find(" */\n#include \"pskel_runtime.h\"") + 1);
  CHECK_FALSE(has(src, "\n#include </etc/shadow>"));
  // The name's literal: one line, its quote and backslash escaped, no trigraph.
  const size_t at = src.find(".name = ");
  REQUIRE(at != std::string::npos);
  const std::string line = src.substr(at, src.find('\n', at) - at);
  CHECK(line == ".name = \"app\\\" ; int injected_by_name = 1; //\\?\\?/\\012\\377\",");
}

TEST_CASE("skeleton: peers on a grid with MPI_PROC_NULL edges are rules, not per-rank tables") {
  const int ranks = 512;  // 8 x 8 x 8
  const sk::Skeleton s = generate(synthetic(pskel::test::Pattern::halo3d, ranks, 140));
  CHECK(has(s.source, "(rank % 8 > 0 ? rank - 1 : MPI_PROC_NULL)"));
  CHECK(has(s.source, "(rank % 8 < 7 ? rank + 1 : MPI_PROC_NULL)"));
  CHECK(has(s.source, "(rank / 8 % 8 > 0 ? rank - 8 : MPI_PROC_NULL)"));
  CHECK(has(s.source, "(rank / 64 % 8 < 7 ? rank + 64 : MPI_PROC_NULL)"));
  for (size_t at = s.source.find("static const int "); at != std::string::npos;
       at = s.source.find("static const int ", at + 1))  // per-rank int tables: peers, tags
    CHECK(s.source.substr(at, s.source.find('\n', at) - at).find("[512]") == std::string::npos);
  // The gaps are noise around one median on every rank: one value each, not a table.
  CHECK(!has(s.source, "static const double"));
  CHECK(has(s.source, "512 ranks alike within their noise: the largest"));
}

namespace {

// Every rank: Init, 60 x (gap, Allreduce), Finalize; gaps 1000 ns x `share(rank)` with the same
// noise (+-10 %) on every rank.
std::vector<RankBuilder> noisy_allreduce(int ranks, double (*share)(int)) {
  auto w = pskel::test::world(ranks);
  for (int r = 0; r < ranks; ++r) {
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < 60; ++i) {
      const double noise = 0.9 + 0.2 * static_cast<double>((i * 7 + r * 13) % 11) / 10;
      w[r].timing(static_cast<int64_t>(1000 * share(r) * noise), 100);
      w[r].collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    }
    w[r].add(Fn::MPI_Finalize);
  }
  return w;
}

}  // namespace

TEST_CASE("skeleton: ranks that compute alike within their noise replay one value, the largest") {
  auto alike = noisy_allreduce(16, [](int) { return 1.0; });
  const sk::Skeleton s = generate(build(alike, 1.0));
  CHECK(!has(s.source, "_work["));
  CHECK(has(s.source, "16 ranks alike within their noise: the largest"));
  // The largest rank mean: no rank computes less than it did, none more than the slowest.
  const size_t at = s.source.find("pskel_compute(", s.source.find("for (long"));
  REQUIRE(at != std::string::npos);
  const double units = std::stod(s.source.substr(at + 14));
  CHECK(units > 1000);
  CHECK(units < 1100);
}

TEST_CASE("skeleton: a rank that computes more than its noise explains keeps its own value") {
  // Rank 5 computes 10 % more: as much as the noise of one gap, but over 60 of them it is real.
  auto one_slower = noisy_allreduce(16, [](int r) { return r == 5 ? 1.1 : 1.0; });
  const sk::Skeleton s = generate(build(one_slower, 1.0));
  // In the loop: a table. (The gaps before the loop and before Finalize, one a rank, are
  // within one gap's noise of each other: one value.)
  CHECK(has(s.source, "_work[16] = {"));
  const size_t loop = s.source.find("for (long i0 = 0; i0 < 60; ++i0) {");
  REQUIRE(loop != std::string::npos);
  CHECK(s.source.find("_work[rank]);", loop) < s.source.find("}", loop));
}

TEST_CASE("skeleton: a wavefront's edges are grid conditions; it receives, computes, then sends") {
  // 16 x 16 ranks: each block is received from the north and the west, computed, and sent to
  // the south and the east (then back). The first row and column receive from fewer
  // neighbours, the last send to fewer: conditions on the grid, not tables.
  const int ranks = 256;
  const sk::Skeleton s = generate(synthetic(pskel::test::Pattern::wavefront, ranks, 200));
  CHECK(!has(s.source, "[256]"));  // no table of any kind as long as the job
  for (const char* edge : {"if (rank >= 16) {", "if (rank % 16 > 0) {", "if (rank < 240) {",
                           "if (rank % 16 < 15) {"})
    CHECK(has(s.source, edge));
  // The lower sweep, as the program makes it: the receives, then the block's compute, then the
  // sends. Sent first, the skeleton would not wait for its upstream neighbour's block.
  const size_t sweep = s.source.find("for (long i1 = 0; i1 < 8; ++i1) {");
  REQUIRE(sweep != std::string::npos);
  const size_t recv_north = s.source.find("MPI_Recv(pskel_rbuf", sweep);
  const size_t compute = s.source.find("pskel_compute(", sweep);
  const size_t send_south = s.source.find("MPI_Send(pskel_sbuf", sweep);
  REQUIRE(recv_north != std::string::npos);
  REQUIRE(send_south != std::string::npos);
  CHECK(recv_north < compute);
  CHECK(compute < send_south);
  const size_t line_end = s.source.find('\n', recv_north);
  const std::string first_receive = s.source.substr(recv_north, line_end - recv_north);
  CHECK(has(first_receive, "rank - 16"));  // from the north
  // Two receives and two sends a sweep, one call site each, and the Allreduce.
  size_t calls = 0;
  for (size_t at = s.source.find("CHK(MPI_"); at != std::string::npos;
       at = s.source.find("CHK(MPI_", at + 1))
    ++calls;
  CHECK(calls == 9);
}

TEST_CASE("skeleton: edge ranks that skip their missing neighbours' calls need no table as long as the job") {
  // halo3d-skip: 27 kinds of rank, each with its own calls, requests and counts. At 64 ranks
  // the tables are small enough to stay plain.
  const sk::Skeleton small = generate(synthetic(pskel::test::Pattern::halo3d_skip, 64, 140));
  const sk::Skeleton large = generate(synthetic(pskel::test::Pattern::halo3d_skip, 1024, 140));
  CHECK(has(large.source, "pskel_grid_place(rank, 16, 8, 8)"));
  CHECK(!has(large.source, "[1024]"));
  CHECK(large.source.size() < 2 * small.source.size());
  MESSAGE("skeleton.c of 64 ranks " << small.source.size() << " bytes, of 1,024 " << large.source.size());
}

TEST_CASE("skeleton: a periodic grid's neighbour wraps within its row") {
  auto w = pskel::test::world(12);  // 3 rows of 4, periodic along the rows
  for (int r = 0; r < 12; ++r) {
    const int east = r / 4 * 4 + (r % 4 + 1) % 4, west = r / 4 * 4 + (r % 4 + 3) % 4;
    w[r].add(Fn::MPI_Init);
    for (int i = 0; i < 20; ++i) w[r].sendrecv(east, west, 3, 100);
    w[r].add(Fn::MPI_Finalize);
  }
  const sk::Skeleton s = generate(build(w));
  CHECK(has(s.source, "(rank % 4 < 3 ? rank + 1 : rank - 3)"));
  CHECK(has(s.source, "(rank % 4 > 0 ? rank - 1 : rank + 3)"));
}

TEST_CASE("skeleton: a master answers whoever reported first, and its skeleton does not grow with the ranks") {
  // Masters of 64 ranks each; results arrive in a different order every round.
  const sk::Skeleton small = generate(synthetic(pskel::test::Pattern::master_worker, 64, 800));
  const sk::Skeleton large = generate(synthetic(pskel::test::Pattern::master_worker, 1024, 800));
  for (const sk::Skeleton* s : {&small, &large}) {
    CHECK(has(s->source, "pskel_last_source"));  // the reply goes where the skeleton's run says
    CHECK(has(s->source, "pskel_recv("));        // ... remembered by its wildcard receive
    for (const char* table : {"static const int ", "static const double ", "static const unsigned char "})
      CHECK(!has(s->source, table));             // no per-rank table of any kind
  }
  CHECK(has(large.source, "(rank % 64 == 0 ? MPI_ANY_SOURCE : rank / 64 * 64)"));
  CHECK(large.source.size() < 2 * small.source.size());
  MESSAGE("skeleton.c of 64 ranks " << small.source.size() << " bytes, of 1,024 " << large.source.size());
}

TEST_CASE("skeleton tables: values that follow a rank's place on a 3-D grid are a table of 27") {
  using pskel::skeleton::detail::Tables;
  const int nx = 8, ny = 4, nz = 16, n = nx * ny * nz;
  const std::vector<bool> all(n, true);
  // How many neighbours a rank has: 6 inside, fewer on a face, an edge, a corner.
  std::vector<int64_t> neighbours(n, 0);
  std::vector<bool> above(n);  // not in the first row of its plane
  for (int r = 0; r < n; ++r) {
    const int c[3] = {r % nx, r / nx % ny, r / (nx * ny)}, d[3] = {nx, ny, nz};
    for (int a = 0; a < 3; ++a) neighbours[static_cast<size_t>(r)] += (c[a] > 0) + (c[a] < d[a] - 1);
    above[static_cast<size_t>(r)] = c[1] > 0;
  }
  Tables t(n);
  CHECK(t.ints("e13_passed", neighbours, all) ==
        "e13_passed_places[pskel_grid_place(rank, 8, 4, 16)]");
  CHECK(has(t.declarations(), "static const int e13_passed_places[27] = {3, 4, 3, 4, 5, 4, 3, 4, "
                              "3, 4, 5, 4, 5, 6, 5, 4, 5, 4, 3, 4, 3, 4, 5, 4, 3, 4, 3};"));
  CHECK(t.condition(above, all) == "takes_part_places[pskel_grid_place(rank, 8, 4, 16)]");
  // One rank that breaks the pattern: no grid fits, and the table is a plain one again.
  neighbours[100] = 9;
  CHECK(t.ints("broken", neighbours, all) == "broken[rank]");
}

// The generator picks a table's entries by grid_place() and the skeleton reads them back by
// pskel_grid_place(): where the two disagree on any rank, that rank runs another rank's values.
TEST_CASE("skeleton tables: some columns of some rows of a 2-D grid are one condition") {
  // 16 x 16 ranks: off the first column and the last row; and a peer that is one of two
  // offsets told apart by such a set (one call merged from two statements).
  using pskel::skeleton::detail::Tables;
  const int n = 256;
  std::vector<bool> all(n, true), inner(n);
  std::vector<int64_t> west_or_south(n);
  for (int r = 0; r < n; ++r) {
    inner[static_cast<size_t>(r)] = r % 16 > 0 && r / 16 < 15;
    west_or_south[static_cast<size_t>(r)] = r % 16 > 0 ? r - 1 : r + 16;
  }
  Tables t(n);
  CHECK(t.condition(inner, all) == "rank % 16 > 0 && rank / 16 < 15");
  CHECK(t.ints("peer", west_or_south, all) == "(rank % 16 == 0 ? rank + 16 : rank - 1)");
}

TEST_CASE("skeleton tables: the runtime's pskel_grid_place is the generator's grid_place") {
  struct Grid {
    int nx, ny, nz;
  };
  const Grid grids[] = {{1, 1, 1}, {2, 1, 1}, {1, 3, 1}, {2, 2, 2}, {4, 4, 4},
                        {8, 4, 16}, {16, 8, 8}, {3, 5, 7}, {1, 1, 17}, {5, 1, 3}};
  for (const Grid& g : grids) {
    for (int rank = 0; rank < g.nx * g.ny * g.nz; ++rank) {
      INFO("rank ", rank, " of ", g.nx, "x", g.ny, "x", g.nz);
      const int generated = pskel::skeleton::detail::grid_place(rank, g.nx, g.ny, g.nz);
      CHECK(pskel_grid_place(rank, g.nx, g.ny, g.nz) == generated);
      CHECK(generated >= 0);
      CHECK(generated < 27);  // the length of the generated tables
    }
  }
}

TEST_CASE("skeleton tables: values of ranks that really differ are compressed where that saves half") {
  using pskel::skeleton::detail::Tables;
  const int n = 4096;
  const std::vector<bool> all(n, true);
  Tables t(n);
  // Blocks of ranks: runs, found by a binary search over their starts.
  std::vector<int64_t> blocks(n);
  for (int r = 0; r < n; ++r) blocks[static_cast<size_t>(r)] = r < 1000 ? 7 : r < 3000 ? 9 : r == 4000 ? 11 : 3;
  const std::string runs = t.ints("blocks", blocks, all);
  CHECK(runs == "blocks_runs[pskel_run(blocks_starts, 5, rank)]");
  CHECK(has(t.declarations(), "static const int blocks_starts[5] = {0, 1000, 3000, 4000, 4001};"));
  CHECK(has(t.declarations(), "static const int blocks_runs[5] = {7, 9, 3, 11, 3};"));
  // A few values, scattered: an index into them.
  std::vector<double> scattered(n);
  for (int r = 0; r < n; ++r) scattered[static_cast<size_t>(r)] = 1000.5 + 250 * ((r * 7919) % 3);
  CHECK(t.doubles("work", scattered, all) == "work_values[work_index[rank]]");
  CHECK(has(t.declarations(), "static const double work_values[3] = {1000.5, 1500.5, 1250.5};"));
  CHECK(has(t.declarations(), "static const unsigned char work_index[4096] = {0, "));
  // Values that are all different stay a plain table; so do small tables.
  std::vector<double> distinct(n);
  for (int r = 0; r < n; ++r) distinct[static_cast<size_t>(r)] = 1000.5 + r;
  CHECK(t.doubles("distinct", distinct, all) == "distinct[rank]");
  Tables small(4);
  CHECK(small.ints("two", {5, 5, 5, 6}, std::vector<bool>(4, true)) == "(rank != 3 ? 5 : 6)");
  CHECK(small.doubles("few", {1.5, 2.5, 3.5, 1.5}, std::vector<bool>(4, true)) == "few[rank]");
}

namespace {

// Rank r's MPI_Alltoallv on the world: it sends r + 2j + 1 elements of 8 bytes to rank j, so
// it receives j + 2r + 1 from rank j.
void alltoallv(RankBuilder& b, int r, int n) {
  std::vector<int64_t> words{n};
  int64_t elements = 0;
  for (int j = 0; j < n; ++j) words.push_back(r + 2 * j + 1), elements += r + 2 * j + 1;
  words.push_back(n);
  int64_t received = 0;
  for (int j = 0; j < n; ++j) words.push_back(j + 2 * r + 1), received += j + 2 * r + 1;
  tr::Record& a = b.add(Fn::MPI_Alltoallv, tr::kCommWorld);
  a.count = elements;
  a.recv_count = received;
  a.type_size = a.recv_type_size = 8;
  a.bytes = (elements + received) * 8;
  b.append_aux(a, words);
}

// Four ranks using every part of the analysis the emitter reads back: a sub-communicator (rows
// of two), non-blocking and persistent requests, v-collectives on the world and on a row, a
// broadcast rooted in each row, and a wildcard receive; per-rank compute that differs.
std::vector<RankBuilder> mixed_trace() {
  constexpr int n = 4;
  auto w = pskel::test::world(n);
  for (int r = 0; r < n; ++r) {
    RankBuilder& b = w[r];
    b.timing(20'000 + 3'000 * r, 400);
    b.add(Fn::MPI_Init);
    const int64_t row = r < 2 ? 0 : 2;
    b.comm_define(2, {row, row + 1});
    b.add(Fn::MPI_Comm_split, {2}).comm = tr::kCommWorld;
    const int left = (r + n - 1) % n, right = (r + 1) % n;
    const uint32_t persistent_recv = b.recv_init(left, 5);
    const uint32_t persistent_send = b.send_init(right, 5);
    for (int i = 0; i < 30; ++i) {
      const uint32_t from_left = b.irecv(left, 3, 64);
      const uint32_t to_right = b.isend(right, 3, 64);
      b.complete(Fn::MPI_Waitall, {from_left, to_right});
      b.startall({persistent_recv, persistent_send});
      b.complete(Fn::MPI_Waitall, {persistent_recv, persistent_send});
      alltoallv(b, r, n);
      tr::Record& gathered = b.add(Fn::MPI_Allgatherv, static_cast<uint16_t>(2));
      gathered.count = 3;
      gathered.recv_count = 6;
      gathered.type_size = gathered.recv_type_size = 8;
      gathered.bytes = 9 * 8;
      b.append_aux(gathered, {0, 2, 3, 3});
      b.collective(Fn::MPI_Bcast, 16, static_cast<int32_t>(row), tr::Op::none, 2);
      b.collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    }
    for (int k = 1; k < n; ++k) {
      if (r == 0) b.recv_any(k, 9, 2);
      if (r == k) b.send(0, 9, 2);
    }
    b.add(Fn::MPI_Request_free).request = persistent_recv;
    b.add(Fn::MPI_Request_free).request = persistent_send;
    b.add(Fn::MPI_Comm_free).comm = 2;
    b.add(Fn::MPI_Finalize);
  }
  return w;
}

// The first line where `got` and `want` differ, for the failure message.
std::string first_difference(const std::string& got, const std::string& want) {
  std::istringstream a(got), b(want);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "no difference";
    if (la != lb || more_a != more_b)
      return "line " + std::to_string(line) + ":\n  got:  " + (more_a ? la : "(end)") +
             "\n  want: " + (more_b ? lb : "(end)");
  }
}

}  // namespace

// The generated skeleton of one fixed trace, byte for byte: any change to the analysis or the
// emitter shows here and must be deliberate. PSKEL_UPDATE_GOLDEN=1 rewrites the files (then
// read their diff before committing it).
TEST_CASE("skeleton: the skeleton of a trace with communicators, requests and v-collectives is its golden file") {
  auto ranks = mixed_trace();
  const Built b = build(ranks);
  for (const int64_t scale : {1, 10}) {
    CAPTURE(scale);
    const sk::Skeleton s = generate(b, scale);
    const std::string base = std::string(PSKEL_GOLDEN_DIR) + "/mixed.scale" + std::to_string(scale);
    const std::string description = s.description.dump(2) + "\n";
    if (std::getenv("PSKEL_UPDATE_GOLDEN") != nullptr) {
      std::ofstream(base + ".c", std::ios::binary) << s.source;
      std::ofstream(base + ".json", std::ios::binary) << description;
    }
    constexpr uint64_t kMaxGoldenBytes = 1 << 20;
    const auto want_source = pskel::read_regular_file(base + ".c", kMaxGoldenBytes);
    REQUIRE_MESSAGE(want_source.ok(), want_source.error().line(),
                    " (PSKEL_UPDATE_GOLDEN=1 writes it)");
    // Compared as flags: doctest would print both files whole.
    const bool same_source = s.source == want_source.value();
    CHECK_MESSAGE(same_source, base, ".c: ", first_difference(s.source, want_source.value()));
    const auto read_description = pskel::read_regular_file(base + ".json", kMaxGoldenBytes);
    REQUIRE_MESSAGE(read_description.ok(), read_description.error().line(),
                    " (PSKEL_UPDATE_GOLDEN=1 writes it)");
    const std::string& want_description = read_description.value();
    const bool same_description = description == want_description;
    CHECK_MESSAGE(same_description, base, ".json: ",
                  first_difference(description, want_description));
  }
}

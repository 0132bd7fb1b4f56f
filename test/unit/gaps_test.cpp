// Compute gaps less the time lost to the run queue and to the tracer's calibration probes
// (core/trace/gaps): LostTimeCurve, compute_gaps and run_delay_fraction on rank traces built by
// hand, and read_trace_dir taking both from a trace directory's samples.<N> files.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "test_support.h"
#include "trace/gaps.h"
#include "trace/reader.h"

using namespace pskel::test;
namespace tr = pskel::trace;
using Fn = tr::FunctionId;

namespace {

// A call of `f` from `start` to `end` on the rank's trace clock, every other field empty.
void call(tr::RankTrace& rank, Fn f, int64_t start, int64_t end) {
  tr::Record r{};
  r.function = fid(f);
  r.t_start = start;
  r.t_end = end;
  rank.aux_begin.push_back(rank.aux.size());
  rank.records.push_back(r);
}

tr::RankTrace delayed_rank(std::vector<tr::RunDelayPoint> run_delay) {
  tr::RankTrace rank;
  rank.run_delay = std::move(run_delay);
  return rank;
}

}  // namespace

TEST_CASE("without run-queue delays a gap is the time since the previous call ended, the first from 0") {
  tr::RankTrace rank;
  call(rank, Fn::MPI_Send, 100, 150);
  call(rank, Fn::MPI_Recv, 400, 420);
  call(rank, Fn::MPI_Barrier, 1000, 1100);
  CHECK(tr::compute_gaps(rank) == std::vector<int64_t>{100, 250, 580});
  CHECK(tr::run_delay_fraction(rank) == 0.0);
}

TEST_CASE("a gap loses the run-queue delay that fell within it") {
  // 500 ns of delay spread evenly over [0, 1000]: 200 ns of it lie in the gap [200, 600].
  tr::RankTrace rank = delayed_rank({{0, 0}, {1000, 500}});
  call(rank, Fn::MPI_Send, 0, 200);
  call(rank, Fn::MPI_Recv, 600, 700);
  CHECK(tr::compute_gaps(rank) == std::vector<int64_t>{0, 400 - 200});
}

TEST_CASE("a gap spanning several sample intervals loses the delay of each part") {
  // No delay in [0, 100], 100 ns in [100, 200], none after: the gap [50, 250] holds all 100.
  tr::RankTrace rank = delayed_rank({{0, 0}, {100, 0}, {200, 100}, {300, 100}});
  call(rank, Fn::MPI_Send, 10, 50);
  call(rank, Fn::MPI_Recv, 250, 260);
  call(rank, Fn::MPI_Send, 280, 290);
  CHECK(tr::compute_gaps(rank) == std::vector<int64_t>{10, 200 - 100, 20});
}

TEST_CASE("a gap is never negative, whatever the delay or the order of the calls") {
  // A delay growing faster than time (a damaged or foreign file) would make it negative.
  tr::RankTrace rank = delayed_rank({{0, 0}, {100, 1000}});
  call(rank, Fn::MPI_Send, 50, 60);
  // Starts before the previous call ended (threads, clock steps): no gap, not a negative one.
  call(rank, Fn::MPI_Recv, 55, 70);
  call(rank, Fn::MPI_Send, 1000, 1001);
  const std::vector<int64_t> gaps = tr::compute_gaps(rank);
  REQUIRE(gaps.size() == 3);
  CHECK(gaps[0] == 0);   // 50 ns traced, 500 ns of delay
  CHECK(gaps[1] == 0);
  CHECK(gaps[2] == 1000 - 70 - (1000 - 700));
}

// The sampler reads the delay at the first call boundary after each ms but writes it only when
// it grew; before a grown value it also writes its last unchanged reading (core/tracer/
// sampler.cpp), so that a wait after a quiet stretch stays in the gap it fell in instead of
// being spread back over the stretch.
TEST_CASE("a wait after a quiet stretch is taken out of the gap it fell in") {
  constexpr int64_t ms = 1'000'000;
  // The first sample at t = 0; calls every ms, 0.1 ms long, read the delay (unchanged: no line);
  // then a 9.9 ms gap during which the rank waited 5 ms; the call after it writes the last
  // unchanged reading ("d 40.1ms 0", at the end of the call before the gap) and "d 50ms 5ms".
  tr::RankTrace rank = delayed_rank({{0, 0}, {40 * ms + ms / 10, 0}, {50 * ms, 5 * ms}});
  for (int64_t i = 0; i <= 40; ++i) call(rank, Fn::MPI_Send, i * ms, i * ms + ms / 10);
  call(rank, Fn::MPI_Recv, 50 * ms, 50 * ms + ms / 10);
  const std::vector<int64_t> gaps = tr::compute_gaps(rank);
  CHECK(gaps[1] == ms - ms / 10);   // a quiet gap loses nothing
  CHECK(gaps[41] == 99 * ms / 10 - 5 * ms);
  // Without the unchanged reading the wait was spread over the 50 ms: 8.91 ms and 0.81 ms.
  tr::RankTrace without = delayed_rank({{0, 0}, {50 * ms, 5 * ms}});
  without.records = rank.records;
  CHECK(tr::compute_gaps(without)[41] > 8 * ms);
}

TEST_CASE("a pseudo-record or a record of an unknown function has no gap and does not end one") {
  tr::RankTrace rank;
  call(rank, Fn::MPI_Send, 50, 100);
  call(rank, Fn::pskel_comm_define, 150, 9'000'000);   // its late t_end must not count
  call(rank, Fn::MPI_Recv, 300, 400);
  call(rank, Fn::MPI_Send, 500, 8'000'000);
  rank.records.back().function = 999;                  // from a newer tracer
  call(rank, Fn::MPI_Barrier, 600, 700);
  CHECK(tr::compute_gaps(rank) == std::vector<int64_t>{50, 0, 300 - 100, 0, 600 - 400});
}

TEST_CASE("a calibration probe is taken out of the gap after the call it followed, not the call") {
  // The probe starts where the Send ends (t = 200) and did 100 ns of work.
  const std::vector<tr::ProbePoint> probes = {{200, 100}};
  tr::RankTrace rank;
  rank.probes = probes;
  call(rank, Fn::MPI_Send, 0, 200);
  call(rank, Fn::MPI_Recv, 600, 700);
  CHECK(tr::compute_gaps(rank) == std::vector<int64_t>{0, 400 - 100});
  const tr::LostTimeCurve lost(rank);
  CHECK(lost.between(0, 200) == 0);      // the Send's own time
  CHECK(lost.between(200, 600) == 100);
  CHECK(lost.between(201, 600) == 0);
  // With a run-queue delay as well, the gap loses both.
  rank.run_delay = {{0, 0}, {1000, 500}};
  CHECK(tr::compute_gaps(rank) == std::vector<int64_t>{0, 400 - 200 - 100});
  CHECK(tr::run_delay_fraction(rank) == doctest::Approx(0.5));  // the probes are not a wait
}

TEST_CASE("LostTimeCurve sums the probes before a time, skipping empty ones and ones out of order") {
  const std::vector<tr::ProbePoint> probes = {{100, 10}, {100, 20}, {300, 0}, {400, 80}, {350, 40}};
  const tr::LostTimeCurve lost({}, probes);
  CHECK(lost.at(100) == 0);
  CHECK(lost.at(101) == 30);
  CHECK(lost.at(400) == 30);    // {300, 0} is empty
  CHECK(lost.at(1000) == 110);  // {350, 40} goes back in time and is dropped
  CHECK(lost.at(401) == 110);
  CHECK(lost.between(0, 1000) == 110);
  CHECK(lost.last_run_delay_t_ns() == 0);
}

TEST_CASE("LostTimeCurve ignores unread delays and never decreases") {
  const std::vector<tr::RunDelayPoint> points = {
      {0, 0}, {100, -1}, {200, 100}, {300, 50}, {250, 400}, {400, 200}};
  const tr::LostTimeCurve curve(points, {});
  CHECK(curve.last_run_delay_t_ns() == 400);
  CHECK(curve.at(-5) == 0);      // constant before the first point
  CHECK(curve.at(100) == 50);    // the -1 at t = 100 is skipped: halfway from 0 to 100
  CHECK(curve.at(200) == 100);
  CHECK(curve.at(300) == 100);   // 50 would be a decrease: the larger value is kept
  CHECK(curve.at(350) == 150);   // the point back in time at t = 250 is dropped
  CHECK(curve.at(400) == 200);
  CHECK(curve.at(10'000) == 200);  // constant after the last point
  int64_t previous = curve.at(-10);
  for (int64_t t = -10; t <= 500; t += 5) {
    CAPTURE(t);
    CHECK(curve.at(t) >= previous);
    previous = curve.at(t);
  }
  CHECK(curve.between(100, 350) == 150 - 50);
  CHECK(curve.between(350, 100) == 0);
  CHECK(curve.between(200, 200) == 0);
}

TEST_CASE("an empty LostTimeCurve is 0 everywhere") {
  const tr::LostTimeCurve none;
  CHECK(none.at(12345) == 0);
  CHECK(none.between(0, 12345) == 0);
  CHECK(none.last_run_delay_t_ns() == 0);
  const std::vector<tr::RunDelayPoint> unread = {{10, -1}, {20, -1}};
  const tr::LostTimeCurve all_unread(unread, {});
  CHECK(all_unread.last_run_delay_t_ns() == 0);
  CHECK(all_unread.between(0, 30) == 0);
}

TEST_CASE("run_delay_fraction is the delay over the time up to the last point") {
  CHECK(tr::run_delay_fraction(delayed_rank({{0, 0}, {1000, 500}})) == doctest::Approx(0.5));
  // The delay before the first point (before the trace's t = 0 or before sampling started) is
  // not the program's: only the growth after it counts.
  CHECK(tr::run_delay_fraction(delayed_rank({{1000, 300}, {2000, 800}})) == doctest::Approx(0.25));
  CHECK(tr::run_delay_fraction(delayed_rank({})) == 0.0);
  CHECK(tr::run_delay_fraction(delayed_rank({{0, 7}})) == 0.0);
}

namespace {

const char kRunId[] = "20240101T000000-gapsgaps";

// One rank's calls i = 1..3 at [1000 i, 1000 i + 500] (make_record's times): gaps 1000, 500, 500.
void write_trace(const TempDir& dir, int ranks) {
  write_text(dir.file("meta.json"),
             "{\"ranks\": " + std::to_string(ranks) + ", \"run_id\": \"" + kRunId + "\"}");
  for (int r = 0; r < ranks; ++r)
    write_rank_file(dir.file("rank." + std::to_string(r) + ".pskt"), make_header(r, ranks, kRunId),
                    {make_entry(Fn::MPI_Send, 1, 0), make_entry(Fn::MPI_Recv, 2, 0),
                     make_entry(Fn::MPI_Barrier, 3, 0)});
}

std::string samples_header(int rank, int version = 2) {
  return "pskel-samples " + std::to_string(version) + " " + std::to_string(rank) + " " + kRunId +
         " 100\n";
}

}  // namespace

TEST_CASE("read_trace_dir takes each rank's run-queue delay from its samples file") {
  TempDir dir;
  write_trace(dir, 2);
  // Rank 0: 250 ns of delay over [0, 2000], 750 over [2000, 4000]. Rank 1 has no samples file.
  write_text(dir.file("samples.0"), samples_header(0) +
                                        "0 1 2 3 4 5 6 0\n"
                                        "d 2000 250\n"
                                        "4000 1 2 3 4 5 6 1000\n"
                                        "# sampler_cpu_ns 10\n");
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  const tr::RankTrace& rank0 = set.value().ranks[0];
  REQUIRE(rank0.run_delay.size() == 3);
  CHECK(rank0.run_delay[1].t_ns == 2000);
  CHECK(rank0.run_delay[1].delay_ns == 250);
  CHECK(set.value().ranks[1].run_delay.empty());
  // [0, 1000]: 125 ns of delay; [1500, 2000]: 250 - 187; [2500, 3000]: 625 - 437.
  CHECK(tr::compute_gaps(rank0) == std::vector<int64_t>{1000 - 125, 500 - 63, 500 - 188});
  CHECK(tr::compute_gaps(set.value().ranks[1]) == std::vector<int64_t>{1000, 500, 500});
  const tr::TraceSummary summary = tr::summarize(set.value());
  REQUIRE(summary.run_delay_fraction.size() == 2);
  CHECK(summary.run_delay_fraction[0] == doctest::Approx(0.25));
  CHECK(summary.run_delay_fraction[1] == 0.0);
}

TEST_CASE("reread_trace_dir visits the ranks as read before; a rank whose record count changed is the error") {
  TempDir dir;
  write_trace(dir, 3);
  write_text(dir.file("samples.1"), samples_header(1) + "0 1 2 3 4 5 6 0\nd 2000 250\n");
  std::vector<uint64_t> records_of;
  auto first = tr::read_trace_dir(dir.path(), {}, [&](tr::RankTrace& rank) {
    records_of.push_back(rank.records.size());
    rank = rank.without_records();
  });
  REQUIRE_MESSAGE(first.ok(), first.error().line());
  REQUIRE(records_of == std::vector<uint64_t>{3, 3, 3});
  CHECK(first.value().ranks[1].records.empty());
  CHECK(first.value().ranks[1].run_delay.size() == 2);  // the samples stay
  CHECK(first.value().ranks[1].header.rank == 1);

  std::vector<int> visited;
  auto again = tr::reread_trace_dir(dir.path(), records_of, [&](tr::RankTrace& rank) {
    visited.push_back(rank.header.rank);
    CHECK(rank.records.size() == 3);
  });
  REQUIRE_MESSAGE(again.ok(), again.error().line());
  CHECK(visited == std::vector<int>{0, 1, 2});

  // Rank 1's file now holds one record more than the first read found.
  std::remove(dir.file("rank.1.pskt").c_str());
  write_rank_file(dir.file("rank.1.pskt"), make_header(1, 3, kRunId),
                  {make_entry(Fn::MPI_Send, 1, 0), make_entry(Fn::MPI_Recv, 2, 0),
                   make_entry(Fn::MPI_Barrier, 3, 0), make_entry(Fn::MPI_Barrier, 4, 0)});
  visited.clear();
  auto changed = tr::reread_trace_dir(dir.path(), records_of, [&](tr::RankTrace& rank) {
    visited.push_back(rank.header.rank);
  });
  REQUIRE_FALSE(changed.ok());
  CHECK(changed.error().file == dir.file("rank.1.pskt"));
  CHECK(changed.error().what.find("changed while pskel read it") != std::string::npos);
  CHECK(visited == std::vector<int>{0});  // neither it nor any rank after it
}

TEST_CASE("reread_trace_dir names the rank that changed, not a later rank's damage") {
  // Ranks are read 256 at a time: rank 1 changed in the first window, rank 280's file is cut
  // short in the second. What went wrong first is the error.
  TempDir dir;
  write_trace(dir, 300);
  std::vector<uint64_t> records_of(300, 3);
  records_of[1] = 2;
  std::filesystem::resize_file(dir.file("rank.280.pskt"), 300);
  int visited = 0;
  auto again = tr::reread_trace_dir(dir.path(), records_of, [&](tr::RankTrace&) { ++visited; });
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().file == dir.file("rank.1.pskt"));
  CHECK(visited == 1);
}

TEST_CASE("read_trace_dir takes each rank's calibration probes from a version 3 samples file") {
  TempDir dir;
  write_trace(dir, 1);
  // Probes at the ends of the first two calls (t = 1500, 2500): 100 and 200 ns.
  write_text(dir.file("samples.0"), samples_header(0, 3) +
                                        "0 1 2 3 4 5 6 0\n"
                                        "1500 1 2 3 4 5 6 0\n"
                                        "p 1500 100\n"
                                        "2500 1 2 3 4 5 6 0\n"
                                        "p 2500 200\n");
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  const tr::RankTrace& rank0 = set.value().ranks[0];
  REQUIRE(rank0.probes.size() == 2);
  CHECK(rank0.probes[1].t_ns == 2500);
  CHECK(rank0.probes[1].ns == 200);
  CHECK(tr::compute_gaps(rank0) == std::vector<int64_t>{1000, 500 - 100, 500 - 200});
}

TEST_CASE("a version 1 samples file in a trace directory gives no run-queue delay") {
  TempDir dir;
  write_trace(dir, 1);
  write_text(dir.file("samples.0"), samples_header(0, 1) + "0 1 2 3 4 5 6\n4000 1 2 3 4 5 6\n");
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  CHECK(set.value().ranks[0].run_delay.empty());
  CHECK(tr::compute_gaps(set.value().ranks[0]) == std::vector<int64_t>{1000, 500, 500});
}

TEST_CASE("a damaged samples file fails read_trace_dir, naming it and how to do without it") {
  TempDir dir;
  write_trace(dir, 2);
  const std::string samples1 = dir.file("samples.1");
  const std::string hint = "(move it away to use the trace without its samples)";
  write_text(samples1, samples_header(1) + "0 1 2 3 4 5 6 0\nd 5 garbage\n");
  auto damaged = tr::read_trace_dir(dir.path());
  REQUIRE(!damaged.ok());
  CHECK(damaged.error().line() ==
        samples1 + ": corrupt: line 3 bad run-queue delay line 'd 5 garbage' " + hint);

  write_text(samples1, "pskel-samples 2 1 another-run 100\n");
  auto foreign = tr::read_trace_dir(dir.path());
  REQUIRE(!foreign.ok());
  CHECK(foreign.error().file == samples1);
  CHECK(contains(foreign.error().what, "from another run"));
  CHECK(contains(foreign.error().what, hint));

  REQUIRE(std::rename(samples1.c_str(), dir.file("samples.1.moved").c_str()) == 0);
  auto without = tr::read_trace_dir(dir.path());
  CHECK_MESSAGE(without.ok(), without.error().line());
}

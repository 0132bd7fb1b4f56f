// The timeline (core/timeline): states of calls, the time axis across ranks, aggregation into
// "N calls" boxes and its levels of detail, CPU/memory rates from samples, the page data and
// the trace-event JSON; the sample file reader (core/trace/samples) and the sampler's /proc
// parsers (core/tracer/proc_stats).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "proc_stats.h"
#include "sampler.h"
#include "scratch_dir.h"
#include "timeline/aggregate.h"
#include "timeline/groups.h"
#include "timeline/page.h"
#include "timeline/timeline.h"
#include "trace/samples.h"
#include "trace_builder.h"

namespace tl = pskel::timeline;
namespace tr = pskel::trace;
using pskel::test::Fn;
using tl::State;

namespace {

tl::Call call(int64_t start, int64_t end, State state = State::point_to_point) {
  tl::Call c;
  c.start_ns = start;
  c.end_ns = end;
  c.state = state;
  c.function = static_cast<uint16_t>(Fn::MPI_Send);
  return c;
}

void set_host(tr::RankTrace& rank, const char* host) {
  std::memset(rank.header.hostname, 0, sizeof rank.header.hostname);
  std::strncpy(rank.header.hostname, host, sizeof rank.header.hostname - 1);
}

// Two ranks on one host, rank 1's t = 0 lying 5 µs after rank 0's by the wall clock.
tr::TraceSet two_rank_trace() {
  auto ranks = pskel::test::world(2);
  for (auto& r : ranks) {
    r.timing(1000, 100);
    r.add(Fn::MPI_Init).t_start = -500000;  // entered long before t = 0
  }
  ranks[0].send(1, 7, 4);
  const uint32_t id = ranks[1].irecv(0, 7, 4);
  ranks[1].comm_define(2, {0, 1});  // a pseudo-record: not a call
  tr::Record& wait = ranks[1].complete(Fn::MPI_Wait, {id});
  (void)wait;
  for (auto& r : ranks) {
    tr::Record& finalize = r.add(Fn::MPI_Finalize);
    finalize.t_end = finalize.t_start;  // as the tracer writes it (§4.2)
  }
  tr::TraceSet set = pskel::test::trace_set(ranks);
  // The completion of the receive: [id, source 0, tag 7, 32 bytes] (§4.5).
  tr::RankTrace& r1 = set.ranks[1];
  const size_t wait_index = 3;
  REQUIRE(r1.records[wait_index].function == static_cast<uint16_t>(Fn::MPI_Wait));
  r1.aux[r1.aux_begin[wait_index] + 1] = 0;
  r1.aux[r1.aux_begin[wait_index] + 2] = 7;
  r1.aux[r1.aux_begin[wait_index] + 3] = 32;
  set.ranks[0].header.base_realtime_ns = 1'000'000'000;
  set.ranks[1].header.base_realtime_ns = 1'000'005'000;
  set_host(set.ranks[0], "node-a");
  set_host(set.ranks[1], "node-a");
  for (auto& r : set.ranks) r.end.end_ns = r.records.back().t_start;
  set.meta = {{"executable", "/bin/app"}, {"mpi", "mpich"}};
  return set;
}

}  // namespace

TEST_SUITE("timeline") {

TEST_CASE("StatesFollowWhatACallDoes") {
  CHECK(tl::state_of(Fn::MPI_Send) == State::point_to_point);
  CHECK(tl::state_of(Fn::MPI_Isend) == State::point_to_point);
  CHECK(tl::state_of(Fn::MPI_Test) == State::point_to_point);
  CHECK(tl::state_of(Fn::MPI_Startall) == State::point_to_point);
  CHECK(tl::state_of(Fn::MPI_Iprobe) == State::point_to_point);
  CHECK(tl::state_of(Fn::MPI_Recv) == State::waiting);
  CHECK(tl::state_of(Fn::MPI_Wait) == State::waiting);
  CHECK(tl::state_of(Fn::MPI_Waitall) == State::waiting);
  CHECK(tl::state_of(Fn::MPI_Waitany) == State::waiting);
  CHECK(tl::state_of(Fn::MPI_Probe) == State::waiting);
  CHECK(tl::state_of(Fn::MPI_Barrier) == State::waiting);
  CHECK(tl::state_of(Fn::MPI_Allreduce) == State::collective);
  CHECK(tl::state_of(Fn::MPI_Ibcast) == State::collective);
  CHECK(tl::state_of(Fn::MPI_Init) == State::setup);
  CHECK(tl::state_of(Fn::MPI_Comm_split) == State::setup);
  CHECK(tl::state_name(State::waiting) == "waiting");
}

TEST_CASE("RanksShareOneAxisAlignedByWallClock") {
  const tl::Timeline t = tl::build_timeline(two_rank_trace(), {});
  REQUIRE(t.lanes.size() == 2);
  REQUIRE(t.nodes.size() == 1);
  CHECK(t.nodes[0].host == "node-a");
  CHECK(t.nodes[0].ranks == std::vector<int>{0, 1});
  CHECK(t.program == "/bin/app");
  const tl::Lane& r0 = t.lanes[0];
  const tl::Lane& r1 = t.lanes[1];
  CHECK(r0.begin_ns == 0);
  CHECK(r1.begin_ns == 5000);
  // Init is clipped to t = 0; its end (1100 ns on the rank's clock) is kept.
  CHECK(r0.calls[0].start_ns == 0);
  CHECK(r0.calls[0].end_ns == 1100);
  CHECK(r1.calls[0].start_ns == 5000);
  // Rank 1: Init, Irecv, Wait, Finalize; the define record is gone.
  REQUIRE(r1.calls.size() == 4);
  CHECK(r1.calls[1].function == static_cast<uint16_t>(Fn::MPI_Irecv));
  CHECK(r1.calls[1].start_ns == 5000 + 2100);
  CHECK(r1.calls[1].peer == 0);
  CHECK(r1.calls[1].tag == 7);
  const tl::Call& wait = r1.calls[2];
  CHECK(wait.state == State::waiting);
  CHECK(wait.peer == 0);   // from its completion entry
  CHECK(wait.tag == 7);
  CHECK(r0.calls[1].peer == 1);
  CHECK(r0.calls[1].bytes == 32);
  CHECK(r1.end_ns == r1.calls.back().start_ns);
  CHECK(t.end_ns == std::max(r0.end_ns, r1.end_ns));
  CHECK(tl::call_count(t) == 7);
}

TEST_CASE("RanksOnDifferentHostsAreDifferentNodes") {
  tr::TraceSet set = two_rank_trace();
  set_host(set.ranks[1], "node-b");
  const tl::Timeline t = tl::build_timeline(set, {});
  REQUIRE(t.nodes.size() == 2);
  CHECK(t.lanes[1].node == 1);
  CHECK(t.nodes[1].ranks == std::vector<int>{1});
}

TEST_CASE("ShortCallsInOneBucketBecomeOneBox") {
  // Bucket 1000 ns: three 10 ns calls in [0, 1000), a long call, two short ones in [3000, 4000).
  const std::vector<tl::Call> calls = {
      call(100, 110), call(200, 210, State::waiting), call(300, 310),
      call(500, 2500, State::collective),
      call(3000, 3010), call(3900, 3950, State::waiting),
  };
  const auto boxes = tl::aggregate(calls, 1000);
  REQUIRE(boxes.size() == 3);
  CHECK(boxes[0].first == 0);
  CHECK(boxes[0].count == 3);
  CHECK(boxes[0].start_ns == 100);
  CHECK(boxes[0].end_ns == 310);
  CHECK(boxes[0].state == State::point_to_point);   // 20 ns of it against 10 ns waiting
  CHECK(boxes[1].count == 1);                         // long enough to be seen alone
  CHECK(boxes[1].state == State::collective);
  CHECK(boxes[2].first == 4);
  CHECK(boxes[2].count == 2);
  CHECK(boxes[2].state == State::waiting);            // 50 ns against 10 ns
}

TEST_CASE("ARunStopsAtABucketBoundaryAndAtALongCall") {
  const std::vector<tl::Call> calls = {call(990, 995), call(1001, 1005), call(1010, 6000),
                                       call(6001, 6002)};
  const auto boxes = tl::aggregate(calls, 1000);
  REQUIRE(boxes.size() == 4);   // nothing to merge: different buckets, or long
  for (const auto& b : boxes) CHECK(b.count == 1);
  // With buckets of 4000 ns the first two merge; the long call and the one after stay alone.
  const auto coarse = tl::aggregate(calls, 4000);
  REQUIRE(coarse.size() == 3);
  CHECK(coarse[0].count == 2);
  CHECK(coarse[1].count == 1);
  CHECK(coarse[2].count == 1);
}

TEST_CASE("LevelsOfDetailPartitionEveryCallAndShrink") {
  // 100,000 calls of 50 ns every 400 ns: the page's worst case, a dense lane.
  std::vector<tl::Call> calls;
  for (int64_t i = 0; i < 100000; ++i) calls.push_back(call(i * 400, i * 400 + 50));
  const int64_t span = calls.back().end_ns;
  const auto levels = tl::detail_levels(calls, span);
  REQUIRE(!levels.empty());
  size_t previous = calls.size();
  for (const auto& level : levels) {
    uint64_t covered = 0;
    uint32_t next = 0;
    for (const auto& b : level.boxes) {
      CHECK_MESSAGE(b.first == next, "boxes are consecutive runs");
      next = b.first + b.count;
      covered += b.count;
    }
    CHECK(covered == calls.size());
    CHECK(level.boxes.size() * 4 <= previous * 3);
    previous = level.boxes.size();
  }
  // The finest level kept has 1 µs buckets: 2 or 3 calls per box.
  CHECK(levels.front().bucket_ns == tl::kFinestBucketNs);
  CHECK(levels.front().boxes.size() == 40000);
  // The coarsest covers the whole span with a handful of boxes.
  CHECK(levels.back().boxes.size() <= 4);
}

TEST_CASE("UsageRatesComeFromDifferencesBetweenSamples") {
  tr::SampleSeries s;
  s.interval_ms = 100;
  s.samples = {
      {0, 1'000'000, 4096, 100, 1000, 1 << 20, 4 << 20},
      {100'000'000, 51'000'000, 8192, 150, 1100, 2 << 20, 4 << 20},   // 50 ms CPU in 100 ms
      {200'000'000, -1, -1, 150, 1200, -1, -1},                         // /proc unreadable
  };
  const auto ranks = tl::rank_usage_of(s, 7);
  REQUIRE(ranks.size() == 3);
  CHECK(ranks[0].t_ns == 7);
  CHECK(ranks[0].cpu == -1);
  CHECK(ranks[1].cpu == doctest::Approx(0.5));
  CHECK(ranks[1].rss_bytes == 8192);
  CHECK(ranks[2].cpu == -1);
  CHECK(ranks[2].rss_bytes == -1);
  const auto node = tl::node_usage_of(s, 0);
  REQUIRE(node.size() == 3);
  CHECK(node[1].cpu_busy == doctest::Approx(0.5));   // 50 busy of 100 ticks
  CHECK(node[2].cpu_busy == doctest::Approx(0.0));
  CHECK(node[1].mem_used_bytes == (2 << 20));
  CHECK(node[2].mem_used_bytes == -1);
}

TEST_CASE("NodeUsageComesFromItsLowestRankWithSamples") {
  tr::SampleSeries s;
  s.rank = 1;
  s.interval_ms = 50;
  s.sampler_cpu_ns = 1234;
  s.samples = {{0, 0, 1, 0, 10, 1, 2}, {10, 5, 1, 5, 20, 1, 2}};
  std::vector<std::optional<tr::SampleSeries>> samples(2);
  samples[1] = s;
  const tl::Timeline t = tl::build_timeline(two_rank_trace(), samples);
  CHECK(t.sample_interval_ms == 50);
  CHECK(t.sampler_cpu_ns == 1234);
  CHECK(t.rank_usage[0].empty());
  REQUIRE(t.rank_usage[1].size() == 2);
  CHECK(t.rank_usage[1][0].t_ns == 5000);   // moved onto the run's axis with rank 1
  REQUIRE(t.nodes[0].usage.size() == 2);
  CHECK(t.nodes[0].usage[1].cpu_busy == doctest::Approx(0.5));
}

TEST_CASE("ATimelineBuiltARankAtATimeWithEachRankFreedPutsRanksOnTheAxisAtTheEnd") {
  // Rank 1 started first by the wall clock: rank 0's place on the axis is known only once
  // rank 1 has come, after rank 0's records are gone.
  tr::TraceSet set = two_rank_trace();
  set.ranks[0].header.base_realtime_ns = 1'000'009'000;
  set.ranks[1].header.base_realtime_ns = 1'000'000'000;
  tr::SampleSeries s;
  s.interval_ms = 50;
  s.samples = {{0, 0, 1, 0, 10, 1, 2}, {10, 5, 1, 5, 20, 1, 2}};
  const std::vector<std::optional<tr::SampleSeries>> samples = {s, std::nullopt};
  const tl::Timeline whole = tl::build_timeline(set, samples);

  tl::TimelineBuilder builder;
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    tr::RankTrace rank = set.ranks[r];
    builder.add_rank(rank, samples[r] ? &*samples[r] : nullptr);
    rank.drop_records();
  }
  const tl::Timeline t = builder.finish(set.meta);

  CHECK(t.program == "/bin/app");
  REQUIRE(t.lanes.size() == 2);
  CHECK(t.lanes[0].begin_ns == 9000);
  CHECK(t.lanes[1].begin_ns == 0);
  REQUIRE(!t.lanes[0].calls.empty());
  CHECK(t.lanes[0].calls[0].start_ns == 9000);   // MPI_Init, cut at t = 0
  CHECK(t.rank_usage[0][1].t_ns == 9000 + 10);
  REQUIRE(t.nodes[0].usage.size() == 2);
  CHECK(t.nodes[0].usage[1].t_ns == 9000 + 10);
  CHECK(t.end_ns == whole.end_ns);
  CHECK(t.end_ns == std::max(t.lanes[0].end_ns, t.lanes[1].end_ns));
  for (size_t r = 0; r < 2; ++r) {
    REQUIRE(t.lanes[r].calls.size() == whole.lanes[r].calls.size());
    for (size_t i = 0; i < t.lanes[r].calls.size(); ++i) {
      CHECK(t.lanes[r].calls[i].start_ns == whole.lanes[r].calls[i].start_ns);
      CHECK(t.lanes[r].calls[i].end_ns == whole.lanes[r].calls[i].end_ns);
      CHECK(t.lanes[r].calls[i].peer == whole.lanes[r].calls[i].peer);
    }
  }
}

TEST_CASE("PageDataIsJsonWithEveryCallAndNoClosingTag") {
  tr::TraceSet set = two_rank_trace();
  set_host(set.ranks[1], "</script><b>");
  const tl::Timeline t = tl::build_timeline(set, {});
  const std::string data = tl::page_data(t);
  CHECK(data.find('<') == std::string::npos);
  const auto j = nlohmann::json::parse(data);
  CHECK(j["calls"] == 7);
  CHECK(j["nodes"][1]["host"] == "</script><b>");
  REQUIRE(j["lanes"].size() == 2);
  const auto& lane = j["lanes"][1];
  // Start times are deltas; summed they give the calls' starts back.
  int64_t start = 0;
  std::vector<int64_t> starts;
  for (const auto& d : lane["start"]) starts.push_back(start += d.get<int64_t>());
  REQUIRE(starts.size() == t.lanes[1].calls.size());
  for (size_t i = 0; i < starts.size(); ++i) CHECK(starts[i] == t.lanes[1].calls[i].start_ns);
  const auto& names = j["functions"];
  const auto& states = j["function_state"];
  const int wait_fn = lane["fn"][2];
  CHECK(names[wait_fn] == "MPI_Wait");
  CHECK(states[wait_fn] == static_cast<int>(State::waiting));
  const std::string page = tl::timeline_page(t);
  CHECK(page.find("<!--pskel:") == std::string::npos);
  CHECK(page.find("<script type=\"application/json\" id=\"pskel-data\">") != std::string::npos);
  CHECK(page.find("src=") == std::string::npos);   // nothing loaded from elsewhere
}

// Three ranks over [0, 400) ns in buckets of 100 ns, groups of two: rank 0 sends in
// [50, 150), rank 1 waits in [100, 300), rank 2 (a group of its own) runs only in [0, 200).
tl::Timeline three_lane_timeline() {
  tl::Timeline t;
  t.end_ns = 400;
  for (int r = 0; r < 3; ++r) {
    tl::Lane lane;
    lane.rank = r;
    lane.end_ns = r == 2 ? 200 : 400;
    t.lanes.push_back(lane);
  }
  t.lanes[0].calls.push_back(call(50, 150));
  t.lanes[1].calls.push_back(call(100, 300, State::waiting));
  t.nodes.push_back({"node-a", {0, 1, 2}, {}});
  return t;
}

TEST_CASE("GroupsHoldEachStatesShareOfTheirRanksTimePerBucket") {
  const tl::Timeline t = three_lane_timeline();
  const tl::GroupSummary g = tl::summarize_groups(t, 2, 4);
  REQUIRE(g.group_size == 2);
  REQUIRE(g.groups == 2);
  REQUIRE(g.bucket_ns == 100);
  REQUIRE(g.share.size() == size_t{2} * 4 * tl::kStateCount);
  // Group 0, bucket 0: rank 0 sends 50 ns of 100 and computes 50; rank 1 computes all 100.
  CHECK(g.at(0, 0, State::point_to_point) == 64);   // 50 / 200 of 255, rounded
  CHECK(g.at(0, 0, State::computing) == 191);       // 150 / 200
  // Bucket 1: rank 0 sends 50 and computes 50, rank 1 waits 100.
  CHECK(g.at(0, 1, State::point_to_point) == 64);
  CHECK(g.at(0, 1, State::waiting) == 128);
  CHECK(g.at(0, 1, State::computing) == 64);
  // Bucket 3: both compute.
  CHECK(g.at(0, 3, State::computing) == 255);
  // Group 1 is rank 2 alone; after its end (200 ns) it is in no state.
  CHECK(g.at(1, 1, State::computing) == 255);
  for (int s = 0; s < tl::kStateCount; ++s) CHECK(g.at(1, 2, static_cast<State>(s)) == 0);
  CHECK(tl::group_size_for(16384, 128) == 128);
  CHECK(tl::group_size_for(100, 128) == 1);
  CHECK(tl::group_size_for(129, 128) == 2);
}

TEST_CASE("APageOfManyRanksHoldsGroupsAndTheCallsOfTheRanksAskedFor") {
  const tl::Timeline t = three_lane_timeline();
  tl::PageOptions options;
  options.max_lanes = 2;      // three ranks: more than a page draws call by call
  options.max_groups = 2;
  options.group_buckets = 4;
  options.ranks = {2, 7};     // 7 is not in the job
  const tl::PageLayout layout = tl::page_layout(t, options);
  CHECK(layout.lanes == std::vector<int>{2});
  CHECK(layout.groups == 2);
  const auto j = nlohmann::json::parse(tl::page_data(t, options));
  CHECK(j["ranks_total"] == 3);
  REQUIRE(j["lanes"].size() == 1);
  CHECK(j["lanes"][0]["rank"] == 2);
  CHECK(j["lanes"][0]["node"] == 0);
  REQUIRE(j["nodes"].size() == 1);
  CHECK(j["nodes"][0]["ranks"] == std::vector<int>{2});
  CHECK(j["groups"]["size"] == 2);
  CHECK(j["groups"]["count"] == 2);
  CHECK(j["groups"]["bucket_ns"] == 100);
  // Base64 of 2 groups x 4 buckets x 5 states = 40 bytes: 56 digits, the last group padded.
  const std::string share = j["groups"]["share"];
  CHECK(share.size() == 56);
  CHECK(share.substr(52) == "AA==");   // rank 2's last bucket: no state
  // Without options a page of three ranks draws them all, with no groups.
  const auto all = nlohmann::json::parse(tl::page_data(t));
  CHECK(all["groups"].is_null());
  CHECK(all["lanes"].size() == 3);
}

TEST_CASE("PerfettoJsonHasOneCompleteEventPerCallAndCounters") {
  tr::SampleSeries s;
  s.interval_ms = 100;
  s.samples = {{0, 0, 4096, 0, 10, 1 << 20, 4 << 20}, {1500, 750, 4096, 5, 20, 1 << 20, 4 << 20}};
  std::vector<std::optional<tr::SampleSeries>> samples = {s, std::nullopt};
  const tl::Timeline t = tl::build_timeline(two_rank_trace(), samples);
  const auto j = nlohmann::json::parse(tl::perfetto_json(t));
  int complete = 0, counters = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      CHECK(e["pid"] == 1);
      CHECK(e["dur"].get<double>() >= 0);
    }
    if (e["ph"] == "C") ++counters;
  }
  CHECK(complete == 7);
  CHECK(counters == 2 + 1 + 2 + 1);   // node: busy, memory x2; rank 0: CPU, RSS x2
  bool named = false;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 2) named = e["args"]["name"] == "rank 1";
  CHECK(named);
}

TEST_CASE("SampleFileParses") {
  const std::string text =
      "pskel-samples 1 3 run-x 100\n"
      "5 10 4096 1 2 3 4\n"
      "# a comment\n"
      "105 20 -1 -1 -1 -1 -1\n"
      "# sampler_cpu_ns 777\n"
      "205 30 40";   // cut short by a kill: dropped
  auto r = tr::parse_samples(text, "samples.3", 3, "run-x");
  REQUIRE(r.ok());
  const auto& s = r.value();
  CHECK(s.interval_ms == 100);
  REQUIRE(s.samples.size() == 2);
  CHECK(s.samples[1].t_ns == 105);
  CHECK(s.samples[1].rss_bytes == -1);
  CHECK(s.sampler_cpu_ns == 777);
}

TEST_CASE("FootprintIsTheResidentMemoryGainedAfterTheFirstSample") {
  std::vector<tr::ResourceSample> samples(4);
  const int64_t rss[] = {30 << 20, -1, 330 << 20, 310 << 20};  // MPI's 30 MB, then the data
  for (size_t i = 0; i < samples.size(); ++i) samples[i].rss_bytes = rss[i];
  CHECK(tr::footprint_bytes(samples) == int64_t{300} << 20);
  samples.resize(2);  // one known RSS: nothing to compare
  CHECK(tr::footprint_bytes(samples) == -1);
  CHECK(tr::footprint_bytes({}) == -1);
}

TEST_CASE("BadSampleFilesNameTheFileAndTheProblem") {
  auto other_run = tr::parse_samples("pskel-samples 1 0 run-y 100\n", "samples.0", 0, "run-x");
  REQUIRE(!other_run.ok());
  CHECK(other_run.error().line() == "samples.0: from another run (run id run-y, meta.json has run-x)");
  auto other_rank = tr::parse_samples("pskel-samples 1 1 run-x 100\n", "samples.0", 0, "run-x");
  CHECK(other_rank.error().line() == "samples.0: holds rank 1, expected rank 0");
  auto garbage = tr::parse_samples("\x7f" "ELF\n", "samples.0", 0, "run-x");
  CHECK(garbage.error().line() == "samples.0: not a pskel sample file");
  auto short_line =
      tr::parse_samples("pskel-samples 1 0 run-x 100\n1 2 3\n", "samples.0", 0, "run-x");
  CHECK(short_line.error().line() == "samples.0: corrupt: line 2 has 3 values, expected 7");
  auto backwards = tr::parse_samples("pskel-samples 1 0 run-x 100\n9 0 0 0 0 0 0\n8 0 0 0 0 0 0\n",
                                     "samples.0", 0, "run-x");
  CHECK(backwards.error().line() == "samples.0: corrupt: line 3 goes back in time");
  auto empty = tr::parse_samples("", "samples.0", 0, "run-x");
  CHECK(empty.error().line() == "samples.0: empty or cut short before its header line");
}

TEST_CASE("AVersion1SampleFileHasNoRunQueueDelay") {
  auto r = tr::parse_samples("pskel-samples 1 0 run-x 100\n5 10 4096 1 2 3 4\n", "samples.0", 0,
                             "run-x");
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  REQUIRE(r.value().samples.size() == 1);
  CHECK(r.value().samples[0].node_mem_total_bytes == 4);
  CHECK(r.value().samples[0].run_delay_ns == -1);
  CHECK(r.value().run_delay.empty());
}

TEST_CASE("AVersion2SampleFileGivesRunQueueDelaysFromSamplesAndDLinesInTimeOrder") {
  const std::string text =
      "pskel-samples 2 0 run-x 100\n"
      "5 10 4096 1 2 3 4 70\n"
      "d 40 90\n"
      "d 60 130\n"
      "105 20 4096 1 2 3 4 150\n"
      "205 30 4096 1 2 3 4 -1\n"   // schedstat unreadable: a sample, but no delay point
      "d 300 170\n";
  auto r = tr::parse_samples(text, "samples.0", 0, "run-x");
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  const auto& s = r.value();
  REQUIRE(s.samples.size() == 3);
  CHECK(s.samples[1].run_delay_ns == 150);
  CHECK(s.samples[2].run_delay_ns == -1);
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {5, 70}, {40, 90}, {60, 130}, {105, 150}, {300, 170}};
  REQUIRE(s.run_delay.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(s.run_delay[i].t_ns == expected[i].first);
    CHECK(s.run_delay[i].delay_ns == expected[i].second);
  }
}

TEST_CASE("AVersion3SampleFileGivesCalibrationProbesFromPLines") {
  const std::string text =
      "pskel-samples 3 0 run-x 100\n"
      "5 10 4096 1 2 3 4 70\n"
      "p 5 500000\n"
      "d 40 90\n"
      "105 20 4096 1 2 3 4 150\n"
      "p 105 480000\n";
  auto r = tr::parse_samples(text, "samples.0", 0, "run-x");
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  const auto& s = r.value();
  CHECK(s.version == 3);
  CHECK(s.samples.size() == 2);
  CHECK(s.run_delay.size() == 3);
  REQUIRE(s.probes.size() == 2);
  CHECK(s.probes[0].t_ns == 5);
  CHECK(s.probes[0].ns == 500000);
  CHECK(s.probes[1].t_ns == 105);
  CHECK(s.probes[1].ns == 480000);
}

TEST_CASE("RunQueueDelayLinesOutOfPlaceAreErrors") {
  const std::pair<const char*, const char*> cases[] = {
      {"pskel-samples 1 0 run-x 100\n5 0 0 0 0 0 0\nd 6 1\n", "line 3 has 3 values, expected 7"},
      {"pskel-samples 2 0 run-x 100\n50 0 0 0 0 0 0 0\nd 40 1\n", "line 3 goes back in time"},
      {"pskel-samples 2 0 run-x 100\nd 50 1\nd 49 2\n", "line 3 goes back in time"},
      {"pskel-samples 2 0 run-x 100\nd 50 1\n49 0 0 0 0 0 0 0\n", "line 3 goes back in time"},
      {"pskel-samples 2 0 run-x 100\n5 0 0 0 0 0 0\n", "line 2 has 7 values, expected 8"},
      {"pskel-samples 2 0 run-x 100\nd 5 -1\n", "line 2 bad run-queue delay line 'd 5 -1'"},
      {"pskel-samples 2 0 run-x 100\np 5 1\n", "line 2 has 3 values, expected 8"},
      {"pskel-samples 3 0 run-x 100\np 5 -1\n", "line 2 bad probe line 'p 5 -1'"},
      {"pskel-samples 3 0 run-x 100\np 5\n", "line 2 has 2 words, expected p, time and ns"},
      {"pskel-samples 3 0 run-x 100\nd 50 1\np 49 2\n", "line 3 goes back in time"},
      {"pskel-samples 3 0 run-x 100\np 50 1\nd 49 2\n", "line 3 goes back in time"},
  };
  for (const auto& [text, problem] : cases) {
    const std::string samples = text;  // clang 14 cannot capture a structured binding
    CAPTURE(samples);
    auto r = tr::parse_samples(samples, "samples.0", 0, "run-x");
    REQUIRE(!r.ok());
    CHECK(r.error().line() == std::string("samples.0: corrupt: ") + problem);
  }
}

TEST_CASE("ASampleFileOfALaterVersionIsRefused") {
  auto r = tr::parse_samples("pskel-samples 4 0 run-x 100\n5 0 0 0 0 0 0 0 0\n", "samples.0", 0,
                             "run-x");
  REQUIRE(!r.ok());
  CHECK(r.error().line() == "samples.0: unsupported sample file version 4 (this pskel reads 1 to 3)");
  auto zero = tr::parse_samples("pskel-samples 0 0 run-x 100\n", "samples.0", 0, "run-x");
  REQUIRE(!zero.ok());
  CHECK(zero.error().line() == "samples.0: unsupported sample file version 0 (this pskel reads 1 to 3)");
}

TEST_CASE("AMissingSampleFileIsNoError") {
  const std::string dir = pskel::testing::scratch_dir("timeline");
  auto none = tr::read_samples(dir, 0, "run-x");
  REQUIRE(none.ok());
  CHECK(!none.value().has_value());
  std::ofstream(dir + "/samples.1") << "pskel-samples 1 1 run-x 100\n1 2 3 4 5 6 7\n";
  auto one = tr::read_samples(dir, 1, "run-x");
  REQUIRE(one.ok());
  REQUIRE(one.value().has_value());
  CHECK(one.value()->samples.size() == 1);
}

TEST_CASE("ProcParsersReadTheKernelsFormats") {
  const std::string stat =
      "cpu  100 5 50 800 20 3 2 10 7 0\n"
      "cpu0 50 2 25 400 10 1 1 5 0 0\n";
  const auto ticks = pskel::tracer::parse_proc_stat(stat.data(), stat.size());
  CHECK(ticks.total == 100 + 5 + 50 + 800 + 20 + 3 + 2 + 10);   // guest is inside user
  CHECK(ticks.busy == ticks.total - 800 - 20);
  const std::string meminfo =
      "MemTotal:       16318480 kB\nMemFree:         1000000 kB\nMemAvailable:   12318480 kB\n";
  const auto memory = pskel::tracer::parse_meminfo(meminfo.data(), meminfo.size());
  CHECK(memory.total_bytes == int64_t{16318480} * 1024);
  CHECK(memory.used_bytes == int64_t{4000000} * 1024);
  const std::string statm = "5000 1234 300 10 0 800 0\n";
  CHECK(pskel::tracer::parse_statm_rss_bytes(statm.data(), statm.size(), 4096) == 1234 * 4096);
  // What an unreadable or strange /proc gives: -1, never a crash.
  CHECK(pskel::tracer::parse_proc_stat("", 0).busy == -1);
  CHECK(pskel::tracer::parse_proc_stat("cpu  1 2", 8).total == -1);
  CHECK(pskel::tracer::parse_meminfo("MemTotal: 10 kB\n", 16).used_bytes == -1);
  CHECK(pskel::tracer::parse_statm_rss_bytes("x", 1, 4096) == -1);
  const std::string huge = "1 99999999999999999999999\n";
  CHECK(pskel::tracer::parse_statm_rss_bytes(huge.data(), huge.size(), 4096) == -1);
}

TEST_CASE("SchedstatGivesTheRunQueueDelayOrMinusOne") {
  const std::string schedstat = "123 456 7\n";
  CHECK(pskel::tracer::parse_schedstat_run_delay_ns(schedstat.data(), schedstat.size()) == 456);
  CHECK(pskel::tracer::parse_schedstat_run_delay_ns("", 0) == -1);
  CHECK(pskel::tracer::parse_schedstat_run_delay_ns("x", 1) == -1);
  CHECK(pskel::tracer::parse_schedstat_run_delay_ns("123", 3) == -1);   // no second field
}

TEST_CASE("CalibrationProbesGiveTheirMeanEachCappedAtTwiceTheMedian") {
  std::vector<double> probes(40, 200.0);
  probes[3] = 4000.0;  // preempted by the host during these two: each counts as 400
  probes[17] = 5000.0;
  probes[20] = 300.0;  // slow, under the cap: counted as it is
  CHECK(pskel::tracer::probe_estimate(probes.data(), probes.size()) ==
        doctest::Approx((37 * 200.0 + 300.0 + 2 * 400.0) / 40));
  std::vector<double> few(pskel::tracer::kMinProbes - 1, 200.0);
  CHECK(pskel::tracer::probe_estimate(few.data(), few.size()) == -1);
  few.push_back(300.0);  // ten, an even count: the median is the mean of the middle two
  CHECK(pskel::tracer::probe_estimate(few.data(), few.size()) == doctest::Approx(210.0));
}

TEST_CASE("MemoryProbesGiveTheirMedian") {
  // A memory burst beside the run slowed a quarter of the probes threefold: not counted.
  std::vector<double> probes(40, 0.05);
  for (size_t i = 0; i < 10; ++i) probes[i * 4] = 0.15;
  probes[1] = 0.04;
  CHECK(pskel::tracer::memory_probe_estimate(probes.data(), probes.size()) ==
        doctest::Approx(0.05));
  std::vector<double> few(pskel::tracer::kMinProbes - 1, 0.05);
  CHECK(pskel::tracer::memory_probe_estimate(few.data(), few.size()) == -1);
}

TEST_CASE("ProbeReservoirKeepsAUniformSampleOfALongRun") {
  pskel::tracer::ProbeReservoir reservoir;
  for (int i = 0; i < 100; ++i) reservoir.add(1.0);
  std::vector<double> kept(pskel::tracer::kProbesKept);
  CHECK(reservoir.copy_to(kept.data()) == 100);
  // A run whose second half was twice as slow: about half the kept values are from it.
  for (size_t i = 100; i < 100 * pskel::tracer::kProbesKept; ++i)
    reservoir.add(i < 50 * pskel::tracer::kProbesKept ? 1.0 : 2.0);
  REQUIRE(reservoir.copy_to(kept.data()) == pskel::tracer::kProbesKept);
  const auto slow = std::count(kept.begin(), kept.end(), 2.0);
  CHECK(slow > 0.4 * pskel::tracer::kProbesKept);
  CHECK(slow < 0.6 * pskel::tracer::kProbesKept);
}

}  // TEST_SUITE

// Issue 22: pskel timeline looped forever on a trace whose first timestamp was near INT64_MAX:
// the detail levels' bucket width (times 4 each level) overflowed before passing the span.
TEST_CASE("DetailLevelsEndForASpanNearInt64Max") {
  const int64_t far = INT64_MAX - 1'000'000;
  std::vector<tl::Call> calls;
  for (int64_t i = 0; i < 100; ++i) calls.push_back(call(far + i * 1000, far + i * 1000 + 10));
  const auto levels = tl::detail_levels(calls, INT64_MAX);
  CHECK(levels.size() < 40);
  for (const auto& level : levels) CHECK(level.bucket_ns > 0);
}

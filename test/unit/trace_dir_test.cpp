// read_trace_dir and summarize over small trace directories built by hand: meta.json from
// write_meta (or written directly) and rank files from TraceWriter.
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "meta_writer.h"
#include "test_support.h"
#include "trace_dir_support.h"
#include "trace/reader.h"

using namespace pskel::test;
namespace tr = pskel::trace;
using pskel::tracer::MetaInfo;

namespace {

const char kRunId[] = "20240101T000000-abcdef";

MetaInfo meta_for(const std::string& dir, int ranks) {
  return pskel::test::meta_for(dir, ranks, kRunId);
}

Entry event(tr::FunctionId f, int64_t i, int64_t bytes, uint16_t aux = 0) {
  Entry e = make_entry(f, i, aux);
  e.record.bytes = bytes;
  return e;
}

// pskel_comm_define: a pseudo-record, with a late t_end and bytes that must not be counted.
Entry comm_define(int64_t i) {
  Entry e = make_entry(tr::FunctionId::pskel_comm_define, i, 2);
  e.record.t_end = 9'000'000'000;
  e.record.bytes = 1'000'000;
  return e;
}

std::string rank_path(const TempDir& dir, int r) {
  return dir.file("rank." + std::to_string(r) + ".pskt");
}

// Two ranks: rank 0 ends at 2 s, rank 1 at 3.5 s.
void write_two_rank_trace(const TempDir& dir, const std::string& run1 = kRunId) {
  REQUIRE(pskel::tracer::write_meta(meta_for(dir.path(), 2)));
  write_rank_file(rank_path(dir, 0), make_header(0, 2, kRunId),
                  {comm_define(0), event(tr::FunctionId::MPI_Send, 1, 100),
                   event(tr::FunctionId::MPI_Send, 2, 100), event(tr::FunctionId::MPI_Send, 3, 100),
                   event(tr::FunctionId::MPI_Barrier, 4, 0)},
                  1 << 16, EndInfo{2'000'000'000, 0, 0});
  write_rank_file(rank_path(dir, 1), make_header(1, 2, run1),
                  {comm_define(0), comm_define(1), event(tr::FunctionId::MPI_Recv, 1, 100),
                   event(tr::FunctionId::MPI_Recv, 2, 100), event(tr::FunctionId::MPI_Recv, 3, 100),
                   event(tr::FunctionId::MPI_Barrier, 4, -7),
                   event(tr::FunctionId::MPI_Waitall, 5, 0, 8),
                   event(tr::FunctionId::MPI_Waitall, 6, 0, 4)},
                  1 << 16, EndInfo{3'500'000'000, 0, 0});
}

template <class T>
void check_error(const pskel::Result<T>& r, const std::string& file,
                 std::initializer_list<std::string_view> needles) {
  REQUIRE_MESSAGE(!r.ok(), "accepted, expected an error on " << file);
  INFO("error: " << r.error().line());
  CHECK(r.error().file == file);
  for (const std::string_view n : needles)
    CHECK_MESSAGE(contains(r.error().what, n), "missing '" << n << "'");
}

}  // namespace

TEST_CASE("a hand-built two-rank trace directory is read with its meta.json and both ranks") {
  TempDir dir;
  write_two_rank_trace(dir);
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  const tr::TraceSet& t = set.value();
  CHECK(t.dir == dir.path());
  CHECK(t.meta["run_id"] == kRunId);
  CHECK(t.meta["ranks"] == 2);
  CHECK(t.meta["mpi"] == "mpich");
  REQUIRE(t.ranks.size() == 2);
  CHECK(t.ranks[0].header.rank == 0);
  CHECK(t.ranks[1].header.rank == 1);
  CHECK(t.ranks[0].records.size() == 5);
  CHECK(t.ranks[1].records.size() == 8);
  CHECK(t.ranks[1].aux_of(6).size() == 8);
  CHECK(t.ranks[0].complete);
  CHECK(t.ranks[1].complete);
}

TEST_CASE("summarize counts events per function and rank, leaving out comm_define records") {
  TempDir dir;
  write_two_rank_trace(dir);
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  const tr::TraceSummary s = tr::summarize(set.value());
  CHECK(s.ranks == 2);
  CHECK(s.events == 10);
  CHECK(s.events_per_rank == std::vector<uint64_t>{4, 6});
  const std::vector<std::pair<std::string, uint64_t>> functions = {
      {"MPI_Barrier", 2}, {"MPI_Recv", 3}, {"MPI_Send", 3}, {"MPI_Waitall", 2}};
  CHECK(s.functions == functions);
  // The latest end_ns (rank 1, 3.5 s); comm_define's t_end of 9 s does not count.
  CHECK(s.wall_seconds == doctest::Approx(3.5));
  // Sent + received bytes of events; negative byte counts count as 0, comm_define not at all.
  CHECK(s.bytes == 600u);
}

TEST_CASE("a rank at a time: each rank visited once, in order, and the set keeps what is left") {
  TempDir dir;
  write_two_rank_trace(dir);
  std::vector<int> visited;
  std::vector<size_t> records_seen;
  tr::SummaryBuilder summary;
  auto set = tr::read_trace_dir(dir.path(), {}, [&](tr::RankTrace& rank) {
    visited.push_back(rank.header.rank);
    records_seen.push_back(rank.records.size());
    summary.add(rank);
    rank.drop_records();
  });
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  CHECK(visited == std::vector<int>{0, 1});
  CHECK(records_seen == std::vector<size_t>{5, 8});  // whole when visited
  REQUIRE(set.value().ranks.size() == 2);
  for (const tr::RankTrace& rank : set.value().ranks) {
    CHECK(rank.records.empty());
    CHECK(rank.aux.empty());
    CHECK(rank.complete);  // header and end block stay
  }
  CHECK(set.value().ranks[1].header.rank == 1);
  // The summary made a rank at a time is summarize()'s over the whole set.
  auto whole = tr::read_trace_dir(dir.path());
  REQUIRE(whole.ok());
  const tr::TraceSummary a = summary.finish(), b = tr::summarize(whole.value());
  CHECK(a.ranks == b.ranks);
  CHECK(a.events == b.events);
  CHECK(a.events_per_rank == b.events_per_rank);
  CHECK(a.functions == b.functions);
  CHECK(a.wall_seconds == b.wall_seconds);
  CHECK(a.bytes == b.bytes);
  CHECK(a.hosts == b.hosts);
  CHECK(a.events == 10);
}

TEST_CASE("a rank at a time: a bad rank file stops the reading before its window is visited") {
  TempDir dir;
  write_two_rank_trace(dir, "another-run");  // rank 1 belongs to another run
  int visits = 0;
  auto set = tr::read_trace_dir(dir.path(), {}, [&](tr::RankTrace&) { ++visits; });
  REQUIRE_FALSE(set.ok());
  CHECK(visits == 0);
}

TEST_CASE("summarize of truncated ranks takes the wall time from the last event's t_end") {
  TempDir dir;
  REQUIRE(pskel::tracer::write_meta(meta_for(dir.path(), 1)));
  {
    pskel::tracer::TraceWriter w;  // no close(): no end block
    REQUIRE(w.open(rank_path(dir, 0), make_header(0, 1, kRunId), 0));
    Entry late = event(tr::FunctionId::MPI_Send, 1, 8);
    late.record.t_end = 1'250'000'000;
    append(w, late);
    append(w, comm_define(2));
    w.flush();
  }
  check_error(tr::read_trace_dir(dir.path()), rank_path(dir, 0), {"truncated"});
  auto set = tr::read_trace_dir(dir.path(), tr::ReadOptions{.allow_truncated = true});
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  CHECK_FALSE(set.value().ranks[0].complete);
  const tr::TraceSummary s = tr::summarize(set.value());
  CHECK(s.events == 1);
  CHECK(s.wall_seconds == doctest::Approx(1.25));
}

// Regression: json_escape copied bytes that are not UTF-8 into meta.json, which made it
// unparsable, so a trace with a Latin-1 host name (or argument, executable path) was rejected
// as "not valid JSON".
TEST_CASE("a trace whose meta.json strings hold non-UTF-8 bytes is still readable") {
  TempDir dir;
  MetaInfo m = meta_for(dir.path(), 1);
  m.hosts.replace(0, 5, "h\xe9te");
  REQUIRE(pskel::tracer::write_meta(m));
  write_rank_file(rank_path(dir, 0), make_header(0, 1, kRunId), {});
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  CHECK(set.value().meta["hosts"][0] == "h\xc3\xa9te");  // the byte read as Latin-1
}

// Regression: summarize dereferenced find_function() without a check, so a TraceSet built by
// hand (not by the reader, which skips such records) crashed it.
TEST_CASE("summarize counts records of unknown function ids apart, without crashing") {
  tr::TraceSet set;
  set.ranks.resize(2);
  tr::Record unknown = make_record(tr::FunctionId::MPI_Send, 1);
  unknown.function = 999;
  unknown.t_end = 8'000'000'000;  // not an event: its time does not count either
  unknown.bytes = 1000;
  set.ranks[0].records = {make_record(tr::FunctionId::MPI_Send, 2), unknown, unknown};
  set.ranks[1].records = {make_record(tr::FunctionId::MPI_Recv, 3)};
  set.ranks[1].unknown_records = 4;  // skipped by the reader
  const tr::TraceSummary s = tr::summarize(set);
  CHECK(s.ranks == 2);
  CHECK(s.events == 2);
  CHECK(s.events_per_rank == std::vector<uint64_t>{1, 1});
  const std::vector<std::pair<std::string, uint64_t>> functions = {{"MPI_Recv", 1},
                                                                   {"MPI_Send", 1}};
  CHECK(s.functions == functions);
  CHECK(s.unknown_records == 6);
  CHECK(s.bytes == static_cast<uint64_t>(make_record(tr::FunctionId::MPI_Send, 2).bytes +
                                         make_record(tr::FunctionId::MPI_Recv, 3).bytes));
  CHECK(s.wall_seconds == doctest::Approx(3.5e-6));  // rank 1's Recv ends at t = 3500 ns
}

TEST_CASE("a trace holding records of a newer tracer's functions is read and summarized") {
  TempDir dir;
  REQUIRE(pskel::tracer::write_meta(meta_for(dir.path(), 1)));
  Entry newer = event(tr::FunctionId::MPI_Send, 2, 50, 2);
  newer.record.function = 999;
  write_rank_file(rank_path(dir, 0), make_header(0, 1, kRunId),
                  {event(tr::FunctionId::MPI_Send, 1, 100), newer,
                   event(tr::FunctionId::MPI_Barrier, 3, 0)});
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  CHECK(set.value().ranks[0].records.size() == 2);
  const tr::TraceSummary s = tr::summarize(set.value());
  CHECK(s.events == 2);
  CHECK(s.unknown_records == 1);
  CHECK(s.bytes == 100);
}

TEST_CASE("a missing rank file is reported by name as missing") {
  TempDir dir;
  write_two_rank_trace(dir);
  REQUIRE(::unlink(rank_path(dir, 1).c_str()) == 0);
  auto set = tr::read_trace_dir(dir.path());
  check_error(set, rank_path(dir, 1), {"missing", "announces 2 ranks"});
  CHECK(contains(set.error().line(), "rank.1.pskt"));
}

TEST_CASE("a meta.json claiming millions of ranks beside two rank files costs one window") {
  // Rank files are read a window at a time, on every CPU: the lowest rank's error is the one
  // reported, and no slot is made for ranks past the window that failed.
  TempDir dir;
  write_two_rank_trace(dir);
  const std::vector<unsigned char> bytes = read_bytes(dir.file("meta.json"));
  std::string meta(bytes.begin(), bytes.end());
  const size_t at = meta.find("\"ranks\": 2");
  REQUIRE(at != std::string::npos);
  meta.replace(at, std::string("\"ranks\": 2").size(), "\"ranks\": 16777216");
  write_text(dir.file("meta.json"), meta);
  check_error(tr::read_trace_dir(dir.path()), rank_path(dir, 0),
              {"holds rank 0 of 2, expected rank 0 of 16777216"});
}

TEST_CASE("a rank file from another run is rejected") {
  TempDir dir;
  write_two_rank_trace(dir, "some-other-run");
  check_error(tr::read_trace_dir(dir.path()), rank_path(dir, 1),
              {"another run", "some-other-run", kRunId});
}

TEST_CASE("a rank file holding another rank than its name says is rejected") {
  TempDir dir;
  REQUIRE(pskel::tracer::write_meta(meta_for(dir.path(), 2)));
  write_rank_file(rank_path(dir, 0), make_header(0, 2, kRunId), {});
  write_rank_file(rank_path(dir, 1), make_header(0, 2, kRunId), {});
  check_error(tr::read_trace_dir(dir.path()), rank_path(dir, 1),
              {"holds rank 0 of 2, expected rank 1 of 2"});
}

TEST_CASE("a rank file of a different world size than meta.json is rejected") {
  TempDir dir;
  REQUIRE(pskel::tracer::write_meta(meta_for(dir.path(), 1)));
  write_rank_file(rank_path(dir, 0), make_header(0, 2, kRunId), {});
  check_error(tr::read_trace_dir(dir.path()), rank_path(dir, 0), {"expected rank 0 of 1"});
}

TEST_CASE("a corrupt rank file in a trace directory is reported by its own name") {
  TempDir dir;
  write_two_rank_trace(dir);
  auto bytes = read_bytes(rank_path(dir, 0));
  bytes[300] ^= 0x10;
  REQUIRE(::unlink(rank_path(dir, 0).c_str()) == 0);
  write_bytes(rank_path(dir, 0), bytes.data(), bytes.size());
  check_error(tr::read_trace_dir(dir.path()), rank_path(dir, 0), {"corrupt", "checksum"});
}

TEST_CASE("a meta.json that is not a JSON object is rejected") {
  TempDir dir;
  write_two_rank_trace(dir);
  const std::string meta = dir.file("meta.json");
  for (const char* text : {"{\"ranks\": 2, \"run_id\": ", "not json at all", "", "[1, 2]", "42"}) {
    CAPTURE(text);
    write_text(meta, text);
    check_error(tr::read_trace_dir(dir.path()), meta, {"not valid JSON"});
  }
}

TEST_CASE("a meta.json without a positive integer rank count or a run id is rejected") {
  TempDir dir;
  write_two_rank_trace(dir);
  const std::string meta = dir.file("meta.json");
  for (const char* ranks : {"-1", "0", "2.5", "\"2\"", "null", "99999999999", "18446744073709551615"}) {
    CAPTURE(ranks);
    write_text(meta, std::string("{\"ranks\": ") + ranks + ", \"run_id\": \"" + kRunId + "\"}");
    check_error(tr::read_trace_dir(dir.path()), meta, {"ranks"});
  }
  write_text(meta, "{\"ranks\": 2}");
  check_error(tr::read_trace_dir(dir.path()), meta, {"run_id"});
  write_text(meta, "{\"ranks\": 2, \"run_id\": 7}");
  check_error(tr::read_trace_dir(dir.path()), meta, {"run_id"});
  // The same directory with a good meta.json is fine.
  write_text(meta, std::string("{\"ranks\": 2, \"run_id\": \"") + kRunId + "\"}");
  auto ok = tr::read_trace_dir(dir.path());
  CHECK_MESSAGE(ok.ok(), ok.error().line());
}

TEST_CASE("a meta.json calibration that is not an array of numbers is rejected, naming it") {
  TempDir dir;
  write_two_rank_trace(dir);
  const std::string meta = dir.file("meta.json");
  for (const char* key : {"work_ns_per_unit_in_run", "stream_ns_per_byte", "stream_ns_per_byte_in_run"}) {
    CAPTURE(key);
    write_text(meta, std::string("{\"ranks\": 2, \"run_id\": \"") + kRunId + "\", \"" + key +
                         "\": [0.05, \"fast\"]}");
    check_error(tr::read_trace_dir(dir.path()), meta, {key, "an array of numbers"});
  }
}

TEST_CASE("meta.json's stream_kind is read or read_write, nothing else") {
  TempDir dir;
  write_two_rank_trace(dir);
  const std::string meta = dir.file("meta.json");
  const std::string head = std::string("{\"ranks\": 2, \"run_id\": \"") + kRunId + "\"";
  for (const char* kind : {"\"read\"", "\"read_write\""}) {
    CAPTURE(kind);
    write_text(meta, head + ", \"stream_kind\": " + kind + "}");
    const auto ok = tr::read_trace_dir(dir.path());
    CHECK_MESSAGE(ok.ok(), ok.error().line());
  }
  for (const char* kind : {"\"write\"", "1"}) {
    CAPTURE(kind);
    write_text(meta, head + ", \"stream_kind\": " + kind + "}");
    check_error(tr::read_trace_dir(dir.path()), meta, {"stream_kind", "\"read\" or \"read_write\""});
  }
}

TEST_CASE("a nonexistent trace directory, a file, or a directory without meta.json is an error") {
  TempDir dir;
  const std::string nowhere = dir.file("nowhere");
  check_error(tr::read_trace_dir(nowhere), nowhere, {"no such trace directory"});

  const std::string file = dir.file("plain");
  write_text(file, "x");
  check_error(tr::read_trace_dir(file), file, {"not a directory"});

  check_error(tr::read_trace_dir(dir.path()), dir.file("meta.json"), {"missing"});
}

// Issue 22: `"mpi": 5` in meta.json aborted pskel info and pskel timeline (an uncaught
// type_error from meta.value("mpi", "")). Every documented key is checked for its type.
TEST_CASE("MetaJsonFieldOfTheWrongTypeIsAnErrorNotAnAbort") {
  TempDir dir;
  write_two_rank_trace(dir);
  const std::string meta = dir.file("meta.json");
  const std::string base = std::string("{\"ranks\": 2, \"run_id\": \"") + kRunId + "\", ";
  for (const char* field : {"\"mpi\": 5", "\"executable\": []", "\"complete\": \"yes\"",
                            "\"args\": [\"a\", 1]", "\"hosts\": \"node1\"", "\"job_id\": 7",
                            "\"work_ns_per_unit\": [\"x\"]", "\"start_realtime_ns\": 1.5"}) {
    CAPTURE(field);
    write_text(meta, base + field + "}");
    const auto r = tr::read_trace_dir(dir.path());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().file == meta);
    CHECK(contains(r.error().what, "is not"));
  }
  write_text(meta, base + "\"mpi\": \"mpich\", \"job_id\": null, \"work_ns_per_unit\": [1.5, null]}");
  const auto ok = tr::read_trace_dir(dir.path());
  CHECK_MESSAGE(ok.ok(), ok.error().line());
}

// Issue 22: a rank file was read whole before any check (a 3 GiB sparse file: 25 s and
// 3.1 GB of memory). The header is checked first, then each block before it is read.
TEST_CASE("ASparseRankFileOfGigabytesIsRefusedAtItsHeaderUnread") {
  TempDir dir;
  write_two_rank_trace(dir);
  for (const bool good_header : {false, true}) {
    CAPTURE(good_header);
    const std::string path = rank_path(dir, 0);
    auto bytes = read_bytes(path);
    REQUIRE(::unlink(path.c_str()) == 0);
    // A valid header (or none), then 3 GiB of holes where blocks should be.
    write_bytes(path, bytes.data(), good_header ? sizeof(tr::FileHeader) : 4);
    REQUIRE(::truncate(path.c_str(), int64_t{3} << 30) == 0);
    const auto r = tr::read_rank_file(path);
    REQUIRE_FALSE(r.ok());
    INFO("error: " << r.error().line());
    CHECK(contains(r.error().what, good_header ? "no block starts" : "bad magic"));
    REQUIRE(::unlink(path.c_str()) == 0);
    write_bytes(path, bytes.data(), bytes.size());
  }
}

// Issue 22: a corrupt timestamp became a 4.6e9 s prediction in pskel simulate, and one near
// INT64_MAX made pskel timeline loop forever. Times out of any run's range are corruption.
TEST_CASE("ARecordTimeOutOfAnyRunsRangeIsCorruption") {
  TempDir dir;
  write_two_rank_trace(dir);
  for (const auto& [t_start, t_end] : std::vector<std::pair<int64_t, int64_t>>{
           {INT64_MAX - 10, INT64_MAX}, {4'600'000'000'000'000'000, 4'600'000'000'000'000'001},
           {1'000, 999}, {INT64_MIN, 0}}) {
    const int64_t start = t_start;  // clang 14 cannot capture a structured binding
    CAPTURE(start);
    Entry e = event(tr::FunctionId::MPI_Send, 1, 100);
    e.record.t_start = t_start;
    e.record.t_end = t_end;
    REQUIRE(::unlink(rank_path(dir, 0).c_str()) == 0);
    write_rank_file(rank_path(dir, 0), make_header(0, 2, kRunId), {e}, 1 << 16,
                    EndInfo{2'000'000'000, 0, 0});
    check_error(tr::read_trace_dir(dir.path()), rank_path(dir, 0), {"corrupt", "times"});
  }
}

TEST_CASE("summarize groups the ranks by the host their rank file names") {
  tr::TraceSet set;
  const char* hosts[] = {"node1", "node1", "node2", "node2", "node1"};
  for (int r = 0; r < 5; ++r) {
    tr::RankTrace rank;
    rank.header = make_header(r, 5, kRunId);
    std::memset(rank.header.hostname, 0, sizeof rank.header.hostname);
    std::memcpy(rank.header.hostname, hosts[r], std::strlen(hosts[r]));
    set.ranks.push_back(rank);
  }
  const tr::TraceSummary s = tr::summarize(set);
  REQUIRE(s.hosts.size() == 2);
  CHECK(s.hosts[0].first == "node1");
  CHECK(s.hosts[0].second == std::vector<int>{0, 1, 4});
  CHECK(s.hosts[1].first == "node2");
  CHECK(s.hosts[1].second == std::vector<int>{2, 3});
}

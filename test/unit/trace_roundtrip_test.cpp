// TraceWriter -> read_rank_file: everything written comes back, whatever the block layout.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "aux_words.h"
#include "test_support.h"
#include "trace/reader.h"
#include "trace_writer.h"

using namespace pskel::test;
using pskel::tracer::cut_aux_words;
using pskel::tracer::kMaxAuxWords;
using pskel::tracer::TraceWriter;
namespace tr = pskel::trace;

namespace {

constexpr size_t kMinBuffer = sizeof(tr::Record) * 16;  // the writer's smallest buffer

// Checks that `got` holds exactly `want`: records, aux words, header, end block.
void check_trace(const tr::RankTrace& got, const tr::FileHeader& header,
                 const std::vector<Entry>& want, const EndInfo& end) {
  CHECK(std::memcmp(&got.header, &header, sizeof header) == 0);
  CHECK(got.complete);
  CHECK(got.end.records == want.size());
  CHECK(got.end.dropped_records == 0);
  CHECK(got.end.end_ns == end.end_ns);
  CHECK(got.end.untraced_thread_calls == end.untraced_thread_calls);
  CHECK(got.end.untracked_requests == end.untracked_requests);
  REQUIRE(got.records.size() == want.size());
  REQUIRE(got.aux_begin.size() == want.size());
  size_t total_aux = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    REQUIRE(got.records[i] == want[i].record);
    const auto aux = got.aux_of(i);
    REQUIRE(aux.size() == want[i].aux.size());
    if (!std::equal(aux.begin(), aux.end(), want[i].aux.begin()))
      FAIL_CHECK("aux words of record " << i << " differ");
    total_aux += want[i].aux.size();
  }
  CHECK(got.aux.size() == total_aux);
}

const tr::FunctionId kFunctions[] = {tr::FunctionId::MPI_Send,    tr::FunctionId::MPI_Irecv,
                                     tr::FunctionId::MPI_Waitall, tr::FunctionId::MPI_Barrier,
                                     tr::FunctionId::MPI_Allreduce,
                                     tr::FunctionId::pskel_comm_define};

}  // namespace

TEST_CASE("records with varied aux words survive a round trip through many small blocks") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const tr::FileHeader header = make_header(0, 4);
  std::vector<Entry> entries;
  // The first, a middle and the last record are larger than the whole buffer (a huge Waitall).
  const uint16_t huge = 400;  // 80 + 3200 bytes > 1280
  entries.push_back(make_entry(tr::FunctionId::MPI_Waitall, 0, huge));
  for (int64_t i = 1; i < 600; ++i) {
    const uint16_t aux = i == 300 ? huge : static_cast<uint16_t>((i * 5) % 23);
    entries.push_back(make_entry(kFunctions[i % 6], i, aux));
  }
  entries.push_back(make_entry(tr::FunctionId::MPI_Waitall, 600, huge));
  const EndInfo end{123'456'789'012, 7, 9};

  TraceWriter w;
  REQUIRE(w.open(path, header, 0));  // 0: the smallest buffer the writer allows
  CHECK(w.is_open());
  for (const Entry& e : entries) append(w, e);
  REQUIRE_MESSAGE(w.close(end.end_ns, end.untraced_thread_calls, end.untracked_requests),
                  w.error());
  CHECK_FALSE(w.is_open());
  CHECK_FALSE(w.failed());
  CHECK(w.error().empty());
  CHECK(w.records() == entries.size());
  CHECK(w.dropped() == 0);

  // The layout really has many blocks, packed, but for each oversized record: alone in a
  // block of its own, as it is.
  const auto blocks = walk_blocks(read_bytes(path));
  REQUIRE(blocks.size() > 20);
  CHECK(blocks.back().header.magic == tr::kEndBlockMagic);
  CHECK(blocks.back().header.payload_bytes == sizeof(tr::EndPayload));
  int oversized = 0;
  uint64_t counted = 0;
  for (size_t b = 0; b + 1 < blocks.size(); ++b) {
    const tr::BlockHeader& h = blocks[b].header;
    counted += h.record_count;
    if (h.magic == tr::kDataBlockMagic) {
      ++oversized;
      CHECK(h.record_count == 1);
      CHECK(h.payload_bytes == sizeof(tr::Record) + huge * sizeof(int64_t));
    } else {
      CHECK(h.magic == tr::kPackedBlockMagic);
    }
  }
  CHECK(oversized == 3);
  CHECK(counted == entries.size());

  auto trace = tr::read_rank_file(path);
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  check_trace(trace.value(), header, entries, end);
}

TEST_CASE("records filling the buffer exactly or by one word more each end up in a block alone") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const tr::FileHeader header = make_header();
  const uint16_t fill = (kMinBuffer - sizeof(tr::Record)) / sizeof(int64_t);  // 80 + 8*150 = 1280
  std::vector<Entry> entries = {make_entry(tr::FunctionId::MPI_Send, 1, 0),
                                make_entry(tr::FunctionId::MPI_Waitall, 2, fill),
                                make_entry(tr::FunctionId::MPI_Waitall, 3, fill + 1),
                                make_entry(tr::FunctionId::MPI_Recv, 4, 0)};
  write_rank_file(path, header, entries, 0);
  const auto blocks = walk_blocks(read_bytes(path));
  // [Send] [Waitall exactly full, packed] [Waitall one word over, alone as it is] [Recv] [end]
  REQUIRE(blocks.size() == 5);
  CHECK(blocks[0].header.record_count == 1);
  CHECK(blocks[1].header.magic == tr::kPackedBlockMagic);
  CHECK(blocks[1].header.record_count == 1);
  CHECK(blocks[2].header.magic == tr::kDataBlockMagic);
  CHECK(blocks[2].header.payload_bytes == kMinBuffer + sizeof(int64_t));
  CHECK(blocks[3].header.record_count == 1);

  auto trace = tr::read_rank_file(path);
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  check_trace(trace.value(), header, entries, EndInfo{});
}

TEST_CASE("with a large buffer all records go into one data block before the end block") {
  TempDir dir;
  const std::string path = dir.file("rank.2.pskt");
  const tr::FileHeader header = make_header(2, 3, "single-block-run");
  std::vector<Entry> entries;
  for (int64_t i = 0; i < 100; ++i)
    entries.push_back(make_entry(kFunctions[i % 6], i, static_cast<uint16_t>(i % 4)));
  write_rank_file(path, header, entries, 1 << 20);
  const auto blocks = walk_blocks(read_bytes(path));
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0].header.magic == tr::kPackedBlockMagic);
  CHECK(blocks[0].header.record_count == 100);
  CHECK(blocks[1].header.magic == tr::kEndBlockMagic);

  auto trace = tr::read_rank_file(path);
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  check_trace(trace.value(), header, entries, EndInfo{});
  CHECK(trace.value().header.rank == 2);
  CHECK(trace.value().header.world_size == 3);
  CHECK(std::string(trace.value().header.run_id) == "single-block-run");
  CHECK(std::string(trace.value().header.hostname) == "node017.cluster");
  CHECK(trace.value().header.pid == 4242u);
  CHECK(trace.value().header.work_ns_per_unit == 3.25);
}

TEST_CASE("a trace with no records holds the header and an end block counting zero") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const tr::FileHeader header = make_header();
  write_rank_file(path, header, {}, 4096, EndInfo{42, 0, 0});
  CHECK(read_bytes(path).size() ==
        sizeof(tr::FileHeader) + sizeof(tr::BlockHeader) + sizeof(tr::EndPayload));
  auto trace = tr::read_rank_file(path);
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  check_trace(trace.value(), header, {}, EndInfo{42, 0, 0});
}

TEST_CASE("flush() ends a block at that point and an empty flush writes nothing") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const tr::FileHeader header = make_header();
  std::vector<Entry> entries;
  for (int64_t i = 0; i < 10; ++i) entries.push_back(make_entry(tr::FunctionId::MPI_Send, i, 1));
  TraceWriter w;
  REQUIRE(w.open(path, header, 1 << 16));
  w.flush();  // nothing buffered yet
  for (int i = 0; i < 3; ++i) append(w, entries[static_cast<size_t>(i)]);
  w.flush();
  w.flush();
  for (size_t i = 3; i < entries.size(); ++i) append(w, entries[i]);
  REQUIRE(w.close(1, 0, 0));
  const auto blocks = walk_blocks(read_bytes(path));
  REQUIRE(blocks.size() == 3);
  CHECK(blocks[0].header.record_count == 3);
  CHECK(blocks[1].header.record_count == 7);
  auto trace = tr::read_rank_file(path);
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  check_trace(trace.value(), header, entries, EndInfo{1, 0, 0});
}

TEST_CASE("a writer closed without the end block leaves a file readable only as truncated") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const tr::FileHeader header = make_header();
  std::vector<Entry> entries;
  for (int64_t i = 0; i < 5; ++i) entries.push_back(make_entry(tr::FunctionId::MPI_Recv, i, 2));
  {
    TraceWriter w;  // a process exiting without MPI_Finalize: flush, then the fd just closes
    REQUIRE(w.open(path, header, 1 << 16));
    for (const Entry& e : entries) append(w, e);
    w.flush();
  }
  auto strict = tr::read_rank_file(path);
  REQUIRE_FALSE(strict.ok());
  CHECK(contains(strict.error().line(), path));
  CHECK(contains(strict.error().what, "truncated"));
  CHECK(contains(strict.error().what, "no end block after 5 records"));

  auto lenient = tr::read_rank_file(path, tr::ReadOptions{.allow_truncated = true});
  REQUIRE_MESSAGE(lenient.ok(), lenient.error().line());
  CHECK_FALSE(lenient.value().complete);
  REQUIRE(lenient.value().records.size() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    CHECK(lenient.value().records[i] == entries[i].record);
    const auto aux = lenient.value().aux_of(i);
    CHECK(std::vector<int64_t>(aux.begin(), aux.end()) == entries[i].aux);
  }
}

namespace {

// What the tracer does for one traced call: the record filled in place, its aux words pushed.
void stage(TraceWriter& w, const Entry& e) {
  tr::Record& r = w.stage();
  CHECK(w.staged_aux().empty());
  r = e.record;
  w.staged_aux().insert(w.staged_aux().end(), e.aux.begin(), e.aux.end());
  w.staged_done();
}

}  // namespace

TEST_CASE("staged records, and records appended while one is staged, are written in call order") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const tr::FileHeader header = make_header(0, 4);
  std::vector<Entry> want;
  TraceWriter w;
  REQUIRE(w.open(path, header, 0));  // the smallest buffer: blocks end at every few records
  for (int64_t i = 0; i < 400; ++i) {
    // Some calls register communicators while their record is staged (held back, written
    // before it); some have aux words, a few more than the whole buffer holds.
    const uint16_t aux = i % 97 == 0 ? 400 : static_cast<uint16_t>((i * 7) % 19);
    const Entry call = make_entry(kFunctions[i % 5], i, aux);
    tr::Record& r = w.stage();
    r = call.record;
    w.staged_aux() = call.aux;
    for (int64_t k = 0; k < i % 3; ++k) {
      const Entry define = make_entry(tr::FunctionId::pskel_comm_define, 1000 * i + k,
                                      static_cast<uint16_t>(k * 40));
      append(w, define);
      want.push_back(define);
    }
    w.staged_done();
    want.push_back(call);
  }
  const EndInfo end{99, 0, 0};
  REQUIRE_MESSAGE(w.close(end.end_ns, 0, 0), w.error());
  auto trace = tr::read_rank_file(path);
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  check_trace(trace.value(), header, want, end);
}

TEST_CASE("a staged record not done is never written; a flush writes the ones done") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  TraceWriter w;
  REQUIRE(w.open(path, make_header(), 1 << 16));
  const Entry first = make_entry(tr::FunctionId::MPI_Send, 1, 2);
  stage(w, first);
  tr::Record& open = w.stage();  // the process leaves inside this call
  open = make_entry(tr::FunctionId::MPI_Recv, 2, 0).record;
  w.flush();
  // No end block (a process that exited without MPI_Finalize): read as truncated.
  auto trace = tr::read_rank_file(path, tr::ReadOptions{.allow_truncated = true});
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  REQUIRE(trace.value().records.size() == 1);
  CHECK(trace.value().records[0] == first.record);
  const auto aux = trace.value().aux_of(0);
  CHECK(std::equal(aux.begin(), aux.end(), first.aux.begin(), first.aux.end()));
}

TEST_CASE("records staged on a writer that is not open are dropped") {
  TraceWriter w;
  stage(w, make_entry(tr::FunctionId::MPI_Send, 1, 3));
  CHECK(w.dropped() == 1);
  TempDir dir;
  REQUIRE(w.open(dir.file("rank.0.pskt"), make_header(), 0));
  REQUIRE(w.close(5, 0, 0));
  stage(w, make_entry(tr::FunctionId::MPI_Send, 2, 0));
  CHECK(w.dropped() == 2);
  CHECK(w.records() == 0);
}

TEST_CASE("close() twice succeeds and records appended after close are counted as dropped") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  TraceWriter w;
  REQUIRE(w.open(path, make_header(), 0));
  append(w, make_entry(tr::FunctionId::MPI_Send, 1, 0));
  REQUIRE(w.close(10, 0, 0));
  CHECK(w.close(10, 0, 0));
  CHECK(w.records() == 1);
  append(w, make_entry(tr::FunctionId::MPI_Send, 2, 0));
  CHECK(w.dropped() == 1);
  CHECK(w.records() == 1);
  auto trace = tr::read_rank_file(path);
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  CHECK(trace.value().records.size() == 1);
}

TEST_CASE("a writer that was never opened drops records and has nothing to close") {
  TraceWriter w;
  CHECK_FALSE(w.is_open());
  append(w, make_entry(tr::FunctionId::MPI_Send, 1, 3));
  CHECK(w.dropped() == 1);
  CHECK(w.records() == 0);
  CHECK(w.close(0, 0, 0));
}

// Regression: the tracer cut aux words at 0xFFFF, which is not a multiple of kCompletionWords,
// so a Waitall of more than 16383 requests ended in a torn completion entry; and what it cut
// was counted nowhere.
TEST_CASE("aux words that do not fit in a record are cut at a whole completion entry") {
  const uint16_t waitall = fid(tr::FunctionId::MPI_Waitall);
  const size_t per_entry = tr::kCompletionWords;
  const size_t fitting = kMaxAuxWords / per_entry;  // 16383 entries
  CHECK(cut_aux_words(waitall, 0).kept == 0);
  CHECK(cut_aux_words(waitall, kMaxAuxWords).kept == kMaxAuxWords);  // fits: nothing to cut
  CHECK(cut_aux_words(waitall, kMaxAuxWords).lost_requests == 0);
  for (const size_t entries : {fitting + 1, size_t{20000}, size_t{1} << 20}) {
    CAPTURE(entries);
    const auto cut = cut_aux_words(waitall, entries * per_entry);
    CHECK(cut.kept == fitting * per_entry);
    CHECK(cut.kept % per_entry == 0);
    CHECK(cut.lost_requests == entries - fitting);
  }
  for (const tr::FunctionId f : {tr::FunctionId::MPI_Wait, tr::FunctionId::MPI_Testsome}) {
    CHECK(cut_aux_words(fid(f), (fitting + 2) * per_entry).kept == fitting * per_entry);
  }
}

TEST_CASE("aux words of other records are cut at a whole word; only requests are lost ones") {
  const size_t words = kMaxAuxWords + 10;
  const auto startall = cut_aux_words(fid(tr::FunctionId::MPI_Startall), words);
  CHECK(startall.kept == kMaxAuxWords);
  CHECK(startall.lost_requests == 10);  // the starts of 10 requests
  for (const tr::FunctionId f : {tr::FunctionId::pskel_comm_define, tr::FunctionId::MPI_Alltoallv,
                                 tr::FunctionId::MPI_Comm_split}) {
    const auto cut = cut_aux_words(fid(f), words);
    CHECK(cut.kept == kMaxAuxWords);
    CHECK(cut.lost_requests == 0);  // the record's counts say how long it was
  }
  CHECK(cut_aux_words(999, words).kept == kMaxAuxWords);  // not in the table
  CHECK(cut_aux_words(fid(tr::FunctionId::MPI_Waitall), SIZE_MAX).lost_requests == UINT32_MAX);
}

TEST_CASE("a completion record cut to what fits is written and read back whole") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const size_t completed = 20000;
  Entry wait = make_entry(tr::FunctionId::MPI_Waitall, 1, 0);
  std::vector<int64_t> words(completed * tr::kCompletionWords);
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<int64_t>(i);
  const auto cut = cut_aux_words(wait.record.function, words.size());
  wait.record.aux_words = cut.kept;
  wait.aux.assign(words.begin(), words.begin() + cut.kept);
  const std::vector<Entry> entries = {make_entry(tr::FunctionId::MPI_Send, 0, 0), wait,
                                      make_entry(tr::FunctionId::MPI_Recv, 2, 0)};
  const EndInfo end{5000, 0, cut.lost_requests};
  write_rank_file(path, make_header(), entries, kMinBuffer, end);
  auto r = tr::read_rank_file(path);
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  check_trace(r.value(), make_header(), entries, end);
  CHECK(r.value().records[1].aux_words % tr::kCompletionWords == 0);
  CHECK(r.value().end.untracked_requests == completed - kMaxAuxWords / tr::kCompletionWords);
}

// The records of a loop of alike calls differ in a few fields by little: packed, their block
// is a fraction of their size; and whatever a field holds (extremes included) comes back.
TEST_CASE("packed blocks keep every field and take a fraction of the records' bytes") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const tr::FileHeader header = make_header();
  std::vector<Entry> entries;
  for (int64_t i = 0; i < 10000; ++i) {  // an Isend window: tag, request and times change
    Entry e{make_record(tr::FunctionId::MPI_Isend, 7), {}};
    e.record.tag = static_cast<int32_t>(i % 32);
    e.record.request = static_cast<uint32_t>(i + 1);
    e.record.t_start = 1'000'000'000 + i * 450;
    e.record.t_end = e.record.t_start + 120 + i % 7;
    entries.push_back(e);
  }
  Entry extreme = make_entry(tr::FunctionId::MPI_Waitall, 1, 3);
  std::memset(&extreme.record.peer, 0xFF, sizeof extreme.record - offsetof(tr::Record, peer));
  extreme.record.count = INT64_MIN;
  extreme.aux = {INT64_MIN, -1, 0};
  entries.push_back(extreme);
  entries.push_back(make_entry(tr::FunctionId::MPI_Send, 0, 0));  // back from all ones
  write_rank_file(path, header, entries, 1 << 20);

  const auto blocks = walk_blocks(read_bytes(path));
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0].header.magic == tr::kPackedBlockMagic);
  const size_t raw = entries.size() * sizeof(tr::Record) + 3 * sizeof(int64_t);
  CHECK(blocks[0].header.payload_bytes * 4 < raw);
  auto trace = tr::read_rank_file(path);
  REQUIRE_MESSAGE(trace.ok(), trace.error().line());
  check_trace(trace.value(), header, entries, EndInfo{});
}

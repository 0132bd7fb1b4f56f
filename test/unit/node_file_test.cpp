// Node files (docs/trace-format.md §12): the trace writer held in memory gives the bytes of
// its rank file, spills to that file past its cap, and read_trace_dir reads a node file's
// sections as it reads rank and samples files, refusing cut, forged and doubled sections.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test_support.h"
#include "trace_dir_support.h"
#include "trace/node_file.h"
#include "trace/node_index.h"
#include "trace/reader.h"
#include "trace_writer.h"

using namespace pskel::test;
namespace tr = pskel::trace;

namespace {

const char kRunId[] = "20240101T000000-node01";

std::vector<Entry> entries_of(int rank, int count) {
  std::vector<Entry> out;
  for (int i = 0; i < count; ++i)
    out.push_back(make_entry(i % 3 ? tr::FunctionId::MPI_Send : tr::FunctionId::MPI_Waitall,
                             rank * 1000 + i, static_cast<uint16_t>(i % 3 ? 0 : 4)));
  return out;
}

// The bytes rank `rank`'s writer holds in memory (cap far above them).
std::vector<unsigned char> held_trace(int rank, int ranks, int count) {
  pskel::tracer::TraceWriter w;
  REQUIRE(w.open("/nonexistent/never-created", make_header(rank, ranks, kRunId), 4096, 64 << 20));
  for (const Entry& e : entries_of(rank, count)) append(w, e);
  REQUIRE(w.close(5'000'000'000, 0, 0));
  REQUIRE(w.output().held());
  return {w.output().memory(), w.output().memory() + w.output().memory_bytes()};
}

std::string samples_text(int rank) {
  return "pskel-samples 3 " + std::to_string(rank) + " " + kRunId + " 100\n"
         "0 1000 40000000 10 20 100 200 0\n"
         "100000000 2000 90000000 12 24 100 200 5\n";
}

struct NodeFileBuilder {
  std::vector<unsigned char> bytes;
  NodeFileBuilder() {
    const tr::NodeFileHeader h = tr::make_node_file_header();
    put(&h, sizeof h);
  }
  void put(const void* p, size_t n) {
    const size_t at = bytes.size();
    bytes.resize(at + n);
    if (n) std::memcpy(bytes.data() + at, p, n);
  }
  void section(tr::SectionKind kind, int rank, const void* content, size_t n) {
    const tr::SectionHeader h = tr::make_section_header(kind, rank, n);
    put(&h, sizeof h);
    put(content, n);
  }
  void trace(int rank, const std::vector<unsigned char>& image) {
    section(tr::SectionKind::trace, rank, image.data(), image.size());
  }
  void samples(int rank) {
    const std::string text = samples_text(rank);
    section(tr::SectionKind::samples, rank, text.data(), text.size());
  }
};

// Four ranks on two nodes: node.0 holds ranks 0 and 1 (traces and samples), node.2 ranks 2
// and 3 (rank 3's trace outgrew the memory and is its own file).
void write_two_node_trace(const TempDir& dir) {
  REQUIRE(pskel::tracer::write_meta(meta_for(dir.path(), 4, kRunId)));
  NodeFileBuilder first, second;
  for (int r : {0, 1}) {
    first.trace(r, held_trace(r, 4, 40 + r));
    first.samples(r);
  }
  second.trace(2, held_trace(2, 4, 42));
  second.samples(2);
  second.samples(3);
  write_bytes(dir.file("node.0.pskn"), first.bytes.data(), first.bytes.size());
  write_bytes(dir.file("node.2.pskn"), second.bytes.data(), second.bytes.size());
  const std::vector<unsigned char> own = held_trace(3, 4, 43);
  write_bytes(dir.file("rank.3.pskt"), own.data(), own.size());
}

void check_refused(const TempDir& dir, const std::string& file, std::string_view needle) {
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(!set.ok(), "accepted, expected an error on " << file);
  INFO("error: " << set.error().line());
  CHECK(set.error().file.starts_with(file));
  CHECK(contains(set.error().line(), needle));
}

}  // namespace

TEST_CASE("a trace held in memory is byte for byte the rank file written directly") {
  TempDir dir;
  const std::vector<Entry> entries = entries_of(1, 300);
  write_rank_file(dir.file("rank.1.pskt"), make_header(1, 4, kRunId), entries, 4096,
                  EndInfo{5'000'000'000, 0, 0});
  CHECK(held_trace(1, 4, 300) == read_bytes(dir.file("rank.1.pskt")));
}

TEST_CASE("a trace held in memory moves to its own file past the cap, whole") {
  TempDir dir;
  const std::vector<Entry> entries = entries_of(0, 2000);  // ~170 kB
  write_rank_file(dir.file("direct"), make_header(0, 1, kRunId), entries, 4096,
                  EndInfo{5'000'000'000, 0, 0});
  pskel::tracer::TraceWriter w;
  REQUIRE(w.open(dir.file("spilled"), make_header(0, 1, kRunId), 4096, 32 << 10));
  for (const Entry& e : entries) append(w, e);
  CHECK_FALSE(w.output().held());  // the file exists from the moment the cap was passed
  REQUIRE(w.close(5'000'000'000, 0, 0));
  CHECK(w.dropped() == 0);
  CHECK(read_bytes(dir.file("spilled")) == read_bytes(dir.file("direct")));
}

TEST_CASE("a trace held in memory is spilled to its file on demand, also after it was closed") {
  TempDir dir;
  pskel::tracer::TraceWriter w;
  REQUIRE(w.open(dir.file("rank.0.pskt"), make_header(0, 1, kRunId), 4096, 64 << 20));
  for (const Entry& e : entries_of(0, 50)) append(w, e);
  REQUIRE(w.close(5'000'000'000, 0, 0));
  const std::vector<unsigned char> held(w.output().memory(),
                                        w.output().memory() + w.output().memory_bytes());
  REQUIRE(w.output().spill());
  CHECK_FALSE(w.output().held());
  CHECK(read_bytes(dir.file("rank.0.pskt")) == held);
}

TEST_CASE("node files and rank files of one trace are read together, samples included") {
  TempDir dir;
  write_two_node_trace(dir);
  auto set = tr::read_trace_dir(dir.path());
  REQUIRE_MESSAGE(set.ok(), set.error().line());
  REQUIRE(set.value().ranks.size() == 4);
  for (int r = 0; r < 4; ++r) {
    const tr::RankTrace& rank = set.value().ranks[static_cast<size_t>(r)];
    CAPTURE(r);
    CHECK(rank.header.rank == r);
    CHECK(rank.complete);
    REQUIRE(rank.records.size() == static_cast<size_t>(40 + r));
    CHECK(rank.records[1].t_start == make_record(tr::FunctionId::MPI_Send, r * 1000 + 1).t_start);
    CHECK(rank.aux_of(0).size() == 4);
    CHECK(rank.footprint_bytes == 50'000'000);  // from the samples section
    CHECK(rank.run_delay.size() == 2);
  }
}

TEST_CASE("a node file's sections read as the rank files they stand for") {
  TempDir packed, plain;
  write_two_node_trace(packed);
  REQUIRE(pskel::tracer::write_meta(meta_for(plain.path(), 4, kRunId)));
  for (int r = 0; r < 4; ++r) {
    const std::vector<unsigned char> image = held_trace(r, 4, 40 + r);
    write_bytes(plain.file("rank." + std::to_string(r) + ".pskt"), image.data(), image.size());
    write_text(plain.file("samples." + std::to_string(r)), samples_text(r));
  }
  auto a = tr::read_trace_dir(packed.path());
  auto b = tr::read_trace_dir(plain.path());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const tr::TraceSummary sa = tr::summarize(a.value()), sb = tr::summarize(b.value());
  CHECK(sa.events_per_rank == sb.events_per_rank);
  CHECK(sa.functions == sb.functions);
  CHECK(sa.wall_seconds == sb.wall_seconds);
}

TEST_CASE("hostile node files are refused with the file named") {
  TempDir dir;
  write_two_node_trace(dir);
  const std::vector<unsigned char> good = read_bytes(dir.file("node.2.pskn"));
  const std::string node2 = dir.file("node.2.pskn");
  auto rewrite = [&](std::vector<unsigned char> bytes) {
    write_bytes(node2, bytes.data(), bytes.size());
  };

  SUBCASE("cut in a section") {
    rewrite({good.begin(), good.end() - 7});
    check_refused(dir, node2, "truncated");
  }
  SUBCASE("cut in a section header") {
    rewrite({good.begin(), good.begin() + sizeof(tr::NodeFileHeader) + 10});
    check_refused(dir, node2, "section header cut short");
  }
  SUBCASE("a forged section size") {
    std::vector<unsigned char> bytes = good;
    bytes[sizeof(tr::NodeFileHeader) + offsetof(tr::SectionHeader, bytes)] ^= 1;
    rewrite(bytes);
    check_refused(dir, node2, "no valid section header");
  }
  SUBCASE("bad magic") {
    std::vector<unsigned char> bytes = good;
    bytes[0] = 'X';
    rewrite(bytes);
    check_refused(dir, node2, "not a pskel node file");
  }
  SUBCASE("a newer version") {
    std::vector<unsigned char> bytes = good;
    bytes[offsetof(tr::NodeFileHeader, version)] = 9;
    rewrite(bytes);
    check_refused(dir, node2, "unsupported node file version 9");
  }
  SUBCASE("a rank outside the trace") {
    NodeFileBuilder b;
    b.trace(7, held_trace(2, 4, 42));
    rewrite(b.bytes);
    check_refused(dir, node2, "holds rank 7");
  }
  SUBCASE("a rank's trace twice") {
    NodeFileBuilder b;
    b.trace(0, held_trace(0, 4, 40));
    rewrite(b.bytes);
    check_refused(dir, node2, "a second time");
  }
  SUBCASE("a rank's trace in a node file and in its own file") {
    NodeFileBuilder b;
    b.trace(2, held_trace(2, 4, 42));
    b.trace(3, held_trace(3, 4, 43));
    rewrite(b.bytes);
    check_refused(dir, dir.file("rank.3.pskt"), "also in");
  }
  SUBCASE("a section holding another rank's trace") {
    NodeFileBuilder b;
    b.trace(2, held_trace(1, 4, 41));
    b.samples(2);
    b.samples(3);
    rewrite(b.bytes);
    check_refused(dir, node2 + " (rank 2's trace)", "holds rank 1 of 4");
  }
  SUBCASE("a rank nowhere") {
    NodeFileBuilder b;
    b.samples(2);
    b.samples(3);
    rewrite(b.bytes);
    check_refused(dir, dir.file("rank.2.pskt"), "no node file holds it");
  }
  SUBCASE("more empty sections of an unknown kind than a trace holds") {
    NodeFileBuilder b;
    for (int i = 0; i < 2 * 4 + static_cast<int>(tr::kMaxExtraSections) + 1; ++i)
      b.section(static_cast<tr::SectionKind>(9), 2, "", 0);
    rewrite(b.bytes);
    check_refused(dir, node2, "more sections than a trace of 4 ranks holds");
  }
  SUBCASE("a section of a kind this reader does not know is skipped") {
    std::vector<unsigned char> bytes = good;
    NodeFileBuilder extra;
    extra.section(static_cast<tr::SectionKind>(9), 2, "future", 6);
    bytes.insert(bytes.end(), extra.bytes.begin() + sizeof(tr::NodeFileHeader), extra.bytes.end());
    rewrite(bytes);
    auto set = tr::read_trace_dir(dir.path());
    CHECK_MESSAGE(set.ok(), set.error().line());
  }
}

// The reader on malformed, truncated and corrupted rank files: every one gives an Error that
// names the file and says what is wrong, and none crashes (the suite also runs under ASan).
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "test_support.h"
#include "trace/reader.h"
#include "trace_writer.h"

using namespace pskel::test;
using pskel::tracer::TraceWriter;
namespace tr = pskel::trace;

namespace {

const tr::ReadOptions kLenient{.allow_truncated = true};

// Parses a copy of exactly `bytes` (so that ASan sees any read past the end).
pskel::Result<tr::RankTrace> parse(const std::vector<unsigned char>& bytes,
                                   const std::string& name, const tr::ReadOptions& options = {}) {
  const std::vector<unsigned char> exact(bytes.begin(), bytes.end());
  return tr::parse_rank_trace(std::span<const unsigned char>(exact.data(), exact.size()), name,
                              options);
}

// Checks that `r` failed with an error on `name` whose message holds every one of `needles`.
template <class T>
void check_error(const pskel::Result<T>& r, const std::string& name,
                 std::initializer_list<std::string_view> needles) {
  REQUIRE_MESSAGE(!r.ok(), "accepted, expected an error containing " << *needles.begin());
  const pskel::Error& e = r.error();
  INFO("error: " << e.line());
  CHECK(e.file == name);
  CHECK(e.line().rfind(name + ": ", 0) == 0);
  for (const std::string_view n : needles) CHECK_MESSAGE(contains(e.what, n), "missing '" << n << "'");
}

// A small valid file: rank 1 of 2, two data blocks (3 records, then 1) and the end block.
struct SmallFile {
  tr::FileHeader header = make_header(1, 2, "small");
  std::vector<Entry> entries = {make_entry(tr::FunctionId::MPI_Send, 0, 0),
                                make_entry(tr::FunctionId::MPI_Waitall, 1, 2),
                                make_entry(tr::FunctionId::MPI_Barrier, 2, 0),
                                make_entry(tr::FunctionId::MPI_Recv, 3, 1)};
  std::vector<unsigned char> bytes;
  std::vector<BlockAt> blocks;

  SmallFile() {
    TempDir dir;
    const std::string path = dir.file("rank.1.pskt");
    TraceWriter w;
    REQUIRE(w.open(path, header, 0));
    for (size_t i = 0; i < 3; ++i) append(w, entries[i]);
    w.flush();
    append(w, entries[3]);
    REQUIRE(w.close(100000, 0, 0));
    bytes = read_bytes(path);
    blocks = walk_blocks(bytes);
    REQUIRE(blocks.size() == 3);
  }
  // Records in the data blocks that end at or before byte `n`.
  size_t records_before(size_t n) const {
    size_t count = 0;
    for (const BlockAt& b : blocks)
      if (b.header.magic != tr::kEndBlockMagic &&
          b.offset + sizeof(tr::BlockHeader) + b.header.payload_bytes <= n)
        count += b.header.record_count;
    return count;
  }
};

// A file written by TraceWriter with a doctored header.
std::vector<unsigned char> written_with(const tr::FileHeader& header) {
  TempDir dir;
  const std::string path = dir.file("f.pskt");
  write_rank_file(path, header, {make_entry(tr::FunctionId::MPI_Send, 1, 1)});
  return read_bytes(path);
}

std::vector<unsigned char> record_bytes(const tr::Record& r, std::initializer_list<int64_t> aux) {
  std::vector<unsigned char> out;
  put_into(out, r);
  for (const int64_t w : aux) put_into(out, w);
  return out;
}

}  // namespace

TEST_CASE("the small test file itself is read back completely") {
  SmallFile f;
  auto r = parse(f.bytes, "small.pskt");
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  CHECK(r.value().complete);
  REQUIRE(r.value().records.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(r.value().records[i] == f.entries[i].record);
}

TEST_CASE("a rank file read from disk, in one call or block by block, is what its bytes parse to") {
  // Under 256 kB the reader takes the file in one read; above it, block by block: the same
  // records, the same errors.
  for (const size_t records : {size_t{40}, size_t{40000}}) {
    CAPTURE(records);
    TempDir dir;
    const std::string path = dir.file("rank.0.pskt");
    std::vector<Entry> entries;
    for (size_t i = 0; i < records; ++i)
      entries.push_back(make_entry(i % 2 ? tr::FunctionId::MPI_Recv : tr::FunctionId::MPI_Send,
                                   static_cast<int64_t>(i), 0));
    write_rank_file(path, make_header(0, 1, "disk"), entries);
    const std::vector<unsigned char> bytes = read_bytes(path);
    CHECK((bytes.size() > (size_t{256} << 10)) == (records > 1000));
    auto from_disk = tr::read_rank_file(path);
    REQUIRE_MESSAGE(from_disk.ok(), from_disk.error().line());
    auto from_bytes = parse(bytes, path);
    REQUIRE(from_bytes.ok());
    CHECK(from_disk.value().records == from_bytes.value().records);
    CHECK(from_disk.value().records.size() == records);
    // Cut in its last block: truncated either way, at the same byte.
    const std::string cut_path = dir.file("rank.1.pskt");
    const std::vector<unsigned char> cut(bytes.begin(), bytes.end() - 100);
    write_bytes(cut_path, cut.data(), cut.size());
    auto cut_disk = tr::read_rank_file(cut_path);
    REQUIRE_FALSE(cut_disk.ok());
    auto cut_bytes = parse(cut, cut_path);
    REQUIRE_FALSE(cut_bytes.ok());
    CHECK(cut_disk.error().line() == cut_bytes.error().line());
  }
}

TEST_CASE("an empty file is rejected as not a pskel trace") {
  check_error(parse({}, "empty.pskt"), "empty.pskt", {"empty file"});
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  write_text(path, "");
  check_error(tr::read_rank_file(path), path, {"empty file"});
}

TEST_CASE("a file shorter than the header is reported as truncated") {
  SmallFile f;
  for (const size_t n : {size_t{1}, size_t{8}, size_t{100}, sizeof(tr::FileHeader) - 1}) {
    CAPTURE(n);
    std::vector<unsigned char> cut(f.bytes.begin(), f.bytes.begin() + static_cast<long>(n));
    check_error(parse(cut, "short.pskt"), "short.pskt", {"truncated", "shorter than the file header"});
  }
}

TEST_CASE("a file with the wrong magic is rejected as not a pskel trace") {
  tr::FileHeader h = make_header();
  h.magic[7] = 'X';
  check_error(parse(written_with(h), "magic.pskt"), "magic.pskt", {"bad magic"});
  std::string text(300, 'a');  // a text file of the right size
  std::vector<unsigned char> bytes(text.begin(), text.end());
  check_error(parse(bytes, "text.pskt"), "text.pskt", {"bad magic"});
}

TEST_CASE("a file of another format version is rejected naming the version") {
  tr::FileHeader h = make_header();
  h.version = tr::kFormatVersion + 1;
  check_error(parse(written_with(h), "v.pskt"), "v.pskt",
              {"unsupported trace format version", std::to_string(tr::kFormatVersion + 1)});
  h.version = 0;
  check_error(parse(written_with(h), "v0.pskt"), "v0.pskt", {"version 0"});
}

TEST_CASE("a header whose header or record size disagrees with the format is corrupt") {
  tr::FileHeader h = make_header();
  h.header_bytes = 255;
  check_error(parse(written_with(h), "h.pskt"), "h.pskt", {"corrupt", "sizes"});
  h = make_header();
  h.record_bytes = 88;
  check_error(parse(written_with(h), "r.pskt"), "r.pskt", {"corrupt", "sizes"});
}

TEST_CASE("a rank outside 0 .. world_size-1 is corrupt") {
  struct Case {
    int32_t rank, world_size;
  };
  for (const Case c : {Case{2, 2}, Case{5, 2}, Case{-1, 2}, Case{0, 0}, Case{0, -3}}) {
    CAPTURE(c.rank);
    CAPTURE(c.world_size);
    check_error(parse(written_with(make_header(c.rank, c.world_size)), "rank.pskt"), "rank.pskt",
                {"corrupt", "rank"});
  }
  auto ok = parse(written_with(make_header(1, 2)), "rank.pskt");
  CHECK_MESSAGE(ok.ok(), ok.error().line());
}

TEST_CASE("a file cut at any byte is rejected as truncated, never crashing") {
  SmallFile f;
  for (size_t n = 0; n < f.bytes.size(); ++n) {
    CAPTURE(n);
    const std::vector<unsigned char> cut(f.bytes.begin(), f.bytes.begin() + static_cast<long>(n));
    auto r = parse(cut, "cut.pskt");
    REQUIRE(!r.ok());
    REQUIRE(r.error().file == "cut.pskt");
    const std::string& what = r.error().what;
    if (n == 0) {
      REQUIRE(contains(what, "empty file"));
    } else {
      REQUIRE_MESSAGE(contains(what, "truncated"), what);
    }
  }
}

TEST_CASE("a file cut inside a block is reported as truncated with the byte offset") {
  SmallFile f;
  for (const BlockAt& b : f.blocks) {
    const size_t end = b.offset + sizeof(tr::BlockHeader) + b.header.payload_bytes;
    for (size_t n = b.offset + 1; n < end; ++n) {
      CAPTURE(n);
      const std::vector<unsigned char> cut(f.bytes.begin(), f.bytes.begin() + static_cast<long>(n));
      auto r = parse(cut, "cut.pskt");
      REQUIRE(!r.ok());
      const std::string& what = r.error().what;
      REQUIRE_MESSAGE(contains(what, "truncated"), what);
      REQUIRE_MESSAGE(contains(what, "at byte " + std::to_string(b.offset)), what);
      // allow_truncated may reject the torn block, or keep exactly the whole blocks before it.
      auto lenient = parse(cut, "cut.pskt", kLenient);
      if (lenient.ok()) {
        REQUIRE_FALSE(lenient.value().complete);
        REQUIRE(lenient.value().records.size() == f.records_before(n));
      } else {
        REQUIRE_MESSAGE(contains(lenient.error().what, "truncated"), lenient.error().what);
      }
    }
  }
}

TEST_CASE("a file cut between blocks is truncated, or with allow_truncated keeps whole blocks") {
  SmallFile f;
  std::vector<size_t> boundaries = {sizeof(tr::FileHeader)};
  for (const BlockAt& b : f.blocks) boundaries.push_back(b.offset + sizeof(tr::BlockHeader) + b.header.payload_bytes);
  boundaries.pop_back();  // the whole file
  REQUIRE(boundaries.size() == 3);
  for (const size_t n : boundaries) {
    CAPTURE(n);
    const std::vector<unsigned char> cut(f.bytes.begin(), f.bytes.begin() + static_cast<long>(n));
    const size_t expected = f.records_before(n);
    check_error(parse(cut, "cut.pskt"), "cut.pskt",
                {"truncated", "no end block after " + std::to_string(expected) + " records"});
    auto r = parse(cut, "cut.pskt", kLenient);
    REQUIRE_MESSAGE(r.ok(), r.error().line());
    CHECK_FALSE(r.value().complete);
    REQUIRE(r.value().records.size() == expected);
    for (size_t i = 0; i < expected; ++i) {
      CHECK(r.value().records[i] == f.entries[i].record);
      const auto aux = r.value().aux_of(i);
      CHECK(std::vector<int64_t>(aux.begin(), aux.end()) == f.entries[i].aux);
    }
  }
}

TEST_CASE("a flipped byte anywhere is detected, except in header fields the reader ignores") {
  SmallFile f;
  const size_t validated_end = offsetof(tr::FileHeader, world_size);  // magic .. rank
  int accepted = 0;
  for (size_t at = 0; at < f.bytes.size(); ++at) {
    CAPTURE(at);
    std::vector<unsigned char> bad = f.bytes;
    bad[at] ^= 0xFF;
    auto r = parse(bad, "flip.pskt");
    if (r.ok()) {
      // Only header fields that nothing checks (world_size can still be consistent, flavour,
      // times, pid, run id, hostname, reserved) may change unnoticed; the records must not.
      REQUIRE_MESSAGE(at >= validated_end, "flip in a validated header field accepted");
      REQUIRE_MESSAGE(at < sizeof(tr::FileHeader), "flip in a block accepted");
      REQUIRE(r.value().records.size() == f.entries.size());
      for (size_t i = 0; i < f.entries.size(); ++i) REQUIRE(r.value().records[i] == f.entries[i].record);
      ++accepted;
      continue;
    }
    const std::string& what = r.error().what;
    REQUIRE(r.error().file == "flip.pskt");
    REQUIRE_FALSE(what.empty());
    if (at < offsetof(tr::FileHeader, version)) {
      REQUIRE_MESSAGE(contains(what, "bad magic"), what);
    } else if (at < offsetof(tr::FileHeader, header_bytes)) {
      REQUIRE_MESSAGE(contains(what, "version"), what);
    } else {
      REQUIRE_MESSAGE((contains(what, "corrupt") || contains(what, "truncated")), what);
    }
    if (at >= sizeof(tr::FileHeader) && at < f.blocks[1].offset && at >= f.blocks[0].offset + 12 &&
        at < f.blocks[0].offset + 16) {
      CHECK_MESSAGE(contains(what, "checksum"), what);  // the stored crc itself
    }
  }
  // The unchecked header bytes: world_size's low bytes, flavour .. reserved.
  CHECK(accepted > 150);
  CHECK(accepted <= static_cast<int>(sizeof(tr::FileHeader) - validated_end));
}

TEST_CASE("every single-bit flip after the header is rejected as corrupt or truncated") {
  SmallFile f;
  for (size_t bit = sizeof(tr::FileHeader) * 8; bit < f.bytes.size() * 8; ++bit) {
    std::vector<unsigned char> bad = f.bytes;
    bad[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    auto r = parse(bad, "bit.pskt");
    if (r.ok()) {
      FAIL_CHECK("bit " << bit << " (byte " << bit / 8 << ") flipped and accepted");
      continue;
    }
    if (!(contains(r.error().what, "corrupt") || contains(r.error().what, "truncated")))
      FAIL_CHECK("bit " << bit << ": " << r.error().what);
  }
  // A flip in the payload of the first data block is a checksum mismatch there.
  std::vector<unsigned char> bad = f.bytes;
  bad[f.blocks[0].offset + sizeof(tr::BlockHeader) + 20] ^= 4;
  check_error(parse(bad, "bit.pskt"), "bit.pskt",
              {"corrupt", "checksum", "at byte " + std::to_string(f.blocks[0].offset)});
}

// Regression: the record_count of an end block's header (outside the checksum; the writer
// always writes 0) used to be neither checked nor covered, so a corrupted count was accepted.
TEST_CASE("an end block whose header's record_count is not 0 is corrupt") {
  SmallFile f;
  const size_t field = f.blocks.back().offset + offsetof(tr::BlockHeader, record_count);
  for (const uint32_t count : {1u, 4u, 0x100u, 0xFFFFFFFFu}) {
    CAPTURE(count);
    auto bad = f.bytes;
    std::memcpy(bad.data() + field, &count, sizeof count);
    for (const tr::ReadOptions& options : {tr::ReadOptions{}, kLenient}) {
      check_error(parse(bad, "endcount.pskt", options), "endcount.pskt",
                  {"corrupt", "end block at byte " + std::to_string(f.blocks.back().offset),
                   "record_count " + std::to_string(count) + ", not 0"});
    }
  }
}

TEST_CASE("a file without its end block is truncated unless allow_truncated is set") {
  SmallFile f;
  const size_t end_at = f.blocks.back().offset;
  const std::vector<unsigned char> cut(f.bytes.begin(), f.bytes.begin() + static_cast<long>(end_at));
  check_error(parse(cut, "noend.pskt"), "noend.pskt", {"truncated", "no end block after 4 records"});
  auto r = parse(cut, "noend.pskt", kLenient);
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  CHECK_FALSE(r.value().complete);
  REQUIRE(r.value().records.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(r.value().records[i] == f.entries[i].record);
    const auto aux = r.value().aux_of(i);
    CHECK(std::vector<int64_t>(aux.begin(), aux.end()) == f.entries[i].aux);
  }
  CHECK(r.value().end.records == 0);  // no end payload was read
}

TEST_CASE("anything after the end block is corrupt") {
  SmallFile f;
  const std::string where = "at byte " + std::to_string(f.bytes.size());
  SUBCASE("one garbage byte") {
    auto bad = f.bytes;
    bad.push_back(0x00);
    check_error(parse(bad, "tail.pskt"), "tail.pskt", {"corrupt", "after the end block", where});
    check_error(parse(bad, "tail.pskt", kLenient), "tail.pskt", {"corrupt", "after the end block"});
  }
  SUBCASE("a second, valid end block") {
    auto bad = f.bytes;
    bad.insert(bad.end(), f.bytes.begin() + static_cast<long>(f.blocks.back().offset), f.bytes.end());
    check_error(parse(bad, "tail.pskt"), "tail.pskt", {"corrupt", "after the end block", where});
  }
  SUBCASE("a valid data block") {
    FileBuilder b(f.header);
    b.bytes = f.bytes;
    b.block(tr::kDataBlockMagic, record_bytes(make_record(tr::FunctionId::MPI_Send, 9), {}), 1);
    check_error(parse(b.bytes, "tail.pskt"), "tail.pskt", {"corrupt", "after the end block", where});
  }
}

// A function added to mpi_functions.tbl after this reader was built: its records are framed
// like any other (aux_words says how long they are), so they are skipped, not an error.
TEST_CASE("records of function ids the reader does not know are skipped and counted") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  Entry newer = make_entry(tr::FunctionId::MPI_Send, 1, 3);
  newer.record.function = 999;
  Entry newest = make_entry(tr::FunctionId::MPI_Send, 3, 0);
  newest.record.function = 0xFFFF;
  const std::vector<Entry> known = {make_entry(tr::FunctionId::MPI_Send, 0, 0),
                                    make_entry(tr::FunctionId::MPI_Waitall, 2, 4),
                                    make_entry(tr::FunctionId::MPI_Recv, 4, 0)};
  write_rank_file(path, make_header(), {known[0], newer, known[1], newest, known[2]});

  auto r = tr::read_rank_file(path);
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  const tr::RankTrace& t = r.value();
  CHECK(t.complete);
  CHECK(t.unknown_records == 2);
  CHECK(t.end.records == 5);  // the end block counts every record in the file
  REQUIRE(t.records.size() == known.size());
  for (size_t i = 0; i < known.size(); ++i) {
    CHECK(t.records[i] == known[i].record);
    const auto aux = t.aux_of(i);
    CHECK(std::vector<int64_t>(aux.begin(), aux.end()) == known[i].aux);
  }

  // Without the end block as well.
  auto bytes = read_bytes(path);
  bytes.resize(walk_blocks(bytes).back().offset);
  auto lenient = parse(bytes, "cut.pskt", kLenient);
  REQUIRE_MESSAGE(lenient.ok(), lenient.error().line());
  CHECK(lenient.value().unknown_records == 2);
  CHECK(lenient.value().records.size() == known.size());
  check_error(parse(bytes, "cut.pskt"), "cut.pskt", {"no end block after 5 records"});
}

TEST_CASE("errors after a skipped record give the record's index in the file") {
  tr::Record newer = make_record(tr::FunctionId::MPI_Send, 1, 2);
  newer.function = 999;
  auto payload = record_bytes(newer, {7, 8});
  const auto send = record_bytes(make_record(tr::FunctionId::MPI_Send, 2), {});
  payload.insert(payload.end(), send.begin(), send.begin() + 40);
  FileBuilder b(make_header());
  b.block(tr::kDataBlockMagic, payload, 2);
  b.end_block(2);
  check_error(parse(b.bytes, "short.pskt"), "short.pskt", {"corrupt", "record 1 cut short"});
}

TEST_CASE("an unknown record's aux words must still lie inside its block") {
  tr::Record newer = make_record(tr::FunctionId::MPI_Send, 1, 5);
  newer.function = 999;
  FileBuilder b(make_header());
  b.block(tr::kDataBlockMagic, record_bytes(newer, {1, 2}), 1);
  b.end_block(1);
  check_error(parse(b.bytes, "aux.pskt"), "aux.pskt",
              {"corrupt", "record 0 announces 5 aux words past its block"});
}

TEST_CASE("a record with function id 0, which is never assigned, is corrupt") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  Entry zero = make_entry(tr::FunctionId::MPI_Send, 1, 0);
  zero.record.function = 0;
  write_rank_file(path, make_header(), {make_entry(tr::FunctionId::MPI_Send, 0, 0), zero});
  check_error(tr::read_rank_file(path), path,
              {"corrupt", "block at byte 256", "record 1 has function id 0"});
  check_error(tr::read_rank_file(path, kLenient), path, {"record 1 has function id 0"});
}

TEST_CASE("a block whose payload is not a sequence of whole records is corrupt") {
  const tr::FileHeader h = make_header();
  const tr::Record send = make_record(tr::FunctionId::MPI_Send, 1);

  SUBCASE("aux words announced past the end of the block") {
    FileBuilder b(h);
    b.block(tr::kDataBlockMagic, record_bytes(make_record(tr::FunctionId::MPI_Waitall, 1, 5), {1, 2}), 1);
    b.end_block(1);
    check_error(parse(b.bytes, "aux.pskt"), "aux.pskt",
                {"corrupt", "record 0 announces 5 aux words past its block"});
  }
  SUBCASE("a record cut short inside its block") {
    auto payload = record_bytes(send, {});
    const auto second = record_bytes(send, {});
    payload.insert(payload.end(), second.begin(), second.begin() + 40);
    FileBuilder b(h);
    b.block(tr::kDataBlockMagic, payload, 2);
    b.end_block(2);
    check_error(parse(b.bytes, "short.pskt"), "short.pskt", {"corrupt", "record 1 cut short"});
  }
  SUBCASE("fewer records than the block header says") {
    auto payload = record_bytes(send, {});
    const auto second = record_bytes(send, {});
    payload.insert(payload.end(), second.begin(), second.end());
    FileBuilder b(h);
    b.block(tr::kDataBlockMagic, payload, 3);
    b.end_block(2);
    check_error(parse(b.bytes, "count.pskt"), "count.pskt",
                {"corrupt", "block holds 2 records, its header says 3"});
  }
  SUBCASE("more records than the block header says") {
    auto payload = record_bytes(send, {});
    const auto second = record_bytes(send, {});
    payload.insert(payload.end(), second.begin(), second.end());
    FileBuilder b(h);
    b.block(tr::kDataBlockMagic, payload, 1);
    b.end_block(2);
    check_error(parse(b.bytes, "count.pskt"), "count.pskt",
                {"corrupt", "block holds 2 records, its header says 1"});
  }
}

TEST_CASE("block headers that do not describe a block are corrupt or truncated") {
  const tr::FileHeader h = make_header();
  const auto payload = record_bytes(make_record(tr::FunctionId::MPI_Send, 1), {});

  SUBCASE("unknown block magic") {
    FileBuilder b(h);
    b.block(0x12345678, payload, 1);
    b.end_block(1);
    check_error(parse(b.bytes, "m.pskt"), "m.pskt", {"corrupt", "no block starts at byte 256"});
  }
  SUBCASE("payload size past the end of the file") {
    FileBuilder b(h);
    const tr::BlockHeader bh{tr::kDataBlockMagic, 0xFFFFFFFFu, 1, 0};
    b.put(&bh, sizeof bh);
    b.put(payload.data(), payload.size());
    check_error(parse(b.bytes, "big.pskt"), "big.pskt",
                {"truncated", "block at byte 256 needs 4294967295 bytes, 80 remain"});
  }
  SUBCASE("wrong checksum") {
    FileBuilder b(h);
    const tr::BlockHeader bh{tr::kDataBlockMagic, static_cast<uint32_t>(payload.size()), 1,
                             pskel::crc32c(payload.data(), payload.size()) ^ 1u};
    b.put(&bh, sizeof bh);
    b.put(payload.data(), payload.size());
    b.end_block(1);
    check_error(parse(b.bytes, "crc.pskt"), "crc.pskt",
                {"corrupt", "checksum mismatch in block at byte 256"});
  }
  SUBCASE("an end block of the wrong size") {
    FileBuilder b(h);
    b.block(tr::kDataBlockMagic, payload, 1);
    b.block(tr::kEndBlockMagic, std::vector<unsigned char>(24, 0), 0);
    check_error(parse(b.bytes, "end.pskt"), "end.pskt", {"corrupt", "end block", "wrong size"});
  }
  SUBCASE("an end block counting other records than the file holds") {
    FileBuilder b(h);
    b.block(tr::kDataBlockMagic, payload, 1);
    b.end_block(5);
    check_error(parse(b.bytes, "end.pskt"), "end.pskt",
                {"corrupt", "end block counts 5 records, the file holds 1"});
  }
  SUBCASE("a block header cut short") {
    FileBuilder b(h);
    b.block(tr::kDataBlockMagic, payload, 1);
    b.bytes.resize(b.bytes.size() + 7, 0);
    check_error(parse(b.bytes, "bh.pskt", kLenient), "bh.pskt",
                {"truncated", "block header cut short at byte " + std::to_string(256 + 16 + 80)});
  }
}

TEST_CASE("read_rank_file reports a missing file, a directory and a symlink by name") {
  TempDir dir;
  const std::string missing = dir.file("rank.7.pskt");
  check_error(tr::read_rank_file(missing), missing, {"missing"});

  check_error(tr::read_rank_file(dir.path()), dir.path(), {"not a regular file"});

  const std::string real = dir.file("real.pskt");
  write_rank_file(real, make_header(), {make_entry(tr::FunctionId::MPI_Send, 0, 0)});
  REQUIRE(tr::read_rank_file(real).ok());
  const std::string link = dir.file("link.pskt");
  REQUIRE(::symlink(real.c_str(), link.c_str()) == 0);
  check_error(tr::read_rank_file(link), link, {"symbolic link"});
}

// Packed blocks (format.h, kPackedBlockMagic): a record's mask, then per changed word its byte
// count (1-8) and that many bytes, then per aux word its byte count (0-8) and bytes.
TEST_CASE("a packed block that does not unpack into its records is corrupt, and named so") {
  const tr::FileHeader h = make_header();
  // One MPI_Send record packed by hand: every word written with all its 8 bytes.
  const tr::Record send = make_record(tr::FunctionId::MPI_Send, 3);
  std::vector<unsigned char> one = {0xFF, 0x03};  // all ten words changed (from zero)
  for (size_t i = 0; i < sizeof send / 8; ++i) {
    one.push_back(8);
    const size_t at = one.size();
    one.resize(at + 8);
    std::memcpy(one.data() + at, reinterpret_cast<const unsigned char*>(&send) + 8 * i, 8);
  }
  const auto file_with = [&](const std::vector<unsigned char>& payload, uint32_t records) {
    FileBuilder b(h);
    b.block(tr::kPackedBlockMagic, payload, records);
    b.end_block(records);
    return b.bytes;
  };
  auto ok = parse(file_with(one, 1), "ok.pskt");
  REQUIRE_MESSAGE(ok.ok(), ok.error().line());
  REQUIRE(ok.value().records.size() == 1);
  CHECK(ok.value().records[0] == send);

  const std::string where = "block at byte 256";
  SUBCASE("a mask with a word past the record's ten") {
    auto bad = one;
    bad[1] |= 0x04;
    check_error(parse(file_with(bad, 1), "mask.pskt"), "mask.pskt",
                {"corrupt", where, "changes words past its end"});
  }
  for (const unsigned char count : {0, 9, 255}) {
    CAPTURE(int{count});
    auto bad = one;
    bad[2] = count;
    check_error(parse(file_with(bad, 1), "count.pskt"), "count.pskt",
                {"corrupt", where, "bad or cut word"});
  }
  SUBCASE("cut inside a word, or before its mask") {
    auto cut = one;
    cut.resize(cut.size() - 3);
    check_error(parse(file_with(cut, 1), "cut.pskt"), "cut.pskt", {"corrupt", "bad or cut word"});
    check_error(parse(file_with(one, 2), "two.pskt"), "two.pskt", {"corrupt", "cut short"});
  }
  SUBCASE("bytes after its records") {
    auto more = one;
    more.push_back(0);
    check_error(parse(file_with(more, 1), "more.pskt"), "more.pskt",
                {"corrupt", "1 bytes after the block's 1 packed records"});
  }
  SUBCASE("aux words announced past its end, or cut, or of 9 bytes") {
    tr::Record waitall = make_record(tr::FunctionId::MPI_Waitall, 3, 2);
    std::vector<unsigned char> payload = {0x01, 0x00, 8};  // word 0 changed
    const size_t at = payload.size();
    payload.resize(at + 8);
    std::memcpy(payload.data() + at, &waitall, 8);
    check_error(parse(file_with(payload, 1), "aux.pskt"), "aux.pskt",
                {"corrupt", "announces 2 aux words past its end"});
    payload.insert(payload.end(), {0, 2, 1});  // the second aux word's 2 bytes cut to 1
    check_error(parse(file_with(payload, 1), "aux.pskt"), "aux.pskt",
                {"corrupt", "bad or cut aux word"});
    payload.back() = 9;
    payload.resize(payload.size() - 2);
    payload.insert(payload.end(), {9, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    check_error(parse(file_with(payload, 1), "aux.pskt"), "aux.pskt",
                {"corrupt", "bad or cut aux word"});
  }
  SUBCASE("records that unpack to more than the cap (2 bytes each, 80 unpacked)") {
    const uint32_t records = static_cast<uint32_t>(tr::kMaxPackedRecordBytes / sizeof(tr::Record)) + 1;
    std::vector<unsigned char> repeated = one;  // then the same record again, each a zero mask
    repeated.resize(one.size() + size_t{records - 1} * 2, 0);
    check_error(parse(file_with(repeated, records), "big.pskt"), "big.pskt",
                {"corrupt", "unpack to more than 256 MB"});
  }
  SUBCASE("in a version 1 file a packed block is no block") {
    tr::FileHeader v1 = h;
    v1.version = 1;
    FileBuilder b(v1);
    b.block(tr::kPackedBlockMagic, one, 1);
    b.end_block(1);
    check_error(parse(b.bytes, "v1.pskt"), "v1.pskt", {"corrupt", "no block starts at byte 256"});
  }
}

TEST_CASE("a version 1 file, raw blocks only, still reads") {
  tr::FileHeader v1 = make_header();
  v1.version = 1;
  const Entry e = make_entry(tr::FunctionId::MPI_Waitall, 4, 2);
  FileBuilder b(v1);
  b.block(tr::kDataBlockMagic, record_bytes(e.record, {e.aux[0], e.aux[1]}), 1);
  b.end_block(1);
  auto r = parse(b.bytes, "v1.pskt");
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  REQUIRE(r.value().records.size() == 1);
  CHECK(r.value().records[0] == e.record);
  CHECK(r.value().header.version == 1);
}

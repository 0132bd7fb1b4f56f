// Helpers shared by the unit tests: scratch directories, trace headers and records with
// recognisable contents, a TraceWriter front end, and a walker over the blocks of a rank file
// that is independent of the reader under test.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "trace_fields.h"
#include "trace/format.h"
#include "trace/functions.h"
#include "trace_writer.h"
#include "util/crc32c.h"


namespace doctest {
template <>
struct StringMaker<pskel::trace::Record> {
  static String convert(const pskel::trace::Record& r) {
    std::string s = "Record{function=" + std::to_string(r.function) +
                    " comm=" + std::to_string(r.comm) + " aux_words=" +
                    std::to_string(r.aux_words) + " peer=" + std::to_string(r.peer) +
                    " count=" + std::to_string(r.count) + " t_start=" + std::to_string(r.t_start) +
                    " t_end=" + std::to_string(r.t_end) + "}";
    return String(s.c_str());
  }
};
}  // namespace doctest

namespace pskel::test {

namespace tr = pskel::trace;

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/pskel-unit-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

inline tr::FileHeader make_header(int32_t rank = 0, int32_t world_size = 1,
                                  std::string_view run_id = "run-0123456789abcdef") {
  HeaderFields fields;
  fields.rank = rank;
  fields.world_size = world_size;
  fields.run_id = run_id;
  return file_header(fields);
}

inline uint16_t fid(tr::FunctionId f) { return static_cast<uint16_t>(f); }

// A record whose every field depends on `i`, so that swapped or shifted records are noticed.
inline tr::Record make_record(tr::FunctionId f, int64_t i, uint16_t aux_words = 0) {
  tr::Record r{};
  r.function = fid(f);
  r.comm = static_cast<uint16_t>(i % 7);
  r.op = static_cast<uint8_t>(i % 14);
  r.flags = static_cast<uint8_t>(i % 8);
  r.aux_words = aux_words;
  r.peer = static_cast<int32_t>(i % 64);
  r.source = static_cast<int32_t>((i * 3) % 64) - 5;
  r.tag = static_cast<int32_t>(i * 11);
  r.recv_tag = static_cast<int32_t>(-i);
  r.root = static_cast<int32_t>(i % 5) - 4;
  r.request = static_cast<uint32_t>(i + 1);
  r.count = i * 1000 + 1;
  r.recv_count = -i;
  r.type_size = static_cast<uint32_t>(1 + i % 16);
  r.recv_type_size = static_cast<uint32_t>(2 + i % 8);
  r.bytes = i * 17;
  r.t_start = 1000 * i;
  r.t_end = 1000 * i + 500;
  return r;
}

struct Entry {
  tr::Record record;
  std::vector<int64_t> aux;
};

inline Entry make_entry(tr::FunctionId f, int64_t i, uint16_t aux_words) {
  Entry e{make_record(f, i, aux_words), {}};
  for (uint16_t w = 0; w < aux_words; ++w)
    e.aux.push_back(static_cast<int64_t>((i << 20) ^ (int64_t{w} * 0x9E3779B97F4A7C15LL)));
  return e;
}

inline void append(tracer::TraceWriter& w, const Entry& e) {
  w.append(e.record, e.aux.empty() ? nullptr : e.aux.data(), e.aux.size());
}

struct EndInfo {
  int64_t end_ns = 987'654'321;
  uint32_t untraced_thread_calls = 3;
  uint32_t untracked_requests = 5;
};

// Writes a complete rank file; fails the test if the writer reports a problem.
inline void write_rank_file(const std::string& path, const tr::FileHeader& header,
                            const std::vector<Entry>& entries, size_t buffer_bytes = 1 << 16,
                            const EndInfo& end = {}) {
  tracer::TraceWriter w;
  REQUIRE_MESSAGE(w.open(path, header, buffer_bytes), w.error());
  for (const Entry& e : entries) append(w, e);
  REQUIRE_MESSAGE(w.close(end.end_ns, end.untraced_thread_calls, end.untracked_requests),
                  w.error());
  REQUIRE(w.dropped() == 0);
}

inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

inline void write_text(const std::string& path, std::string_view text) {
  write_bytes(path, text.data(), text.size());
}

// The blocks of a well-formed rank file, found without the reader under test.
struct BlockAt {
  size_t offset;
  tr::BlockHeader header;
};

inline std::vector<BlockAt> walk_blocks(const std::vector<unsigned char>& bytes) {
  std::vector<BlockAt> blocks;
  size_t at = sizeof(tr::FileHeader);
  REQUIRE(bytes.size() >= at);
  while (at < bytes.size()) {
    REQUIRE(bytes.size() - at >= sizeof(tr::BlockHeader));
    tr::BlockHeader b;
    std::memcpy(&b, bytes.data() + at, sizeof b);
    REQUIRE((b.magic == tr::kDataBlockMagic || b.magic == tr::kPackedBlockMagic ||
             b.magic == tr::kEndBlockMagic));
    REQUIRE(bytes.size() - at - sizeof b >= b.payload_bytes);
    CHECK(pskel::crc32c(bytes.data() + at + sizeof b, b.payload_bytes) == b.crc32c);
    blocks.push_back({at, b});
    at += sizeof b + b.payload_bytes;
  }
  return blocks;
}

// Builds rank files byte by byte, for layouts the writer never produces.
struct FileBuilder {
  std::vector<unsigned char> bytes;

  explicit FileBuilder(const tr::FileHeader& header) { put(&header, sizeof header); }

  void put(const void* p, size_t n) {
    const size_t at = bytes.size();
    bytes.resize(at + n);  // not insert(): GCC 12 warns falsely (stringop-overflow) on that
    if (n) std::memcpy(bytes.data() + at, p, n);
  }
  void block(uint32_t magic, const std::vector<unsigned char>& payload, uint32_t records) {
    const tr::BlockHeader b{magic, static_cast<uint32_t>(payload.size()), records,
                            pskel::crc32c(payload.data(), payload.size())};
    put(&b, sizeof b);
    put(payload.data(), payload.size());
  }
  void end_block(uint64_t records, int64_t end_ns = 1000) {
    const tr::EndPayload e{records, 0, end_ns, 0, 0};
    std::vector<unsigned char> payload(sizeof e);
    std::memcpy(payload.data(), &e, sizeof e);
    block(tr::kEndBlockMagic, payload, 0);
  }
};

template <class T>
void put_into(std::vector<unsigned char>& out, const T& value) {
  const size_t at = out.size();
  out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);
}

inline bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace pskel::test

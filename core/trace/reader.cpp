#include "trace/reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "trace/gaps.h"
#include "trace/node_index.h"
#include "util/crc32c.h"
#include "util/file_read.h"
#include "util/parallel.h"
#include "util/safe_dir.h"

namespace pskel::trace {
namespace {

constexpr uint64_t kMaxFileBytes = uint64_t{64} << 30;  // far beyond any real trace

constexpr uint64_t kMaxMetaBytes = uint64_t{64} << 20;  // the args of 16,384 ranks' hosts fit

// The documented type of each meta.json key (docs/trace-format.md §6). A key of another type
// is refused here, once, so that no reader further on can be surprised by it.
std::string check_meta_types(const nlohmann::json& meta) {
  using J = nlohmann::json;
  const auto strings = [](const J& v) {
    return v.is_array() && std::all_of(v.begin(), v.end(), [](const J& e) { return e.is_string(); });
  };
  const auto numbers = [](const J& v) {
    return v.is_array() &&
           std::all_of(v.begin(), v.end(), [](const J& e) { return e.is_number() || e.is_null(); });
  };
  const auto integer = [](const J& v) { return v.is_number_integer(); };
  const auto string = [](const J& v) { return v.is_string(); };
  struct Key {
    const char* name;
    bool (*ok)(const J&);
    const char* type;
  };
  static const Key keys[] = {
      {"format", string, "a string"},
      {"version", integer, "an integer"},
      {"run_id", string, "a string"},
      {"complete", [](const J& v) { return v.is_boolean(); }, "true or false"},
      {"job_id", [](const J& v) { return v.is_string() || v.is_null(); }, "a string or null"},
      {"ranks", integer, "an integer"},
      {"mpi", string, "a string"},
      {"executable", string, "a string"},
      {"args", strings, "an array of strings"},
      {"start_realtime_ns", integer, "an integer"},
      {"end_realtime_ns", integer, "an integer"},
      {"init_entry_ns", integer, "an integer"},
      {"records", integer, "an integer"},
      {"hosts", strings, "an array of strings"},
      {"work_ns_per_unit", numbers, "an array of numbers"},
      {"work_ns_per_unit_at_finalize", numbers, "an array of numbers"},
      {"work_ns_per_unit_in_run", numbers, "an array of numbers"},
      {"stream_ns_per_byte", numbers, "an array of numbers"},
      {"stream_ns_per_byte_in_run", numbers, "an array of numbers"},
      {"stream_kind",
       [](const J& v) { return v.is_string() && (v == kStreamRead || v == kStreamReadWrite); },
       "\"read\" or \"read_write\""},
      {"finalize_write_ns", numbers, "an array of numbers"},
  };
  for (const Key& k : keys) {
    const auto it = meta.find(k.name);
    if (it != meta.end() && !k.ok(*it)) return fmt::format("\"{}\" is not {}", k.name, k.type);
  }
  return "";
}

// Times every reader further on relies on: each call ends after it starts, and nothing lies so far out that sums of times overflow
// (a corrupt timestamp would otherwise become a prediction of years, or a timeline that
// never finishes drawing).
std::string check_times(const RankTrace& rank) {
  constexpr int64_t kMaxTraceNs = int64_t{1} << 55;  // 417 days: past any job, far from overflow
  if (rank.complete && (rank.end.end_ns < 0 || rank.end.end_ns > kMaxTraceNs))
    return fmt::format("end time {} ns out of range", rank.end.end_ns);
  for (size_t i = 0; i < rank.records.size(); ++i) {
    const Record& r = rank.records[i];
    if (r.t_start < -kMaxTraceNs || r.t_start > kMaxTraceNs || r.t_end < r.t_start ||
        r.t_end > kMaxTraceNs)
      return fmt::format("record {} has times {}..{} ns", i, r.t_start, r.t_end);
  }
  return "";
}

template <class T>
T load(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

// Function id 0 is never assigned, so a record holding it is taken for corruption (zeroed
// bytes whose block checksum was computed over them) rather than for a newer tracer's function.
constexpr uint16_t kNoFunction = 0;

// A packed record's mask, the least it can be (a record the same as the one before).
constexpr uint64_t kLeastPackedRecordBytes = 2;
static_assert(find_function(kNoFunction) == nullptr, "function id 0 must stay unassigned");

// Appends record `r` (its function id not 0) to `out` with room for its aux words at the end of
// out.aux, and returns where they go; or, for a function id the table does not know (written by
// a newer tracer, §7 of the spec), counts it in out.unknown_records and returns nullptr: its
// aux words are framed like any other's, then skipped.
int64_t* take_record(const Record& r, RankTrace& out) {
  if (find_function(r.function) == nullptr) {
    ++out.unknown_records;
    return nullptr;
  }
  const size_t first = out.aux.size();
  out.aux_begin.push_back(first);
  out.aux.resize(first + r.aux_words);
  out.records.push_back(r);
  return out.aux.data() + first;
}

// Parses the records of one data block's payload into `out`.
std::string parse_records(const unsigned char* p, size_t size, uint32_t expected, RankTrace& out) {
  size_t at = 0;
  uint32_t count = 0;
  while (at < size) {
    const uint64_t index = out.records.size() + out.unknown_records;  // in the file
    if (size - at < sizeof(Record)) return fmt::format("record {} cut short", index);
    const Record r = load<Record>(p + at);
    at += sizeof r;
    if (r.function == kNoFunction) return fmt::format("record {} has function id 0", index);
    const size_t aux_bytes = size_t{r.aux_words} * sizeof(int64_t);
    if (size - at < aux_bytes)
      return fmt::format("record {} announces {} aux words past its block", index, r.aux_words);
    ++count;
    if (int64_t* aux = take_record(r, out); aux && aux_bytes) std::memcpy(aux, p + at, aux_bytes);
    at += aux_bytes;
  }
  if (count != expected)
    return fmt::format("block holds {} records, its header says {}", count, expected);
  return "";
}

// Reads a delta (its byte count, then its low bytes) at `p` into `delta`, the count at least
// `fewest`; false if it is out of range or cut short by `end`.
bool take_delta(const unsigned char*& p, const unsigned char* end, size_t fewest, uint64_t& delta) {
  if (p == end) return false;
  const size_t bytes = *p;
  const size_t left = static_cast<size_t>(end - p - 1);
  if (bytes < fewest || bytes > sizeof delta || left < bytes) return false;
  if (left >= sizeof delta) {  // a whole word's load and a mask: no memcpy of a variable size
    std::memcpy(&delta, p + 1, sizeof delta);  // little-endian (format.h)
    if (bytes < sizeof delta) delta &= (uint64_t{1} << (8 * bytes)) - 1;
  } else {
    delta = 0;
    std::memcpy(&delta, p + 1, bytes);
  }
  p += 1 + bytes;
  return true;
}

// Parses the records of one packed block's payload (format.h, kPackedBlockMagic) into `out`,
// each decoded in place, as parse_records takes a data block's. A block's records take at most
// kMaxPackedRecordBytes unpacked, so a hostile block of two-byte records costs no more memory
// than that.
std::string parse_packed_records(const unsigned char* payload, size_t size, uint32_t expected,
                                 RankTrace& out) {
  constexpr size_t kWords = sizeof(Record) / sizeof(uint64_t);
  uint64_t words[kWords] = {};  // the previous record's, then this one's
  size_t unpacked = 0;
  const unsigned char* p = payload;
  const unsigned char* const end = payload + size;
  for (uint32_t r = 0; r < expected; ++r) {
    if (end - p < 2) return fmt::format("packed record {} of the block cut short", r);
    const unsigned changed = p[0] | unsigned{p[1]} << 8;
    p += 2;
    if (changed >> kWords)
      return fmt::format("packed record {} of the block changes words past its end", r);
    for (size_t i = 0; i < kWords; ++i) {
      uint64_t delta = 0;
      if ((changed >> i & 1) && !take_delta(p, end, 1, delta))
        return fmt::format("packed record {} of the block has a bad or cut word", r);
      words[i] ^= delta;
    }
    const Record record = load<Record>(reinterpret_cast<const unsigned char*>(words));
    if (record.function == kNoFunction)
      return fmt::format("record {} has function id 0", out.records.size() + out.unknown_records);
    if (static_cast<size_t>(end - p) < record.aux_words)  // a byte each at least
      return fmt::format("packed record {} of the block announces {} aux words past its end", r,
                         record.aux_words);
    unpacked += sizeof record + size_t{record.aux_words} * sizeof(int64_t);
    if (unpacked > kMaxPackedRecordBytes)
      return fmt::format("packed records unpack to more than {} MB", kMaxPackedRecordBytes >> 20);
    int64_t* const aux = take_record(record, out);
    for (size_t i = 0; i < record.aux_words; ++i) {
      uint64_t word;
      if (!take_delta(p, end, 0, word))
        return fmt::format("packed record {} of the block has a bad or cut aux word", r);
      if (!aux) continue;
      if (i >= kPackedAuxStride) word ^= static_cast<uint64_t>(aux[i - kPackedAuxStride]);
      aux[i] = static_cast<int64_t>(word);
    }
  }
  if (p != end) return fmt::format("{} bytes after the block's {} packed records", end - p, expected);
  return "";
}

}  // namespace

namespace {

// The record count of the end block that ends a source of `size` bytes, if one does: a hint
// for sizing, bounded by the caller, not checked here (the block is checked where the parse
// reaches it, and a hostile count with its checksum right would pass a check anyway).
template <class ReadAt>
std::optional<uint64_t> counted_records(uint64_t size, ReadAt& read_at) {
  constexpr size_t kEndBlockBytes = sizeof(BlockHeader) + sizeof(EndPayload);
  if (size < sizeof(FileHeader) + kEndBlockBytes) return std::nullopt;
  auto tail = read_at(size - kEndBlockBytes, kEndBlockBytes);
  if (!tail) return std::nullopt;
  const BlockHeader b = load<BlockHeader>(tail.value());
  if (b.magic != kEndBlockMagic || b.payload_bytes != sizeof(EndPayload)) return std::nullopt;
  return load<EndPayload>(tail.value() + sizeof b).records;
}

// The parse over any source of bytes. `read_at(offset, n)` returns n bytes from `offset`, valid
// until the next call, or an Error; `size` is the source's length. Every length read from the
// file is checked against what remains before anything that long is read, so a hostile header
// costs nothing and memory grows only with the records actually parsed.
template <class ReadAt>
Result<RankTrace> parse_source(uint64_t size, ReadAt read_at, const std::string& name,
                               const ReadOptions& options) {
  RankTrace out;
  if (size < sizeof(FileHeader)) {
    return Error{name, size == 0 ? "empty file (not a pskel trace)"
                                 : "truncated: shorter than the file header"};
  }
  auto head = read_at(0, sizeof(FileHeader));
  if (!head) return head.error();
  out.header = load<FileHeader>(head.value());
  const FileHeader& h = out.header;
  if (std::memcmp(h.magic, kFileMagic, sizeof h.magic) != 0)
    return Error{name, "not a pskel trace (bad magic)"};
  if (h.version < kOldestReadVersion || h.version > kFormatVersion)
    return Error{name, fmt::format("unsupported trace format version {} (this pskel reads {}-{})",
                                   h.version, kOldestReadVersion, kFormatVersion)};
  const bool packed_blocks = h.version >= kPackedBlocksSince;
  if (h.header_bytes != sizeof(FileHeader) || h.record_bytes != sizeof(Record))
    return Error{name, "corrupt: header and record sizes do not match the format"};
  if (h.world_size <= 0 || h.rank < 0 || h.rank >= h.world_size)
    return Error{name, fmt::format("corrupt: rank {} of {} ranks", h.rank, h.world_size)};

  // The records are reserved once, where growing by doubling copied every record about twice
  // over, into fresh pages each time (a fifth of `pskel info`'s time). The end block, when the
  // file has one, counts them (a packed record takes 2 bytes at least, a raw one 80); else the
  // file's size bounds them as raw records (packed ones hold several times more). Up to a
  // million (88 MB): a hostile file's size (sparse, say) or end block reserves no more than
  // that before its first block is even read; a larger real trace grows as before past it.
  constexpr uint64_t kMostReserved = uint64_t{1} << 20;
  const uint64_t body = size - sizeof(FileHeader);
  const uint64_t most_records = std::min(
      {counted_records(size, read_at).value_or(body / sizeof(Record)),
       body / (packed_blocks ? kLeastPackedRecordBytes : sizeof(Record)), kMostReserved});
  out.records.reserve(most_records);
  out.aux_begin.reserve(most_records);
  uint64_t at = sizeof(FileHeader);
  while (at < size) {
    if (out.complete) return Error{name, fmt::format("corrupt: data after the end block at byte {}", at)};
    if (size - at < sizeof(BlockHeader))
      return Error{name, fmt::format("truncated: block header cut short at byte {}", at)};
    auto block_head = read_at(at, sizeof(BlockHeader));
    if (!block_head) return block_head.error();
    const BlockHeader b = load<BlockHeader>(block_head.value());
    const uint64_t payload_at = at + sizeof b;
    if (b.magic != kDataBlockMagic && b.magic != kEndBlockMagic &&
        !(packed_blocks && b.magic == kPackedBlockMagic))
      return Error{name, fmt::format("corrupt: no block starts at byte {}", at)};
    if (size - payload_at < b.payload_bytes)
      return Error{name, fmt::format("truncated: block at byte {} needs {} bytes, {} remain", at,
                                     b.payload_bytes, size - payload_at)};
    if (b.magic == kEndBlockMagic && b.payload_bytes != sizeof(EndPayload))
      return Error{name, fmt::format("corrupt: end block at byte {} has the wrong size", at)};
    auto read_payload = read_at(payload_at, b.payload_bytes);
    if (!read_payload) return read_payload.error();
    const unsigned char* payload = read_payload.value();
    if (crc32c(payload, b.payload_bytes) != b.crc32c)
      return Error{name, fmt::format("corrupt: checksum mismatch in block at byte {}", at)};
    if (b.magic == kEndBlockMagic) {
      if (b.record_count != 0)  // outside the checksum, so checked on its own
        return Error{name, fmt::format("corrupt: end block at byte {} has record_count {}, not 0",
                                       at, b.record_count)};
      out.end = load<EndPayload>(payload);
      const uint64_t held = out.records.size() + out.unknown_records;
      if (out.end.records != held)
        return Error{name, fmt::format("corrupt: end block counts {} records, the file holds {}",
                                       out.end.records, held)};
      out.complete = true;
    } else {
      std::string problem;
      if (b.magic == kPackedBlockMagic)
        problem = parse_packed_records(payload, b.payload_bytes, b.record_count, out);
      else
        problem = parse_records(payload, b.payload_bytes, b.record_count, out);
      if (!problem.empty())
        return Error{name, fmt::format("corrupt: block at byte {}: {}", at, problem)};
    }
    at = payload_at + b.payload_bytes;
  }
  if (!out.complete && !options.allow_truncated) {
    return Error{name, fmt::format("truncated: no end block after {} records (the process "
                                   "ended without MPI_Finalize, or the file was cut)",
                                   out.records.size() + out.unknown_records)};
  }
  if (std::string problem = check_times(out); !problem.empty())
    return Error{name, "corrupt: " + problem};
  return out;
}

// A rank file read block by block through `fd` (opened by open_regular_file), from `base` on:
// 0 for a rank file, the section's offset for a node file's section. A small one (a worker of a
// large job: a few kB) is read in one call: block by block it took six (header, end block,
// each block's header and payload), and at 16,384 ranks of master/worker those system calls
// were most of reading the trace.
Result<RankTrace> parse_rank_fd(int fd, uint64_t base, uint64_t size, const std::string& name,
                                const ReadOptions& options) {
  constexpr uint64_t kWholeBytes = uint64_t{256} << 10;
  std::vector<unsigned char> buffer;
  if (size <= kWholeBytes) {
    buffer.resize(size);
    if (auto r = pread_exact(fd, buffer.data(), size, base, name); !r) return r.error();
    return parse_rank_trace(buffer, name, options);
  }
  const auto read_at = [&](uint64_t offset, size_t n) -> Result<const unsigned char*> {
    buffer.resize(n);
    if (auto r = pread_exact(fd, buffer.data(), n, base + offset, name); !r) return r.error();
    return static_cast<const unsigned char*>(buffer.data());
  };
  return parse_source(size, read_at, name, options);
}

}  // namespace

Result<RankTrace> parse_rank_trace(std::span<const unsigned char> bytes, const std::string& name,
                                   const ReadOptions& options) {
  const auto read_at = [&](uint64_t offset, size_t) -> Result<const unsigned char*> {
    return bytes.data() + offset;
  };
  return parse_source(bytes.size(), read_at, name, options);
}

Result<RankTrace> read_rank_file(const std::string& path, const ReadOptions& options) {
  auto file = open_regular_file(path, kMaxFileBytes);
  if (!file) return file.error();
  if (!file.value()) return Error{path, "missing"};
  return parse_rank_fd(file.value()->fd.get(), 0, file.value()->size, path, options);
}

namespace {

// Rank r's trace: its rank file, or else its section of a node file (`name` is set to what
// errors call it).
Result<RankTrace> read_rank_trace(const std::string& dir, int r, int n, const NodeIndex& nodes,
                                  const ReadOptions& options, std::string& name) {
  name = fmt::format("{}/{}{}{}", dir, kRankFilePrefix, r, kRankFileSuffix);
  auto file = open_regular_file(name, kMaxFileBytes);
  if (!file) return file.error();
  const SectionPlace* section = nodes.trace_of(r);
  if (file.value() && section)
    return Error{name, fmt::format("rank {}'s trace is also in {}", r, section->path)};
  if (file.value()) return parse_rank_fd(file.value()->fd.get(), 0, file.value()->size, name, options);
  if (!section) {
    return Error{name, fmt::format("missing (meta.json announces {} ranks{})", n,
                                   nodes.traces.empty() ? "" : ", and no node file holds it")};
  }
  name = section_name(*section, r, SectionKind::trace);
  auto node_file = open_regular_file(section->path, std::numeric_limits<uint64_t>::max());
  if (!node_file) return node_file.error();
  if (!node_file.value() || node_file.value()->size < section->offset + section->bytes)
    return Error{name, "changed while being read"};
  return parse_rank_fd(node_file.value()->fd.get(), section->offset, section->bytes, name, options);
}

// Rank r's samples: samples.<r>, or else its section of a node file, or none.
Result<std::optional<SampleSeries>> read_rank_samples(const std::string& dir, int r,
                                                      const std::string& run,
                                                      const NodeIndex& nodes) {
  const SectionPlace* section = nodes.samples_of(r);
  auto from_file = read_samples(dir, r, run);
  if (!from_file || !section) return from_file;
  const std::string name = section_name(*section, r, SectionKind::samples);
  if (from_file.value()) return Error{name, fmt::format("rank {}'s samples are also in {}/{}{}",
                                                        r, dir, kSamplesFilePrefix, r)};
  auto text = read_regular_file_range(section->path, section->offset, section->bytes,
                                      kMaxSampleFileBytes);
  if (!text) return Error{name, text.error().what};
  auto series = parse_samples(text.value(), name, r, run);
  if (!series) return series.error();
  return std::optional<SampleSeries>{std::move(series).value()};
}

// Rank r of an n-rank trace of run `run` (its trace and its samples) into `out`; the error if
// it cannot be read.
std::optional<Error> read_rank(const std::string& dir, int r, int n, const std::string& run,
                               const NodeIndex& nodes, const ReadOptions& options,
                               RankTrace& out) {
  std::string path;
  auto rank = read_rank_trace(dir, r, n, nodes, options, path);
  if (!rank) return rank.error();
  const FileHeader& h = rank.value().header;
  const std::string file_run = run_id(h);
  if (file_run != run)
    return Error{path, fmt::format("from another run (run id {}, meta.json has {})", file_run, run)};
  if (h.rank != r || h.world_size != n)
    return Error{path, fmt::format("holds rank {} of {}, expected rank {} of {}", h.rank,
                                   h.world_size, r, n)};
  auto samples = read_rank_samples(dir, r, run, nodes);
  if (!samples)
    return Error{samples.error().file,
                 samples.error().what + " (move it away to use the trace without its samples)"};
  if (samples.value()) {
    rank.value().run_delay = std::move(samples.value()->run_delay);
    rank.value().probes = std::move(samples.value()->probes);
    rank.value().footprint_bytes = footprint_bytes(samples.value()->samples);
  }
  out = std::move(rank).value();
  out.source = std::move(path);
  return std::nullopt;
}

}  // namespace

Result<TraceSet> read_trace_dir(const std::string& dir, const ReadOptions& options) {
  return read_trace_dir(dir, options, [](RankTrace&) {});
}

Result<TraceSet> read_trace_dir(const std::string& dir, const ReadOptions& options,
                                const std::function<void(RankTrace&)>& visit) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return Error{dir, "no such trace directory"};
  if (!S_ISDIR(st.st_mode)) return Error{dir, "not a directory"};
  TraceSet set;
  set.dir = dir;
  const std::string meta_path = dir + "/" + kMetaFileName;
  auto meta_text = read_regular_file(meta_path, kMaxMetaBytes);
  if (!meta_text) return meta_text.error();
  set.meta = nlohmann::json::parse(meta_text.value(), nullptr, /*allow_exceptions=*/false);
  if (set.meta.is_discarded() || !set.meta.is_object()) return Error{meta_path, "not valid JSON"};
  if (std::string problem = check_meta_types(set.meta); !problem.empty())
    return Error{meta_path, problem};
  const auto& ranks = set.meta["ranks"];
  const auto& run_id = set.meta["run_id"];
  if (!ranks.is_number_integer() || ranks.get<int64_t>() <= 0 || ranks.get<int64_t>() > (1 << 24))
    return Error{meta_path, "no valid \"ranks\""};
  if (!run_id.is_string()) return Error{meta_path, "no valid \"run_id\""};
  const int n = ranks.get<int>();
  const std::string run = run_id.get<std::string>();
  auto nodes = index_node_files(dir, n);
  if (!nodes) return nodes.error();
  // Rank files are read on every CPU, each into its own slot, a window of ranks at a time: the
  // error reported is the lowest rank's, as a reading in rank order would find it, and a
  // meta.json that claims millions of ranks beside a few files costs one window, not millions
  // of slots.
  constexpr size_t kWindow = 256;
  for (size_t first = 0; first < static_cast<size_t>(n); first += kWindow) {
    const size_t count = std::min(kWindow, static_cast<size_t>(n) - first);
    set.ranks.resize(first + count);
    std::vector<std::optional<Error>> errors(count);
    util::parallel_for(count, [&](size_t k) {
      errors[k] = read_rank(dir, static_cast<int>(first + k), n, run, nodes.value(), options,
                            set.ranks[first + k]);
    });
    for (std::optional<Error>& e : errors)
      if (e) return std::move(*e);
    for (size_t k = 0; k < count; ++k) visit(set.ranks[first + k]);
  }
  return set;
}

Result<TraceSet> reread_trace_dir(const std::string& dir, std::span<const uint64_t> records_of,
                                  const std::function<void(RankTrace&)>& visit) {
  std::string changed;  // the first rank whose trace is not the one read before
  auto read = read_trace_dir(dir, {}, [&](RankTrace& rank) {
    const auto r = static_cast<size_t>(rank.header.rank);
    if (changed.empty() && (r >= records_of.size() || rank.records.size() != records_of[r]))
      changed = rank.source;
    if (changed.empty())
      visit(rank);
    else
      rank.drop_records();   // not visited, and not to pile up in the set returned
  });
  if (!changed.empty())   // before a later rank's error: it is the first thing that went wrong
    return Error{changed, fmt::format("changed while pskel read it (another run writing to {}?)", dir)};
  return read;
}

std::string host_name(const FileHeader& header) {
  return std::string(header.hostname, strnlen(header.hostname, sizeof header.hostname));
}

std::string run_id(const FileHeader& header) {
  return std::string(header.run_id, strnlen(header.run_id, sizeof header.run_id));
}

TraceSummary summarize(const TraceSet& trace) {
  SummaryBuilder builder;
  for (const RankTrace& rank : trace.ranks) builder.add(rank);
  return builder.finish();
}

void SummaryBuilder::add(const RankTrace& rank) {
  const std::string host = host_name(rank.header);
  const auto [it, added] = host_index_.emplace(host, s_.hosts.size());
  if (added) s_.hosts.push_back({host, {}});
  s_.hosts[it->second].second.push_back(rank.header.rank);
  ++s_.ranks;
  uint64_t events = 0;
  for (const Record& r : rank.records) {
    const FunctionInfo* f = find_function(r.function);
    if (f == nullptr) {  // only in a set not made by the reader, which skips these
      ++s_.unknown_records;
      continue;
    }
    if (f->kind == FunctionKind::meta) continue;
    ++events;
    ++functions_[std::string(f->name)];
    s_.bytes += static_cast<uint64_t>(std::max<int64_t>(r.bytes, 0));
    last_end_ = std::max(last_end_, r.t_end);
  }
  s_.unknown_records += rank.unknown_records;
  if (rank.complete) last_end_ = std::max(last_end_, rank.end.end_ns);
  s_.events_per_rank.push_back(events);
  s_.run_delay_fraction.push_back(run_delay_fraction(rank));
  s_.events += events;
}

TraceSummary SummaryBuilder::finish() {
  s_.functions.assign(functions_.begin(), functions_.end());
  s_.wall_seconds = static_cast<double>(last_end_) * 1e-9;
  return std::move(s_);
}

}  // namespace pskel::trace

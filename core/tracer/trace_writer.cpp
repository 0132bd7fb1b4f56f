#include "trace_writer.h"

#include <bit>
#include <cstddef>
#include <cstring>
#include <iterator>

#include "util/crc32c.h"

namespace pskel::tracer {
namespace {

static_assert(std::endian::native == std::endian::little, "the trace format is little-endian");
constexpr size_t kRecordWords = sizeof(trace::Record) / sizeof(uint64_t);

// The most a buffer of `capacity` bytes packs into: a record whose every word changed takes
// 2 bytes of mask and 9 a word, 12 more than its 80, and an aux word 9 bytes for its 8; and
// the last word's store writes 8 bytes where it keeps fewer.
size_t packed_capacity(size_t capacity) {
  return capacity / sizeof(uint64_t) * 9 + capacity / sizeof(trace::Record) * 2 + sizeof(uint64_t);
}

// Writes `delta` as its byte count and its low bytes, leaving out the high zero bytes; returns
// where the next goes. Stores all 8 bytes, so `out` needs 8 bytes of room past what it keeps.
unsigned char* put_delta(unsigned char* out, uint64_t delta) {
  const unsigned bytes = (71 - static_cast<unsigned>(std::countl_zero(delta))) / 8;
  out[0] = static_cast<unsigned char>(bytes);
  std::memcpy(out + 1, &delta, sizeof delta);
  return out + 1 + bytes;
}

}  // namespace

TraceWriter::~TraceWriter() = default;

bool TraceWriter::open(const std::string& path, const trace::FileHeader& header,
                       size_t buffer_bytes, size_t memory_cap) {
  if (memory_cap > 0) {
    out_.open_memory(path, memory_cap);
  } else if (!out_.open_file(path)) {
    return false;
  }
  capacity_ = buffer_bytes < sizeof(trace::Record) * 16 ? sizeof(trace::Record) * 16 : buffer_bytes;
  if (capacity_ > trace::kMaxPackedRecordBytes) capacity_ = trace::kMaxPackedRecordBytes;
  buffer_.reset(new unsigned char[capacity_]);
  packed_.reset(new unsigned char[packed_capacity(capacity_)]);
  staged_aux_.reserve(1024);
  if (!write_all(&header, sizeof header)) return false;
  writable_ = capacity_;
  return true;
}

void TraceWriter::append_slow(const trace::Record& record, const int64_t* aux,
                              size_t aux_words) {
  const size_t bytes = sizeof record + aux_words * sizeof(int64_t);
  if (failed() || !out_.is_open()) {
    ++dropped_;
    return;
  }
  if (used_ + bytes > capacity_) flush();
  if (bytes > capacity_) {  // a record larger than the buffer (a huge Waitall) gets its own block
    auto joined = std::make_unique<unsigned char[]>(bytes);
    std::memcpy(joined.get(), &record, sizeof record);
    if (aux_words) std::memcpy(joined.get() + sizeof record, aux, bytes - sizeof record);
    write_block(trace::kDataBlockMagic, joined.get(), bytes, 1);
    return;
  }
  std::memcpy(buffer_.get() + used_, &record, sizeof record);
  if (aux_words) std::memcpy(buffer_.get() + used_ + sizeof record, aux, bytes - sizeof record);
  used_ += bytes;
  ++buffered_records_;
}

void TraceWriter::hold_back(const trace::Record& record, const int64_t* aux,
                            size_t aux_words) {
  int64_t words[sizeof record / sizeof(int64_t)];
  static_assert(sizeof words == sizeof record);
  std::memcpy(words, &record, sizeof record);
  held_back_.insert(held_back_.end(), std::begin(words), std::end(words));
  if (aux_words) held_back_.insert(held_back_.end(), aux, aux + aux_words);
}

// The staged record after records held back, or when it and its aux words do not fit in the
// buffer, or the file is not writable.
void TraceWriter::staged_done_slow() {
  trace::Record record;
  std::memcpy(&record, staged_, sizeof record);  // flushing may overwrite it in buffer_
  staged_ = nullptr;
  constexpr size_t kRecordWords = sizeof record / sizeof(int64_t);
  for (size_t at = 0; at < held_back_.size();) {
    trace::Record held;
    std::memcpy(&held, &held_back_[at], sizeof held);
    append_now(held, held_back_.data() + at + kRecordWords, held.aux_words);
    at += kRecordWords + held.aux_words;
  }
  held_back_.clear();
  append_now(record, staged_aux_.data(), record.aux_words);
}

// Why packed at all, and why this way: docs/trace-format.md §2 and §11.
size_t TraceWriter::pack() const {
  uint64_t previous[kRecordWords] = {};
  const unsigned char* in = buffer_.get();
  const unsigned char* const end = in + used_;
  unsigned char* out = packed_.get();
  while (in < end) {
    unsigned char* const mask_at = out;
    out += 2;
    unsigned changed = 0;
    for (size_t i = 0; i < kRecordWords; ++i) {
      uint64_t word;
      std::memcpy(&word, in + i * sizeof word, sizeof word);
      const uint64_t delta = word ^ previous[i];
      previous[i] = word;
      if (delta == 0) continue;
      changed |= 1u << i;
      out = put_delta(out, delta);
    }
    mask_at[0] = static_cast<unsigned char>(changed);
    mask_at[1] = static_cast<unsigned char>(changed >> 8);
    uint16_t aux_words;
    std::memcpy(&aux_words, in + offsetof(trace::Record, aux_words), sizeof aux_words);
    in += sizeof(trace::Record);
    for (size_t i = 0; i < aux_words; ++i) {
      uint64_t word, before = 0;
      std::memcpy(&word, in + i * sizeof word, sizeof word);
      if (i >= trace::kPackedAuxStride)
        std::memcpy(&before, in + (i - trace::kPackedAuxStride) * sizeof word, sizeof word);
      out = put_delta(out, word ^ before);
    }
    in += size_t{aux_words} * sizeof(int64_t);
  }
  return static_cast<size_t>(out - packed_.get());
}

void TraceWriter::flush() {
  if (used_ == 0) return;
  write_block(trace::kPackedBlockMagic, packed_.get(), pack(), buffered_records_);
  used_ = 0;
  buffered_records_ = 0;
}

bool TraceWriter::close(int64_t end_ns, uint32_t untraced_thread_calls,
                        uint32_t untracked_requests) {
  flush();  // after a failed write, what is buffered counts as dropped
  if (!out_.is_open()) return !failed();
  const trace::EndPayload end{records_, dropped_, end_ns, untraced_thread_calls,
                                untracked_requests};
  if (!failed()) write_block(trace::kEndBlockMagic, &end, sizeof end, 0);
  out_.close();
  writable_ = 0;
  return !failed();
}

void TraceWriter::write_block(uint32_t magic, const void* payload, size_t bytes,
                              uint32_t records) {
  if (failed()) {
    dropped_ += records;
    return;
  }
  const trace::BlockHeader header{magic, static_cast<uint32_t>(bytes), records,
                                  crc32c(payload, bytes)};
  if (write_all(&header, sizeof header) && write_all(payload, bytes)) {
    records_ += records;
  } else {
    dropped_ += records;
  }
}

bool TraceWriter::write_all(const void* data, size_t bytes) {
  if (out_.write(data, bytes)) return true;
  writable_ = 0;
  return false;
}

}  // namespace pskel::tracer

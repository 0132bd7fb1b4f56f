#include "trace_writer.h"

#include <cstring>
#include <iterator>

#include "util/crc32c.h"

namespace pskel::tracer {

TraceWriter::~TraceWriter() = default;

bool TraceWriter::open(const std::string& path, const trace::FileHeader& header,
                       size_t buffer_bytes, size_t memory_cap) {
  if (memory_cap > 0) {
    out_.open_memory(path, memory_cap);
  } else if (!out_.open_file(path)) {
    return false;
  }
  capacity_ = buffer_bytes < sizeof(trace::Record) * 16 ? sizeof(trace::Record) * 16 : buffer_bytes;
  buffer_.reset(new unsigned char[capacity_]);
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

void TraceWriter::flush() {
  if (used_ == 0) return;
  write_block(trace::kDataBlockMagic, buffer_.get(), used_, buffered_records_);
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

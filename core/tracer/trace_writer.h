// Writes one rank's trace file (docs/trace-format.md): header, CRC-checked blocks of records,
// end block. MPI-free, so the unit tests drive it directly. Its buffer is allocated once at
// open(); append() never allocates and never reports errors: after a failed write, records
// are counted as dropped and the caller asks failed() once, at the end.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "trace/format.h"

namespace pskel::tracer {

class TraceWriter {
 public:
  TraceWriter() = default;
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Creates `path` (which must not exist; a symlink is never followed) and writes `header`.
  // Returns false, with error() saying why, if the file cannot be created or written.
  bool open(const std::string& path, const trace::FileHeader& header, size_t buffer_bytes);

  // Buffers one record and its aux words (aux may be null when aux_words is 0). Inline: the
  // tracer calls it once per MPI call.
  void append(const trace::Record& record, const int64_t* aux, size_t aux_words) {
    const size_t aux_bytes = aux_words * sizeof(int64_t);
    if (used_ + sizeof record + aux_bytes > writable_) {
      append_slow(record, aux, aux_words);
      return;
    }
    std::memcpy(buffer_.get() + used_, &record, sizeof record);
    if (aux_bytes) std::memcpy(buffer_.get() + used_ + sizeof record, aux, aux_bytes);
    used_ += sizeof record + aux_bytes;
    ++buffered_records_;
  }

  // Writes buffered records as a block (no end block): for a process exiting without
  // MPI_Finalize, so that what was recorded survives.
  void flush();

  // Flushes, writes the end block and closes. Returns !failed().
  bool close(int64_t end_ns, uint32_t untraced_thread_calls, uint32_t untracked_requests);

  bool is_open() const { return fd_ >= 0; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t records() const { return records_; }
  uint64_t dropped() const { return dropped_; }

 private:
  // append() when the record does not fit in the buffer, or the file is not writable.
  void append_slow(const trace::Record& record, const int64_t* aux, size_t aux_words);
  void write_block(uint32_t magic, const void* payload, size_t bytes, uint32_t records);
  bool write_all(const void* data, size_t bytes);
  void fail(const char* what, int err);

  int fd_ = -1;
  std::string path_;
  std::unique_ptr<unsigned char[]> buffer_;
  size_t capacity_ = 0;
  size_t writable_ = 0;  // capacity_ while the file is open and no write failed, else 0
  size_t used_ = 0;
  uint32_t buffered_records_ = 0;
  uint64_t records_ = 0;
  uint64_t dropped_ = 0;
  std::string error_;
};

}  // namespace pskel::tracer

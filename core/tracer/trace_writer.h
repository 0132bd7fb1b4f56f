// Writes one rank's trace file (docs/trace-format.md): header, CRC-checked blocks of records,
// end block; to the file itself, or to memory for the node file (spill_file.h). MPI-free, so
// the unit tests drive it directly. Its buffer is allocated once at open(); append() never
// allocates and never reports errors: after a failed write, records are counted as dropped and
// the caller asks failed() once, at the end. Blocks are written packed (trace/format.h).
// The record of the MPI call in progress is written in place (stage(), staged_done()).
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "spill_file.h"
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
  // With memory_cap > 0 the file is held in memory (output()) and created only if it
  // outgrows the cap.
  bool open(const std::string& path, const trace::FileHeader& header, size_t buffer_bytes,
            size_t memory_cap = 0);

  // Buffers one record and its aux words (aux may be null when aux_words is 0). While a
  // record is staged, it is held back and buffered just before the staged one.
  void append(const trace::Record& record, const int64_t* aux, size_t aux_words) {
    if (staged_ != nullptr) {
      hold_back(record, aux, aux_words);
      return;
    }
    append_now(record, aux, aux_words);
  }

  // The record of the MPI call in progress, in the buffer itself, to fill in field by field,
  // and staged_aux() (empty), for its aux words; staged_done() buffers both.
  // Why in place and not on the stack, copied when the call ends: the copy would read the
  // record with wide loads right after its narrow stores, and behind those in the store buffer
  // are the MPI library's stores, often to memory another process reads; a load the CPU cannot
  // forward from the store buffer waits until all of them reach the cache: ~50 ns a call
  // here, a third of the tracer's cost then. Inline: once per MPI call.
  trace::Record& stage() {
    staged_aux_.clear();
    if (used_ + sizeof(trace::Record) > writable_) flush();
    staged_ = used_ + sizeof(trace::Record) <= writable_
                  ? reinterpret_cast<trace::Record*>(buffer_.get() + used_)
                  : &unwritable_record_;
    return *staged_;
  }
  std::vector<int64_t>& staged_aux() { return staged_aux_; }
  // The staged record is complete, with its first aux_words of staged_aux() after it. A
  // record staged and never done (the process left inside the call) is never written.
  void staged_done() {
    const size_t bytes = sizeof(trace::Record) + staged_->aux_words * sizeof(int64_t);
    if (staged_ == &unwritable_record_ || !held_back_.empty() || used_ + bytes > writable_) {
      staged_done_slow();
      return;
    }
    if (staged_->aux_words)
      std::memcpy(buffer_.get() + used_ + sizeof(trace::Record), staged_aux_.data(),
                  bytes - sizeof(trace::Record));
    used_ += bytes;
    ++buffered_records_;
    staged_ = nullptr;
  }

  // Writes buffered records as a block (no end block): for a process exiting without
  // MPI_Finalize, so that what was recorded survives (after output().spill() if it was held
  // in memory).
  void flush();

  // Flushes, writes the end block and closes. Returns !failed().
  bool close(int64_t end_ns, uint32_t untraced_thread_calls, uint32_t untracked_requests);

  bool is_open() const { return out_.is_open(); }
  bool failed() const { return out_.failed(); }
  const std::string& error() const { return out_.error(); }
  // Where the file goes; when it was held in memory, its bytes stay there until the output's
  // spill() or forget().
  SpillFile& output() { return out_; }
  uint64_t records() const { return records_; }
  uint64_t dropped() const { return dropped_; }

 private:
  void append_now(const trace::Record& record, const int64_t* aux, size_t aux_words) {
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
  void hold_back(const trace::Record& record, const int64_t* aux, size_t aux_words);
  void staged_done_slow();
  // append_now() when the record does not fit in the buffer, or the file is not writable.
  void append_slow(const trace::Record& record, const int64_t* aux, size_t aux_words);
  // Packs buffer_'s records into packed_ (trace/format.h, kPackedBlockMagic); their bytes.
  size_t pack() const;
  void write_block(uint32_t magic, const void* payload, size_t bytes, uint32_t records);
  bool write_all(const void* data, size_t bytes);

  SpillFile out_;
  std::unique_ptr<unsigned char[]> buffer_;
  std::unique_ptr<unsigned char[]> packed_;  // a block's records packed: pack()
  size_t capacity_ = 0;
  size_t writable_ = 0;  // capacity_ while the file is open and no write failed, else 0
  size_t used_ = 0;
  uint32_t buffered_records_ = 0;
  uint64_t records_ = 0;
  uint64_t dropped_ = 0;
  trace::Record* staged_ = nullptr;  // in buffer_, or unwritable_record_
  trace::Record unwritable_record_{};
  std::vector<int64_t> staged_aux_;
  std::vector<int64_t> held_back_;  // records appended while one was staged, with their aux
};

}  // namespace pskel::tracer

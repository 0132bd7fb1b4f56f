// Where a rank's trace or samples go (docs/trace-format.md §12): straight to their own file, or
// held in memory for the node file (written by the node's lowest rank at MPI_Finalize) up to a
// cap past which they move to their own file after all, so that a long run's trace costs the
// program no more memory than the cap. MPI-free and allocation-checked (the tracer is built
// without exceptions); not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pskel::tracer {

class SpillFile {
 public:
  SpillFile() = default;
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // Creates `path` (which must not exist; a symlink is never followed). False, with error()
  // saying why, if it cannot.
  bool open_file(const std::string& path);
  // Holds what is written in memory, up to `cap` bytes; past that (or when memory runs out),
  // `path` is created as by open_file() and what was held is written to it first.
  void open_memory(const std::string& path, size_t cap);
  // False (error() says why) if the bytes could not be kept: the output is then closed.
  bool write(const void* data, size_t bytes);
  // Moves what is held in memory to the file, also after close() (a process leaving without
  // MPI_Finalize; a node file that could not be created). False if that failed.
  bool spill();
  // No more writes; closes the file, if there is one. What is held in memory stays.
  bool close();
  // Drops the output without writing anything more (a child forked from the writing process, or
  // a failed start).
  void forget();

  bool is_open() const { return !closed_ && (held_ || fd_ >= 0); }
  // Whether the output is in memory, not in its file (memory() holds it all).
  bool held() const { return held_; }
  const unsigned char* memory() const { return memory_; }
  size_t memory_bytes() const { return used_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  bool write_fd(const void* data, size_t bytes);
  bool fail(const char* what, int err);
  void release_memory();

  int fd_ = -1;
  std::string path_;
  bool held_ = false;
  bool closed_ = false;
  unsigned char* memory_ = nullptr;
  size_t used_ = 0;
  size_t capacity_ = 0;
  size_t cap_ = 0;
  std::string error_;
};

}  // namespace pskel::tracer

// Where each rank's trace and samples lie in a trace directory's node files (node_file.h): one
// pass over the section headers of every DIR/node.<N>.pskn, so that the reader can then read
// any rank's section alone, and a hostile or cut file is refused with a one-line error before
// any rank is read. Pure function over files; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/node_file.h"
#include "util/result.h"

namespace pskel::trace {

inline constexpr uint64_t kMaxExtraSections = 1024;

struct SectionPlace {
  std::string path;     // of the node file
  uint64_t offset = 0;  // of the section's content in it
  uint64_t bytes = 0;
};

struct NodeIndex {
  // Index = world rank; empty when the directory has no node files.
  std::vector<std::optional<SectionPlace>> traces;
  std::vector<std::optional<SectionPlace>> samples;
  uint64_t sections = 0;  // read so far, of every kind

  const SectionPlace* trace_of(int rank) const { return find(traces, rank); }
  const SectionPlace* samples_of(int rank) const { return find(samples, rank); }

 private:
  static const SectionPlace* find(const std::vector<std::optional<SectionPlace>>& places, int rank) {
    if (rank < 0 || static_cast<size_t>(rank) >= places.size() || !places[rank]) return nullptr;
    return &*places[rank];
  }
};

// "node.<N>.pskn" -> N; -1 for any other name.
int64_t node_file_number(std::string_view name);

// Adds the sections of one node file, open as `fd` with `size` bytes, to `index` (made room for
// `ranks` ranks). The errors of index_node_files, naming `path`; also more sections than a
// trace of `ranks` ranks holds (kMaxExtraSections of unknown kinds allowed), so that a hostile
// file of empty sections costs a bounded number of reads.
std::optional<Error> add_node_file(int fd, uint64_t size, const std::string& path, int ranks,
                                   NodeIndex& index);

// Indexes DIR/node.*.pskn for a trace of `ranks` ranks. Errors name the file: not a node file,
// a version this reader does not know, a section cut short or with a bad header, a rank outside
// the trace, or a rank's trace (or samples) in two sections. Sections of kinds this reader does
// not know are skipped (a newer tracer's).
Result<NodeIndex> index_node_files(const std::string& dir, int ranks);

// What the error of a section names: "DIR/node.0.pskn (rank 3's trace)".
std::string section_name(const SectionPlace& place, int rank, SectionKind kind);

}  // namespace pskel::trace

// Node files (docs/trace-format.md §12): the rank files and samples of one node's ranks packed
// into one file, written by the node's lowest rank at MPI_Finalize, so that a large job
// creates a file per node on a shared file system instead of two per rank. Each section is
// byte for byte the file it stands for; the layouts here, the index of a directory's node
// files in node_index.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "util/crc32c.h"

namespace pskel::trace {

inline constexpr char kNodeFilePrefix[] = "node.";    // node.<lowest rank of the node>.pskn
inline constexpr char kNodeFileSuffix[] = ".pskn";
inline constexpr char kNodeFileMagic[8] = {'P', 'S', 'K', 'N', 'O', 'D', 'E', 'S'};
inline constexpr uint32_t kNodeFileVersion = 1;
inline constexpr char kSectionMagic[4] = {'S', 'E', 'C', 'T'};

// At offset 0 of a node file; sections follow to the end of the file.
struct NodeFileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;  // sizeof(NodeFileHeader)
};
static_assert(sizeof(NodeFileHeader) == 16);

enum class SectionKind : uint32_t {
  trace = 1,    // what rank.<N>.pskt would hold
  samples = 2,  // what samples.<N> would hold
};

struct SectionHeader {
  char magic[4];
  uint32_t kind;          // SectionKind
  int32_t rank;           // in MPI_COMM_WORLD
  uint32_t header_crc;    // crc32c of this header with header_crc = 0
  uint64_t bytes;         // of the section's content, which follows this header
};
static_assert(sizeof(SectionHeader) == 24);

inline uint32_t section_header_crc(SectionHeader header) {
  header.header_crc = 0;
  return crc32c(&header, sizeof header);
}

inline SectionHeader make_section_header(SectionKind kind, int32_t rank, uint64_t bytes) {
  SectionHeader header{};
  std::memcpy(header.magic, kSectionMagic, sizeof header.magic);
  header.kind = static_cast<uint32_t>(kind);
  header.rank = rank;
  header.bytes = bytes;
  header.header_crc = section_header_crc(header);
  return header;
}

inline NodeFileHeader make_node_file_header() {
  NodeFileHeader header{};
  std::memcpy(header.magic, kNodeFileMagic, sizeof header.magic);
  header.version = kNodeFileVersion;
  header.header_bytes = sizeof header;
  return header;
}

}  // namespace pskel::trace

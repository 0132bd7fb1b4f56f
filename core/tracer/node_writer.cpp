#include "node_writer.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "env_number.h"
#include "trace/node_file.h"

namespace pskel::tracer {
namespace {

constexpr long kDefaultNodeMemoryMb = 16;
constexpr long kMaxNodeMemoryMb = 4096;
// Sections travel in pieces of this size: MPI counts are ints, and the writer needs one piece
// of memory, not a rank's whole trace.
constexpr size_t kPieceBytes = size_t{1} << 20;
constexpr int kSectionKinds = 2;  // a trace and samples per rank

void send_in_pieces(const unsigned char* data, uint64_t bytes, int tag, MPI_Comm node) {
  for (uint64_t at = 0; at < bytes; at += kPieceBytes) {
    const uint64_t n = bytes - at < kPieceBytes ? bytes - at : kPieceBytes;
    PMPI_Send(data + at, static_cast<int>(n), MPI_BYTE, 0, tag, node);
  }
}

}  // namespace

bool node_files_wanted(int world_size) {
  const char* text = std::getenv("PSKEL_TRACE_FILES");
  if (text != nullptr && std::strcmp(text, "node") == 0) return true;
  if (text != nullptr && std::strcmp(text, "rank") == 0) return false;
  return world_size >= kNodeFilesFromRanks;
}

size_t node_memory_cap_from_env() {
  const long mb = number_from_env("PSKEL_TRACE_MEMORY_MB", kDefaultNodeMemoryMb, 1, kMaxNodeMemoryMb);
  return static_cast<size_t>(mb) << 20;
}

MPI_Comm split_by_node(int world_rank) {
  MPI_Comm node = MPI_COMM_NULL;
  if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL,
                           &node) != MPI_SUCCESS)
    return MPI_COMM_NULL;
  return node;
}

std::string write_node_file(MPI_Comm node, int world_rank, const std::string& dir,
                            SpillFile& trace, SpillFile& samples) {
  int node_rank = 0, node_size = 1;
  PMPI_Comm_rank(node, &node_rank);
  PMPI_Comm_size(node, &node_size);
  SpillFile out;
  constexpr int kFields = 1 + kSectionKinds;  // per rank: its world rank, its sections' sizes
  uint64_t* all = nullptr;                     // on the writer, every node rank's fields
  std::string problem;
  if (node_rank == 0) {
    const std::string path = dir + "/" + trace::kNodeFilePrefix + std::to_string(world_rank) +
                             trace::kNodeFileSuffix;
    const trace::NodeFileHeader header = trace::make_node_file_header();
    all = static_cast<uint64_t*>(std::calloc(static_cast<size_t>(node_size) * kFields, sizeof *all));
    if (all == nullptr) {
      problem = "no memory to gather the node file " + path;
    } else if (out.open_file(path)) {
      out.write(&header, sizeof header);
    }
    if (!out.is_open() && problem.empty()) problem = out.error();
  }
  int created = problem.empty();
  PMPI_Bcast(&created, 1, MPI_INT, 0, node);
  if (!created) {  // each rank's own files, as without node files
    std::free(all);
    samples.spill();  // samples are optional: without them the trace is whole
    if (!trace.spill()) return trace.error();
    return problem;
  }

  SpillFile* outputs[kSectionKinds] = {&trace, &samples};
  uint64_t mine[kFields] = {static_cast<uint64_t>(world_rank), 0, 0};
  for (int k = 0; k < kSectionKinds; ++k)
    if (outputs[k]->held()) mine[1 + k] = outputs[k]->memory_bytes();
  PMPI_Gather(mine, kFields, MPI_UINT64_T, all, kFields, MPI_UINT64_T, 0, node);
  if (node_rank != 0) {
    for (int k = 0; k < kSectionKinds; ++k) send_in_pieces(outputs[k]->memory(), mine[1 + k], k, node);
  } else {
    static unsigned char piece[kPieceBytes];  // touched by node writers only, at the end
    constexpr trace::SectionKind kinds[kSectionKinds] = {trace::SectionKind::trace,
                                                         trace::SectionKind::samples};
    for (int i = 0; i < node_size; ++i) {
      const uint64_t* sizes = all + static_cast<size_t>(i) * kFields;
      for (int k = 0; k < kSectionKinds; ++k) {
        const uint64_t bytes = sizes[1 + k];
        if (bytes == 0) continue;
        const trace::SectionHeader header =
            trace::make_section_header(kinds[k], static_cast<int32_t>(sizes[0]), bytes);
        out.write(&header, sizeof header);  // after a failure: a no-op, and the pieces drain
        if (i == 0) {
          out.write(outputs[k]->memory(), bytes);
          continue;
        }
        for (uint64_t at = 0; at < bytes; at += kPieceBytes) {
          const uint64_t n = bytes - at < kPieceBytes ? bytes - at : kPieceBytes;
          PMPI_Recv(piece, static_cast<int>(n), MPI_BYTE, i, k, node, MPI_STATUS_IGNORE);
          out.write(piece, n);
        }
      }
    }
    std::free(all);
  }
  for (SpillFile* output : outputs)
    if (output->held()) output->forget();
  out.close();
  return out.error();
}

}  // namespace pskel::tracer

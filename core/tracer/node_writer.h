// Node files (docs/trace-format.md §12): which way a run writes its traces, and the node
// file itself, written at MPI_Finalize by each node's lowest rank from what its ranks held in
// memory (spill_file.h), so that a large job creates two files per node instead of two per rank
// on a shared file system. Uses PMPI only; collective where it says so.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "spill_file.h"

namespace pskel::tracer {

// Jobs of this many ranks or more write node files unless PSKEL_TRACE_FILES says otherwise.
inline constexpr int kNodeFilesFromRanks = 256;

// PSKEL_TRACE_FILES on this rank: "node" or "rank" decide; anything else (unset, "auto") is
// node files from kNodeFilesFromRanks ranks on. The caller makes every rank take rank 0's.
bool node_files_wanted(int world_size);

// What a rank holds of its trace and of its samples for the node file, from
// PSKEL_TRACE_MEMORY_MB (default 16 MB each): past it, a rank writes its own files.
size_t node_memory_cap_from_env();

// The node communicator (MPI_COMM_TYPE_SHARED, ordered by world rank), or MPI_COMM_NULL if the
// MPI cannot make one. Collective over MPI_COMM_WORLD.
MPI_Comm split_by_node(int world_rank);

// Collective over `node`: its lowest rank writes DIR/node.<its world rank>.pskn with a section
// for each trace and samples its ranks hold in memory; a rank whose output went to its own file
// (past the cap) has no section. If the node file cannot be created, every rank writes its own
// files instead. Frees what the outputs held. Returns what went wrong on this rank, or "".
std::string write_node_file(MPI_Comm node, int world_rank, const std::string& dir,
                            SpillFile& trace, SpillFile& samples);

}  // namespace pskel::tracer

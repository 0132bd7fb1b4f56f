// Writes a run's meta.json (docs/trace-format.md) from rank 0: what ran, where, when, and the
// calibration constants. Hand-written JSON, because the tracer links no JSON library.
// The file is replaced atomically (write to a temporary name, then rename).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pskel::tracer {

struct MetaInfo {
  std::string dir;
  std::string run_id;
  uint32_t flavour = 0;
  int ranks = 0;
  std::string hosts;                       // ranks x 64 bytes, NUL-padded
  std::vector<double> work_ns_per_unit;    // per rank, measured in MPI_Init
  std::vector<double> work_ns_per_unit_at_finalize;  // per rank; empty before MPI_Finalize
  std::vector<double> work_ns_per_unit_in_run;       // per rank, from the probes (-1: too few)
  std::vector<double> stream_ns_per_byte;  // per rank, measured in MPI_Finalize (skeletons/stream.h)
  std::vector<double> stream_ns_per_byte_in_run;  // per rank, from the memory probes (-1: too few)
  std::string stream_kind;                 // how those bytes streamed: "read" (stream.h)
  std::vector<double> finalize_write_ns;   // per rank: its files' last writes and closes
  int64_t start_realtime_ns = 0;
  int64_t end_realtime_ns = 0;             // 0 until MPI_Finalize
  int64_t init_entry_ns = 0;
  uint64_t total_records = 0;
  bool complete = false;
};

// Escapes s as the inside of a JSON string, which is always valid JSON (RFC 8259) whatever the
// bytes: well-formed UTF-8 is copied, a byte that is not part of it becomes \u00XX (the byte
// read as Latin-1), as do control characters other than \n, \t and \r.
std::string json_escape(const std::string& s);

// Writes info.dir/meta.json. Returns false if it could not (the trace stays usable). Numbers
// are written in the C locale, whatever the program's global locale; a calibration that is not
// finite is written as null. work_ns_per_unit_at_finalize, work_ns_per_unit_in_run,
// stream_ns_per_byte, stream_ns_per_byte_in_run, stream_kind and finalize_write_ns are written
// only when they are not empty.
bool write_meta(const MetaInfo& info);

}  // namespace pskel::tracer

// The pskel trace format: the on-disk constants and layouts shared by the tracer (writer) and
// the reader. docs/trace-format.md is the prose spec with the grammar and a worked example.
// Plain structs, little-endian, no padding; changing any layout bumps kFormatVersion.
#pragma once

#include <cstdint>

namespace pskel::trace {

inline constexpr char kFileMagic[8] = {'P', 'S', 'K', 'T', 'R', 'A', 'C', 'E'};
inline constexpr uint32_t kFormatVersion = 2;      // 2: packed data blocks
inline constexpr uint32_t kOldestReadVersion = 1;  // readers still read version 1 files
inline constexpr uint32_t kPackedBlocksSince = 2;  // the first version with packed blocks
inline constexpr char kRankFilePrefix[] = "rank.";    // rank.<N>.pskt
inline constexpr char kRankFileSuffix[] = ".pskt";
inline constexpr char kMetaFileName[] = "meta.json";
// meta.json's "stream_kind": how the bytes of its stream_ns_per_byte were streamed (read only, or
// read and written back: skeletons/stream.h). A trace without the key streamed read+write.
inline constexpr char kStreamRead[] = "read";
inline constexpr char kStreamReadWrite[] = "read_write";

// Values of the rank fields (peer, source, root) that are not ranks.
inline constexpr int32_t kNoRank = -1;       // the call has no such party
inline constexpr int32_t kProcNull = -2;     // MPI_PROC_NULL
inline constexpr int32_t kAnySource = -3;    // MPI_ANY_SOURCE, not (yet) resolved
inline constexpr int32_t kRootSelf = -4;     // MPI_ROOT (intercommunicator collectives)
inline constexpr int32_t kUnknownRank = -5;  // a rank the tracer could not translate
inline constexpr int32_t kAnyTag = -1;       // MPI_ANY_TAG, in tag fields
inline constexpr int32_t kNoTag = -2;        // the call has no tag

inline constexpr uint16_t kCommWorld = 0;
inline constexpr uint16_t kCommSelf = 1;
inline constexpr uint16_t kNoComm = 0xFFFF;

enum class Flavour : uint32_t { unknown = 0, mpich = 1, openmpi = 2 };

// Reduction operations, in MPI's order of predefined ops; user-defined ops are kOpUser.
enum class Op : uint8_t {
  none = 0, max, min, sum, prod, land, band, lor, bor, lxor, bxor, minloc, maxloc, replace,
  user = 255
};

// Record::flags bits.
inline constexpr uint8_t kFlagError = 1;        // the MPI call returned an error code
inline constexpr uint8_t kFlagInPlace = 2;      // MPI_IN_PLACE was passed as the send buffer
inline constexpr uint8_t kFlagFortran = 4;      // called through the Fortran bindings
inline constexpr uint8_t kFlagAnySource = 8;    // a receive or probe posted with MPI_ANY_SOURCE
inline constexpr uint8_t kFlagAnyTag = 16;      // a receive or probe posted with MPI_ANY_TAG

// Fixed header at the start of every rank file.
struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;       // sizeof(FileHeader)
  uint32_t record_bytes;       // sizeof(Record)
  int32_t rank;                // in MPI_COMM_WORLD
  int32_t world_size;
  uint32_t flavour;            // Flavour
  int64_t base_realtime_ns;    // wall clock (CLOCK_REALTIME) at t = 0 of this rank's records
  double work_ns_per_unit;     // calibration: ns one unit of skeletons/work.h takes here
  uint32_t pid;
  uint32_t reserved0;
  char run_id[32];             // same in every rank file and meta.json of one run
  char hostname[64];
  uint8_t reserved[104];
};
static_assert(sizeof(FileHeader) == 256);

// Blocks follow the header. A block is a BlockHeader and `payload_bytes` of payload whose
// CRC-32C is `crc32c`. Data blocks carry whole records (each Record followed by its aux
// words); the last block of a complete file is an end block carrying an EndPayload.
inline constexpr uint32_t kDataBlockMagic = 0x4B424B50;  // "PKBK"
// A packed data block (version 2) carries the same records with each 8-byte word of a Record
// stored as its XOR with the same word of the block's previous record, without its high zero
// bytes, and its aux words likewise (docs/trace-format.md §2): most fields of a call repeat
// the call before, and writing the trace into the file system while the program runs was
// about half of a traced call's cost (§11). The records of one packed block take at most
// kMaxPackedRecordBytes unpacked.
inline constexpr uint32_t kPackedBlockMagic = 0x4B504B50;  // "PKPK"
// A packed aux word is stored as its XOR with the aux word this many before it in its record
// (with zero for the first ones): one completed request's words against the one before's.
inline constexpr uint32_t kPackedAuxStride = 4;
inline constexpr uint64_t kMaxPackedRecordBytes = uint64_t{256} << 20;
inline constexpr uint32_t kEndBlockMagic = 0x444E4550;   // "PEND"

struct BlockHeader {
  uint32_t magic;
  uint32_t payload_bytes;
  uint32_t record_count;
  uint32_t crc32c;
};
static_assert(sizeof(BlockHeader) == 16);

struct EndPayload {
  uint64_t records;            // records in all data blocks
  uint64_t dropped_records;    // records lost (a write failed, or a table was full)
  int64_t end_ns;              // t of MPI_Finalize entry
  uint32_t untraced_thread_calls;  // MPI calls from threads other than the one that called Init
  uint32_t untracked_requests;     // requests not followed because the request table was full
};
static_assert(sizeof(EndPayload) == 32);

// One MPI call. Times are ns since this rank's t = 0 (the end of MPI_Init, after a barrier,
// so ranks' clocks start together to within the barrier's skew). Ranks are world ranks.
struct Record {
  uint16_t function;           // FunctionId (generated from core/tracer/mpi_functions.tbl)
  uint16_t comm;               // communicator id in this trace (kCommWorld, kCommSelf, ...)
  uint8_t op;                  // Op
  uint8_t flags;               // kFlag*
  uint16_t aux_words;          // int64 words that follow this record (layout: by function)
  int32_t peer;                // destination / the rank sent to
  int32_t source;              // the rank received from (resolved from the status if known)
  int32_t tag;                 // send tag, or the only tag
  int32_t recv_tag;            // receive tag (resolved from the status if known)
  int32_t root;
  uint32_t request;            // request created or started (ids start at 1; 0 = none)
  int64_t count;               // elements sent (or the only count)
  int64_t recv_count;          // elements received
  uint32_t type_size;          // bytes per element of `count`
  uint32_t recv_type_size;     // bytes per element of `recv_count`
  int64_t bytes;               // payload bytes this rank sent plus received in this call
  int64_t t_start;
  int64_t t_end;
};
static_assert(sizeof(Record) == 80);

// Aux words of a completion record (Wait*, Test*): kCompletionWords per completed request.
inline constexpr int kCompletionWords = 4;  // request id, source, tag, bytes received
// Aux words of a pskel_comm_define record: the world rank of each member, in comm rank order
// (Record::comm is the new id, Record::count its size; for an intercommunicator the remote
// group follows, Record::recv_count its size).

}  // namespace pskel::trace

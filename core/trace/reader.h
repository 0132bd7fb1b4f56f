// Reads pskel traces (docs/trace-format.md) into memory and checks them: a malformed,
// truncated or hostile file gives an Error naming the file and the problem, never a crash.
// Pure functions over bytes and files; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/format.h"
#include "trace/functions.h"
#include "trace/samples.h"
#include "util/result.h"

namespace pskel::trace {

struct RankTrace {
  // Where read_trace_dir read it ("DIR/rank.3.pskt", "DIR/node.0.pskn (rank 3's trace)"), for
  // errors; empty for a trace built in memory.
  std::string source;
  FileHeader header{};
  std::vector<Record> records;          // every one of a function find_function() knows
  std::vector<int64_t> aux;             // the aux words of all records, in order
  std::vector<uint64_t> aux_begin;      // per record: index of its first word in `aux`
  EndPayload end{};
  bool complete = false;                // has an end block
  // Records of function ids this reader's table lacks (from a newer tracer): skipped, not in
  // `records`; end.records counts them too.
  uint64_t unknown_records = 0;
  // From DIR/samples.<N> when read_trace_dir found one with run-queue delays or calibration
  // probes; else empty. Time in the gaps that was not the program's (trace/gaps.h).
  std::vector<RunDelayPoint> run_delay;
  std::vector<ProbePoint> probes;
  // Resident memory the rank gained after MPI_Init (samples.h: footprint_bytes), -1 without
  // samples: the working set a skeleton's memory-bound compute streams through.
  int64_t footprint_bytes = -1;

  std::span<const int64_t> aux_of(size_t record) const {
    return {aux.data() + aux_begin[record], records[record].aux_words};
  }
  // A copy without the records and their aux words (header, source, end block, samples): what
  // a caller keeps of a rank whose records it hands on to be freed.
  RankTrace without_records() const {
    RankTrace copy;
    copy.source = source;
    copy.header = header;
    copy.end = end;
    copy.complete = complete;
    copy.unknown_records = unknown_records;
    copy.run_delay = run_delay;
    copy.probes = probes;
    copy.footprint_bytes = footprint_bytes;
    return copy;
  }
  // Frees the records and their aux words; the header, end block and samples stay.
  void drop_records() {
    // Swapped with empty ones: `records = {}` would keep the capacity.
    std::vector<Record>().swap(records);
    std::vector<int64_t>().swap(aux);
    std::vector<uint64_t>().swap(aux_begin);
  }
};

struct TraceSet {
  std::string dir;
  nlohmann::json meta;                  // meta.json as written by the tracer
  std::vector<RankTrace> ranks;         // index = world rank
};

struct ReadOptions {
  // Accept rank files without an end block (a job that was killed): what they hold is kept.
  bool allow_truncated = false;
};

// Parses one rank file's bytes; `name` is used in errors.
Result<RankTrace> parse_rank_trace(std::span<const unsigned char> bytes, const std::string& name,
                                   const ReadOptions& options = {});
Result<RankTrace> read_rank_file(const std::string& path, const ReadOptions& options = {});
// Reads DIR/meta.json and every DIR/rank.<N>.pskt it announces, checking they belong together.
Result<TraceSet> read_trace_dir(const std::string& dir, const ReadOptions& options = {});
// The same, handing each rank to `visit` in rank order as soon as it is read (ranks are read a
// window at a time, on every CPU); the set returned keeps of each rank what `visit` left in it.
// A caller that takes or frees the records holds one window of ranks, not the job. At an error
// the ranks of the window that has it are not visited.
Result<TraceSet> read_trace_dir(const std::string& dir, const ReadOptions& options,
                                const std::function<void(RankTrace&)>& visit);
// The same, to read a trace again after a read that noted each rank's record count in
// `records_of`: a rank whose count differs now (another run writing to the directory) is the
// error, naming its file, and neither it nor any rank after it is visited.
Result<TraceSet> reread_trace_dir(const std::string& dir, std::span<const uint64_t> records_of,
                                  const std::function<void(RankTrace&)>& visit);

// What `pskel info` reports. Events are MPI calls (the tracer's pseudo-records not counted).
struct TraceSummary {
  int ranks = 0;
  uint64_t events = 0;
  std::vector<uint64_t> events_per_rank;
  std::vector<std::pair<std::string, uint64_t>> functions;  // name -> calls over all ranks
  double wall_seconds = 0;    // from the end of MPI_Init to the last rank entering Finalize
  uint64_t bytes = 0;
  // Per rank: the share of its run it waited for a CPU (trace/gaps.h; 0 without samples). Above
  // a few percent the node was busy with something else while it was traced.
  std::vector<double> run_delay_fraction;
  // The hosts the ranks ran on (each rank file's header), in order of their first rank, with
  // their ranks in order: a job across nodes shows as several hosts.
  std::vector<std::pair<std::string, std::vector<int>>> hosts;
  // Records of function ids find_function() does not know: in no other field, since they may
  // be calls or pseudo-records (RankTrace::unknown_records, plus any such record in `records`
  // of a set built by hand).
  uint64_t unknown_records = 0;
};
TraceSummary summarize(const TraceSet& trace);
// summarize() a rank at a time: add ranks in rank order, then finish() once.
class SummaryBuilder {
 public:
  void add(const RankTrace& rank);
  TraceSummary finish();

 private:
  TraceSummary s_;
  std::map<std::string, size_t> host_index_;
  std::map<std::string, uint64_t> functions_;
  int64_t last_end_ = 0;
};

// The host name in a rank file's header (NUL-padded there).
std::string host_name(const FileHeader& header);
// The run id in a rank file's header (NUL-padded there).
std::string run_id(const FileHeader& header);

}  // namespace pskel::trace

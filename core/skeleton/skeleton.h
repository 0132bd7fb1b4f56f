// Performance skeletons (seed 000 §4): from the loop tree of a traced MPI program, the source of
// a short C + MPI program that communicates like it and computes as long as it between calls
// (as calibrated work, skeletons/work.h), with the dominant loops running 1/K of their
// iterations. Its run time, weighted back by the runtime (skeletons/pskel_runtime.h), predicts
// the original's. docs/skeleton.md describes what the generated program does.
//
// A pure code generator: reads the trace, the merged trace and the loop tree, writes nothing.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "looptree/looptree.h"
#include "merge/merge.h"
#include "trace/reader.h"
#include "util/result.h"

namespace pskel::skeleton {

struct Options {
  // K >= 1: the dominant loops run floor(N / K) (at least 1) of their N iterations; compute
  // outside them runs as 1/K of its work. 1 means the skeleton replays the whole run.
  int64_t scale = 1;
  // Choose K instead: about target_fraction of the traced time, but at least min_seconds (and
  // K = 1 when the traced run is shorter than that), at most the main loop's iterations.
  bool auto_scale = false;
  double target_fraction = 0.1;
  double min_seconds = 3.0;
  // Compute between calls from the typical gaps (looptree::RankCall::gap_typical: bursts of
  // interference in the traced run left out) or, if false, from the plain mean of every
  // instance (the run exactly as traced).
  bool typical_gaps = true;
  // Longest table of per-instance values (a Rule of kind table) written into the source; longer
  // ones are replaced by their mean and reported.
  size_t max_table = 65536;
  // What the skeleton stands for (a comment and the runtime's printout), e.g. "cg.mpich -i 400".
  std::string name;
};

struct Skeleton {
  int64_t scale = 1;
  std::string source;            // skeleton.c
  // skeleton.json without the paths (the caller adds "source", "binary"): scale, what was scaled
  // (scaled_loops), what was rewritten for deadlock freedom (rewritten_groups), reordered groups,
  // substitutions, warnings, estimated times.
  nlohmann::json description;
};

// REQUIRES: `merged` = merge::merge(trace), `tree` = looptree::build(trace, merged, folded).
// Errors: a trace whose calibration (work_ns_per_unit) is missing or absurd on every rank, a
// tree that does not match the merged trace, an empty trace.
Result<Skeleton> generate(const trace::TraceSet& trace, const merge::MergedTrace& merged,
                          const looptree::LoopTree& tree, const Options& options);

// generate() over the ranks handed one at a time, in rank order, so that a job's trace need not
// be held whole (a third read, after merge::Merger's and looptree::TreeBuilder's): `trace` gives
// every rank's header and samples and the meta, and its records may have been dropped; add()
// reads one rank's records and keeps what the skeleton needs of them.
//   Generator generator(trace_without_records, merged, tree);
//   read_trace_dir(dir, {}, [&](RankTrace& r) { generator.add(r); r.drop_records(); });
//   Result<Skeleton> skeleton = generator.finish(options);
class Generator {
 public:
  // REQUIRES: as generate()'s; `trace`, `merged` and `tree` outlive the generator.
  Generator(const trace::TraceSet& trace, const merge::MergedTrace& merged,
            const looptree::LoopTree& tree);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  // The next rank (0, 1, ...), the same records the merge read; not kept.
  void add(const trace::RankTrace& rank);
  // generate()'s errors, and a rank with fewer records than were merged. Called once.
  Result<Skeleton> finish(const Options& options);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The runtime sources a skeleton is compiled with (pskel_runtime.h/.c, work.h/.c), embedded at
// build time from skeletons/, so that an output directory builds anywhere.
struct RuntimeFile {
  std::string_view name;
  std::string_view text;
};
std::span<const RuntimeFile> runtime_files();

// The C sources to compile, in order: "skeleton.c" and the runtime's .c files.
std::vector<std::string> compile_units();

}  // namespace pskel::skeleton

#include "trace_run.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>

namespace pskel::model {

namespace {

// A traced run, a rank at a time: the calls and bytes per function, and the trace's summary.
class RunBuilder {
 public:
  void add(const trace::RankTrace& rank) {
    for (const trace::Record& r : rank.records) {
      const trace::FunctionInfo* f = trace::find_function(r.function);
      if (f == nullptr || f->kind == trace::FunctionKind::meta) continue;
      const std::string name(f->name);
      sums_[name] += 1;
      sums_[name + ".bytes"] += static_cast<double>(std::max<int64_t>(r.bytes, 0));
    }
    summary_.add(rank);
  }

  // `trace`: the directory and meta of the ranks added.
  Run finish(const trace::TraceSet& trace) {
    Run run;
    run.source = trace.dir;
    run.kind = "trace";
    run.ntasks = static_cast<int>(trace.ranks.size());
    if (trace.meta.is_object() && trace.meta.contains("args") && trace.meta["args"].is_array())
      for (const auto& word : trace.meta["args"])
        if (word.is_string()) run.command.push_back(word.get<std::string>());
    for (const auto& [key, sum] : sums_)
      run.features[key] = sum / std::max(1, run.ntasks);
    run.seconds = summary_.finish().wall_seconds;
    return run;
  }

 private:
  std::map<std::string, double> sums_;
  trace::SummaryBuilder summary_;
};

}  // namespace

Result<Run> read_run(const std::string& dir) {
  struct stat st;
  if (::stat((dir + "/meta.json").c_str(), &st) != 0) return read_counter_run(dir);
  RunBuilder builder;  // a rank at a time: a job's trace is never held whole
  auto trace = trace::read_trace_dir(dir, {}, [&](trace::RankTrace& rank) {
    builder.add(rank);
    rank.drop_records();
  });
  if (!trace.ok()) return trace.error();
  Run run = builder.finish(trace.value());
  if (run.command.empty()) return Error{dir + "/meta.json", "has no command line (args)"};
  if (!(run.seconds > 0)) return Error{dir, "the trace's wall time is not above zero"};
  return run;
}

}  // namespace pskel::model

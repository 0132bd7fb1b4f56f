#include "trace_run.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>

namespace pskel::model {

Run run_of_trace(const trace::TraceSet& trace) {
  Run run;
  run.source = trace.dir;
  run.kind = "trace";
  run.ntasks = static_cast<int>(trace.ranks.size());
  if (trace.meta.is_object() && trace.meta.contains("args") && trace.meta["args"].is_array())
    for (const auto& word : trace.meta["args"])
      if (word.is_string()) run.command.push_back(word.get<std::string>());
  std::map<std::string, double> sums;
  for (const trace::RankTrace& rank : trace.ranks)
    for (const trace::Record& r : rank.records) {
      const trace::FunctionInfo* f = trace::find_function(r.function);
      if (f == nullptr || f->kind == trace::FunctionKind::meta) continue;
      const std::string name(f->name);
      sums[name] += 1;
      sums[name + ".bytes"] += static_cast<double>(std::max<int64_t>(r.bytes, 0));
    }
  for (const auto& [key, sum] : sums)
    run.features[key] = sum / std::max(1, run.ntasks);
  run.seconds = trace::summarize(trace).wall_seconds;
  return run;
}

Result<Run> read_run(const std::string& dir) {
  struct stat st;
  if (::stat((dir + "/meta.json").c_str(), &st) != 0) return read_counter_run(dir);
  auto trace = trace::read_trace_dir(dir);
  if (!trace.ok()) return trace.error();
  Run run = run_of_trace(trace.value());
  if (run.command.empty()) return Error{dir + "/meta.json", "has no command line (args)"};
  if (!(run.seconds > 0)) return Error{dir, "the trace's wall time is not above zero"};
  return run;
}

}  // namespace pskel::model

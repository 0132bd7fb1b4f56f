#include "args.h"

#include <set>

#include "util/spool_names.h"
#include "util/text.h"

namespace pskel::spank {
namespace {

// Slurm's special step ids (slurm.h: SLURM_BATCH_SCRIPT etc.), repeated here to keep this file
// free of Slurm headers; spank_test.cpp checks them against slurm.h.
constexpr uint32_t kExternStep = 0xfffffffc;
constexpr uint32_t kBatchStep = 0xfffffffb;
constexpr uint32_t kInteractiveStep = 0xfffffffa;

bool is_tracer(std::string_view entry) {
  const size_t slash = entry.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? entry : entry.substr(slash + 1);
  return base.starts_with("libpskel-trace-") && base.ends_with(".so");
}

template <class F>
void for_each_entry(std::string_view list, F f) {
  size_t i = 0;
  while (i < list.size()) {
    const size_t end = list.find_first_of(": \t", i);
    const std::string_view entry = list.substr(i, end == std::string_view::npos ? end : end - i);
    if (!entry.empty()) f(entry);
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
}

}  // namespace

Result<PlugstackArgs> parse_plugstack_args(const std::vector<std::string>& args) {
  PlugstackArgs out;
  std::set<std::string> seen;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) return Error{"", one_line(arg, 80) + ": expected key=value"};
    const std::string key = arg.substr(0, eq);
    const std::string value = arg.substr(eq + 1);
    if (!seen.insert(key).second) return Error{"", one_line(key, 80) + ": given twice"};
    if (value.empty()) return Error{"", one_line(key, 80) + ": empty value"};
    const bool is_path = key != "mpi";
    if (is_path && value[0] != '/') return Error{"", one_line(arg, 80) + ": must be an absolute path"};
    if (key == "conf") out.conf = value;
    else if (key == "spool_dir") out.spool_dir = value;
    else if (key == "tracer_mpich") out.tracer_mpich = value;
    else if (key == "tracer_openmpi") out.tracer_openmpi = value;
    else if (key == "mpi") {
      if (value != "auto" && value != "mpich" && value != "openmpi")
        return Error{"", one_line(arg, 80) + ": must be auto, mpich or openmpi"};
      out.mpi = value;
    } else {
      return Error{"", one_line(key, 80) + ": unknown key (conf, spool_dir, tracer_mpich, tracer_openmpi, mpi)"};
    }
  }
  return out;
}

config::Config apply_overrides(config::Config conf, const PlugstackArgs& args) {
  if (args.spool_dir) conf.spool_dir = *args.spool_dir;
  if (args.tracer_mpich) conf.tracer_mpich = *args.tracer_mpich;
  if (args.tracer_openmpi) conf.tracer_openmpi = *args.tracer_openmpi;
  if (args.mpi) conf.mpi = *args.mpi;
  return conf;
}

std::string with_tracer(std::string_view ld_preload, const std::string& tracer) {
  std::string out = tracer;
  for_each_entry(ld_preload, [&](std::string_view entry) {
    if (!is_tracer(entry)) {
      out += ':';
      out += entry;
    }
  });
  return out;
}

std::string inherited_tracer(std::string_view ld_preload) {
  std::string found;
  for_each_entry(ld_preload, [&](std::string_view entry) {
    if (found.empty() && is_tracer(entry)) found = entry;
  });
  return found;
}

bool keeps_inherited_trace_dir(std::string_view program, std::string_view inherited_dir,
                               std::string_view job_dir) {
  const size_t slash = program.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? program : program.substr(slash + 1);
  if (name != "orted" || !inherited_dir.starts_with(job_dir) ||
      inherited_dir.size() <= job_dir.size() + 1 || inherited_dir[job_dir.size()] != '/')
    return false;
  const std::string_view step = inherited_dir.substr(job_dir.size() + 1);
  return step.find('/') == std::string_view::npos && step.find("step.") != std::string_view::npos &&
         step != "." && step != "..";
}

std::string step_dir_name(uint32_t step_id, uint32_t restart_count) {
  const std::string prefix = step_dir_prefix(restart_count);
  switch (step_id) {
    case kBatchStep: return prefix + "batch";
    case kExternStep: return prefix + "extern";
    case kInteractiveStep: return prefix + "interactive";
    default: return prefix + std::to_string(step_id);
  }
}

}  // namespace pskel::spank

// Placeholder: `pskel compress` is being written (issue 3).
#include "commands.h"

namespace pskel::cli {

Subcommand add_compress_command(CLI::App& app) {
  CompressTraceArgs args;
  auto* cmd = app.add_subcommand("compress", "merge a trace and fold its loops");
  return {cmd, [args] { return compress_trace_dir(args); }};
}

}  // namespace pskel::cli

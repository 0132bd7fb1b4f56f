// The pskel subcommands. Each registers its options on the CLI11 app and returns the callback
// that runs it; the callback returns the process exit code (0 ok, 1 bad input, 2 usage).
// Thin shells: the work is done by the pipeline's pure functions.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace pskel::cli {

struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

Subcommand add_run_command(CLI::App& app);
Subcommand add_info_command(CLI::App& app);
Subcommand add_compress_command(CLI::App& app);
Subcommand add_skeleton_command(CLI::App& app);   // cmd_skeleton.cpp
Subcommand add_predict_command(CLI::App& app);    // cmd_predict.cpp
Subcommand add_epilog_command(CLI::App& app);     // cmd_epilog.cpp
Subcommand add_guard_command(CLI::App& app);      // cmd_guard.cpp
Subcommand add_db_command(CLI::App& app);         // cmd_db.cpp
Subcommand add_report_command(CLI::App& app);     // cmd_db.cpp
Subcommand add_timeline_command(CLI::App& app);   // cmd_timeline.cpp
Subcommand add_place_command(CLI::App& app);      // cmd_place.cpp
Subcommand add_simulate_command(CLI::App& app);   // cmd_simulate.cpp
Subcommand add_doctor_command(CLI::App& app);     // cmd_doctor.cpp
Subcommand add_model_command(CLI::App& app);      // cmd_model.cpp
// `compiler_flags`: what followed `pskel instrument ... --`, split off before parsing.
Subcommand add_instrument_command(CLI::App& app,
                                  std::vector<std::string> compiler_flags);  // cmd_instrument.cpp

// `pskel compress DIR`: merge + loop compression of a trace directory (cmd_compress_trace.cpp).
struct CompressTraceArgs {
  std::string dir;
  bool json = false;
  bool show = false;
};
int compress_trace_dir(const CompressTraceArgs& args);

// Writes `text` to `path` through a temporary file renamed into place, so that a failed write
// never leaves half a page behind. Returns "" or the reason (cmd_timeline.cpp; also the report's
// page).
std::string write_file_replacing(const std::string& path, const std::string& text);

// Where pskel's own files are (cmd_run.cpp): `subdir` of core/ in the build tree this pskel
// was built in ("" when it cannot tell), and the first of `dirs` (empty ones skipped) that
// holds `name`, as an absolute path ("" if none). Installed files are under
// PSKEL_LIB_INSTALL_DIR (libdir/pskel) and PSKEL_INCLUDE_INSTALL_DIR.
std::string build_tree_dir(const std::string& subdir);
std::string first_holding(const std::string& name, const std::vector<std::string>& dirs);

// Prints "pskel: <line>" on stderr and returns 1: the answer to bad input.
int fail(const std::string& line);
// The same line for a usage error found after parsing; returns 2, like CLI11's own.
int usage_error(const std::string& line);

}  // namespace pskel::cli

// pskel: predicts MPI job run times with performance skeletons. See README.md and
// docs/ for the commands; docs/design.md's CLI contract fixes their names and JSON keys.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string_view>
#include <vector>

#include "commands.h"
#include "huge_pages.h"
#include "progress/progress.h"
#include "util/text.h"

namespace pskel::cli {

int fail(const std::string& line) {
  progress::clear_terminal_line();  // a progress line under way
  // One line whatever the error quotes (a path or trace field with a newline or invalid UTF-8).
  fmt::print(stderr, "pskel: {}\n", one_line(line, 4096));
  return 1;
}

int usage_error(const std::string& line) {
  fail(line);
  return 2;
}

}  // namespace pskel::cli

int main(int argc, char** argv) {
  pskel::cli::start_on_huge_pages(argc, argv);
  pskel::cli::keep_freed_memory(argc, argv);
  // `pskel instrument SRC... -- FLAGS`: the program's compiler flags are not pskel's options,
  // and CLI11 would parse them.
  std::vector<std::string> compiler_flags;
  if (argc > 1 && std::string_view(argv[1]) == "instrument")
    for (int i = 2; i < argc; ++i)
      if (std::string_view(argv[i]) == "--") {
        compiler_flags.assign(argv + i + 1, argv + argc);
        argc = i;
        break;
      }
  CLI::App app{"pskel: predict MPI job run times with performance skeletons"};
  app.set_version_flag("--version", PSKEL_VERSION);
  app.require_subcommand(1);
  const std::vector<pskel::cli::Subcommand> commands = {
      pskel::cli::add_run_command(app),
      pskel::cli::add_info_command(app),
      pskel::cli::add_compress_command(app),
      pskel::cli::add_skeleton_command(app),
      pskel::cli::add_predict_command(app),
      pskel::cli::add_epilog_command(app),
      pskel::cli::add_guard_command(app),
      pskel::cli::add_db_command(app),
      pskel::cli::add_report_command(app),
      pskel::cli::add_timeline_command(app),
      pskel::cli::add_place_command(app),
      pskel::cli::add_simulate_command(app),
      pskel::cli::add_doctor_command(app),
      pskel::cli::add_model_command(app),
      pskel::cli::add_instrument_command(app, compiler_flags),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  // The command's edge: whatever a command did not turn into an error of its own (a library's
  // exception on input nobody foresaw, memory exhausted) still ends as the one line of bad
  // input, never as an abort with a core dump.
  for (const auto& command : commands) {
    if (!command.app->parsed()) continue;
    try {
      return command.run();
    } catch (const std::bad_alloc&) {
      return pskel::cli::fail(command.app->get_name() + ": out of memory");
    } catch (const std::exception& e) {
      return pskel::cli::fail(command.app->get_name() + ": " + pskel::one_line(e.what()));
    }
  }
  return 2;
}

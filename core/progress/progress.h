// Progress of a long command (skeleton generation and compilation, predict's skeleton runs) for
// the person waiting: on a terminal, the phase under way with its time so far, rewritten in
// place twice a second, and a line per phase done; on a file or pipe, one line per phase
// ("pskel skeleton: merge 0.83 s"), never a line per step, written when the command succeeds:
// a command that fails prints its one line of error and nothing else. On stderr, so stdout
// keeps the command's result (JSON included). Thread safety: one thread calls the methods; a
// painter thread of its own repaints the terminal line.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace pskel::progress {

class Progress {
 public:
  // `prefix` starts every line ("pskel skeleton"). Nothing is shown when !show.
  Progress(std::string prefix, bool show, std::FILE* out = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Ends the open phase (its line is printed) and starts `name`.
  void phase(const std::string& name);
  // What the open phase is at ("run 3 of 10"): on a terminal at once; its last value ends the
  // phase's line.
  void detail(const std::string& text);
  // Ends the open phase.
  void end();
  // The command succeeded: ends the open phase and, off a terminal, prints the phases' lines.
  // Without it (a failure) the terminal's live line is erased and nothing else is printed.
  void done();

  // Whether `out` is a terminal.
  static bool is_terminal(std::FILE* out);

 private:
  void paint_locked(bool final_line);
  void painter();

  std::string prefix_;
  bool show_;
  bool terminal_;
  std::FILE* out_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::string phase_;
  std::string detail_;
  std::chrono::steady_clock::time_point started_;
  bool open_ = false;
  bool stop_ = false;
  std::string lines_;  // off a terminal: the phases' lines, printed by done()
  std::thread thread_;
};

// Erases the live line of a Progress on stderr, if stderr is a terminal: for the line of an
// error printed while a phase is under way.
void clear_terminal_line();

// Whether a command shows progress: always on a terminal; elsewhere unless its stdout is for a
// program (--json), whose caller reads stderr for the one line of an error.
bool wanted(bool json);

}  // namespace pskel::progress

#include "progress.h"

#include <unistd.h>

#include <utility>

namespace pskel::progress {

Progress::Progress(std::string prefix, bool show, std::FILE* out)
    : prefix_(std::move(prefix)), show_(show), terminal_(show && is_terminal(out)), out_(out) {
  if (terminal_) thread_ = std::thread([this] { painter(); });
}

Progress::~Progress() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  if (terminal_ && open_) {  // a command that failed under way: its live line goes
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
}

void clear_terminal_line() {
  if (Progress::is_terminal(stderr)) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

bool Progress::is_terminal(std::FILE* out) { return ::isatty(::fileno(out)) == 1; }

bool wanted(bool json) { return Progress::is_terminal(stderr) || !json; }

void Progress::phase(const std::string& name) {
  if (!show_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (open_) paint_locked(true);
  phase_ = name;
  detail_.clear();
  started_ = std::chrono::steady_clock::now();
  open_ = true;
  if (terminal_) paint_locked(false);
}

void Progress::detail(const std::string& text) {
  if (!show_) return;
  std::lock_guard<std::mutex> lock(mu_);
  detail_ = text;
  if (terminal_ && open_) paint_locked(false);
}

void Progress::end() {
  if (!show_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (open_) paint_locked(true);
  open_ = false;
}

void Progress::done() {
  if (!show_) return;
  end();
  std::lock_guard<std::mutex> lock(mu_);
  std::fputs(lines_.c_str(), out_);
  std::fflush(out_);
  lines_.clear();
}

// One line: "pskel skeleton: compile 1.2 s (detail)". On a terminal the open phase's line is
// rewritten in place ("\r", erase to the end) and ends with a newline when the phase does.
void Progress::paint_locked(bool final_line) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const std::string detail = detail_.empty() ? "" : " (" + detail_ + ")";
  if (terminal_) {
    std::fprintf(out_, "\r\033[K%s: %s %.1f s%s%s", prefix_.c_str(), phase_.c_str(), seconds,
                 detail.c_str(), final_line ? "\n" : " ...");
  } else if (final_line) {
    char line[512];
    std::snprintf(line, sizeof line, "%s: %s %.2f s%s\n", prefix_.c_str(), phase_.c_str(), seconds,
                  detail.c_str());
    lines_ += line;
  }
  std::fflush(out_);
}

void Progress::painter() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(500));
    if (!stop_ && open_) paint_locked(false);
  }
}

}  // namespace pskel::progress

#include "child/child.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "util/text.h"

extern char** environ;

namespace pskel::child {
namespace {

volatile sig_atomic_t g_interrupted = 0;
void on_interrupt(int) { g_interrupted = 1; }

// Wakes the capture loop this often to check the deadline and interrupts.
constexpr int kPollMilliseconds = 200;

void close_from(int lowest) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, lowest, ~0U, 0) == 0) return;
#endif
  struct rlimit rl;
  const int max = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                      ? static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 65536))
                      : 4096;
  for (int fd = lowest; fd < max; ++fd) ::close(fd);
}

// In the child: become `as` for good (groups, gid, uid, in that order). False if impossible.
bool drop_privileges(const Identity& as) {
  if (::geteuid() == as.uid) return true;
  if (::geteuid() != 0) return false;
  if (as.user.empty() ? ::setgroups(0, nullptr) != 0
                      : ::initgroups(as.user.c_str(), as.gid) != 0)
    return false;
  return ::setgid(as.gid) == 0 && ::setuid(as.uid) == 0 && ::setuid(0) != 0;
}

// In the child, after fork: never returns. A failure before or at exec is written to
// `report_fd` (close-on-exec, so the parent reads EOF once exec worked).
[[noreturn]] void exec_child(char* const* args, char* const* envp, const Options& options,
                             int out_fd, int err_fd, int report_fd) {
  ::setpgid(0, 0);  // its own process group: a timeout kills everything it started
  const int devnull = ::open("/dev/null", O_RDONLY);
  ::dup2(devnull, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  ::dup2(report_fd, 3);
  ::fcntl(3, F_SETFD, FD_CLOEXEC);
  close_from(4);
  const char* why = nullptr;
  if (options.as && !drop_privileges(*options.as)) why = "cannot become the job's user";
  else if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) why = "cannot chdir";
  if (!why) {
    if (options.search_path) ::execvpe(args[0], args, envp);
    else ::execve(args[0], args, envp);
    why = args[0];
  }
  const std::string msg = std::string(why) + ": " + std::strerror(errno);
  (void)!::write(3, msg.data(), msg.size());
  ::_exit(127);
}

// Whether the child has exited, without reaping it: while it is a zombie its pid, and so its
// process group's id, cannot be reused, and the group can still be killed safely.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

// Whether a complete line starting with `done` ends in out[from - done.size(), ...): only the
// text just appended (and what could begin a line before it) is looked at.
bool saw_done_line(const std::string& out, size_t from, const std::string& done) {
  if (done.empty()) return false;
  size_t at = out.rfind('\n', from > 0 ? from - 1 : 0);
  at = (at == std::string::npos || from == 0) ? 0 : at + 1;
  while (at < out.size()) {
    const size_t nl = out.find('\n', at);
    if (nl == std::string::npos) return false;
    if (out.compare(at, done.size(), done) == 0) return true;
    at = nl + 1;
  }
  return false;
}

// Reads the child's stdout and stderr into `result` until the child has exited and the pipes
// are drained, the deadline passes or the caller is interrupted; then kills the child's process
// group (what it left behind, which may hold the pipes open) and reaps the child.
void capture(pid_t pid, int out_fd, int err_fd, const Options& options,
             std::chrono::steady_clock::time_point start, Result& result) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  bool exited = false;
  char buf[65536];
  while (open_fds > 0) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!exited && result.done_seconds >= 0 && elapsed - result.done_seconds >= options.exit_grace_seconds) {
      result.killed_after_done = true;
      break;
    }
    if (options.timeout_seconds > 0 && elapsed >= options.timeout_seconds) {
      result.timed_out = true;
      result.time_limit = options.timeout_seconds;
      break;
    }
    if (options.stop_on_interrupt && g_interrupted) {
      result.interrupted = true;
      break;
    }
    int wait_ms = kPollMilliseconds;
    if (options.timeout_seconds > 0)
      wait_ms = std::clamp(static_cast<int>((options.timeout_seconds - elapsed) * 1000) + 1, 1, wait_ms);
    const int n = ::poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR) break;
    if (n == 0 && exited) break;  // gone, its group killed: what is left holds the pipes open
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        const size_t room = options.max_output - std::min(options.max_output, sinks[i]->size());
        const size_t before = sinks[i]->size();
        sinks[i]->append(buf, std::min(static_cast<size_t>(got), room));
        if (i == 0 && result.done_seconds < 0 && saw_done_line(result.out, before, options.done_line))
          result.done_seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
    if (!exited && has_exited(pid)) {
      exited = true;
      ::kill(-pid, SIGKILL);
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  ::kill(-pid, SIGKILL);  // after a timeout or an interrupt: all of it; else what it left behind
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string Result::failure() const {
  if (!started) return "cannot run: " + err;
  if (timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", time_limit);
    return std::string("did not finish within ") + limit + " s (killed)";
  }
  if (interrupted) return "interrupted";
  const std::string line = one_line(std::string_view(err).substr(0, err.find('\n')), 300);
  return "exit " + std::to_string(exit_code) + (line.empty() ? "" : ": " + line);
}

Result run(const std::vector<std::string>& argv, const Options& options) {
  Result result;
  if (argv.empty() || argv[0].empty() || (!options.search_path && argv[0][0] != '/')) {
    result.err = "not an absolute path: " + (argv.empty() ? std::string() : argv[0]);
    return result;
  }
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, report_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(report_pipe, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    for (const int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], report_pipe[0], report_pipe[1]})
      if (fd >= 0) ::close(fd);
    return result;
  }
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (options.env) {
    for (const std::string& e : *options.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }

  struct sigaction old_int{}, old_term{};
  if (options.stop_on_interrupt) {
    struct sigaction act{};
    act.sa_handler = on_interrupt;
    g_interrupted = 0;
    ::sigaction(SIGINT, &act, &old_int);
    ::sigaction(SIGTERM, &act, &old_term);
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  const int fork_errno = errno;
  if (pid == 0)
    exec_child(args.data(), options.env ? envp.data() : environ, options, out_pipe[1], err_pipe[1],
               report_pipe[1]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(report_pipe[1]);
  char report[512];
  const ssize_t exec_failed = pid < 0 ? 0 : ::read(report_pipe[0], report, sizeof report);
  ::close(report_pipe[0]);
  if (pid < 0 || exec_failed > 0) {
    result.err = pid < 0 ? std::string("fork: ") + std::strerror(fork_errno)
                         : std::string(report, static_cast<size_t>(exec_failed));
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    while (pid > 0 && ::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  } else {
    result.started = true;  // and the child is its process group's leader: it ran setpgid
    capture(pid, out_pipe[0], err_pipe[0], options, start, result);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (options.stop_on_interrupt) {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
  }
  return result;
}

bool spawn_detached(void (*body)(void*), void* arg) {
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);  // the worker is re-parented to init: slurmd waits for no one
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    close_from(3);
    ::signal(SIGHUP, SIG_IGN);
    ::umask(022);
    if (::chdir("/") != 0) ::_exit(1);
    body(arg);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return true;
}

}  // namespace pskel::child

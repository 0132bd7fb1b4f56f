#include "worker/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace pskel::worker {
namespace {

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

}  // namespace

std::string RunResult::failure() const {
  if (!started) return "cannot run: " + err;
  if (timed_out) return "timed out";
  std::string line = err.substr(0, err.find('\n'));
  if (line.size() > 300) line.resize(300);
  return "exit " + std::to_string(exit_code) + (line.empty() ? "" : ": " + line);
}

RunResult run(const std::vector<std::string>& argv, const RunOptions& options) {
  RunResult result;
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    result.err = "not an absolute path: " + (argv.empty() ? std::string() : argv[0]);
    return result;
  }
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    return result;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    return result;
  }
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    result.err = std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own process group: a timeout kills everything it started
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::dup2(exec_pipe[1], 3);  // close-on-exec: reports a failed exec, EOF otherwise
    ::fcntl(3, F_SETFD, FD_CLOEXEC);
    close_from(4);
    const char* why = nullptr;
    if (!drop_privileges(options.as)) why = "cannot become the job's user";
    else if (::chdir(options.cwd.c_str()) != 0) why = "cannot chdir";
    if (!why) {
      ::execve(args[0], args.data(), envp.data());
      why = "exec failed";
    }
    const int err = errno;
    const std::string msg = std::string(why) + ": " + std::strerror(err);
    (void)!::write(3, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  char buf[4096];
  const ssize_t exec_failed = ::read(exec_pipe[0], buf, sizeof buf);  // EOF once exec worked
  ::close(exec_pipe[0]);
  if (exec_failed > 0) {
    result.err.assign(buf, static_cast<size_t>(exec_failed));
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return result;
  }
  result.started = true;

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else if (sinks[i]->size() < options.max_output) {
        sinks[i]->append(buf, std::min(static_cast<size_t>(got),
                                       options.max_output - sinks[i]->size()));
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (result.timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!result.timed_out) ::kill(-pid, SIGKILL);  // anything it left behind in its group
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

}  // namespace pskel::worker

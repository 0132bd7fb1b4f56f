/* measure: runs a command and writes its wall time and peak resident memory to a file, for
 * test/bench/scale. A launcher of its own because a process's peak memory (wait4's ru_maxrss)
 * includes what its parent had when it forked: from python, every command would measure at
 * least the interpreter's ~14 MB. The command's output passes through.
 * Usage: measure FIGURES_FILE TIMEOUT_SECONDS COMMAND [ARG...]
 * FIGURES_FILE gets "wall_seconds=S peak_kb=K exit=E user_seconds=U sys_seconds=Y" (E: the exit
 * code, 128+N for signal N, -1 when the timeout killed it, with every process it started; U and
 * Y: the CPU time the command spent in its own code and in the kernel, its threads and waited-for
 * children included). Exit: 0 when the figures were written, 2 on a usage error. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double seconds(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec * 1e-6; }

static volatile sig_atomic_t timed_out;
static pid_t child;

static void on_alarm(int sig) {
  (void)sig;
  timed_out = 1;
  kill(-child, SIGKILL); /* its whole group: a compiler driver's cc1 too, which holds the pipes */
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: measure FIGURES_FILE TIMEOUT_SECONDS COMMAND [ARG...]\n");
    return 2;
  }
  /* Swapped or forgotten arguments would overwrite what they name: "measure build/pskel 300
   * ..." once replaced the program it was meant to run with its figures. */
  char *end = NULL;
  const unsigned timeout = (unsigned)strtoul(argv[2], &end, 10);
  if (end == argv[2] || *end != '\0') {
    fprintf(stderr, "measure: %s: TIMEOUT_SECONDS is not a number\n", argv[2]);
    return 2;
  }
  if (access(argv[1], X_OK) == 0) {
    fprintf(stderr, "measure: %s: is executable, not a FIGURES_FILE to overwrite\n", argv[1]);
    return 2;
  }
  const double start = now();
  child = fork();
  if (child < 0) {
    perror("measure: fork");
    return 2;
  }
  if (child == 0) {
    setpgid(0, 0);
    execvp(argv[3], argv + 3);
    fprintf(stderr, "measure: %s: cannot run\n", argv[3]);
    _exit(127);
  }
  setpgid(child, child); /* also here: the alarm may come before the child ran */
  signal(SIGALRM, on_alarm);
  if (timeout > 0) alarm(timeout);
  int status = 0;
  struct rusage usage;
  while (wait4(child, &status, 0, &usage) < 0) continue; /* EINTR from the alarm */
  const double wall = now() - start;
  const int code = timed_out ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  FILE *out = fopen(argv[1], "w");
  if (!out) {
    perror(argv[1]);
    return 2;
  }
  fprintf(out, "wall_seconds=%.6f peak_kb=%ld exit=%d user_seconds=%.6f sys_seconds=%.6f\n", wall,
          usage.ru_maxrss, code, seconds(usage.ru_utime), seconds(usage.ru_stime));
  return fclose(out) == 0 ? 0 : 2;
}

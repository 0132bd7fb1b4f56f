/* The counter runtime (pskel_counters.h). Runs inside the user's program: it never exits,
 * never aborts, and says what went wrong once on stderr. */
#define _GNU_SOURCE
#include "pskel_counters.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct table {
  struct pskel_counter* counters;
  unsigned count;
};

/* Tables are registered by constructors, one per rewritten file: a program has few. */
enum { kMaxTables = 4096 };
static struct table tables[kMaxTables];
static unsigned table_count;
static double start_seconds = -1;
static double load_seconds;
static int finished;

static double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* An environment variable's non-negative integer, or -1. */
static int env_int(const char* name) {
  const char* text = getenv(name);
  if (text == NULL || *text == '\0') return -1;
  char* end = NULL;
  const long value = strtol(text, &end, 10);
  return *end == '\0' && value >= 0 && value < (1L << 30) ? (int)value : -1;
}

static int first_env_int(const char* const* names) {
  for (; *names != NULL; ++names) {
    const int value = env_int(*names);
    if (value >= 0) return value;
  }
  return -1;
}

/* When MPI_Finalize is not in a rewritten file (a header's, a library's), the counters are
 * written at exit, with the rank and task count the launcher exported (Hydra, Open MPI,
 * Slurm), or as one task. */
static void finish_at_exit(void) {
  static const char* const kRank[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", NULL};
  static const char* const kSize[] = {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", NULL};
  const int rank = first_env_int(kRank), size = first_env_int(kSize);
  if (rank >= 0 && size > rank)
    pskel_counters_finish(rank, size);
  else
    pskel_counters_finish(0, 1);
}

void pskel_counters_register(struct pskel_counter* counters, unsigned count) {
  if (table_count == 0) {
    load_seconds = monotonic_seconds();
    atexit(finish_at_exit);
  }
  if (table_count < kMaxTables) tables[table_count++] = (struct table){counters, count};
}

int pskel_counters_start_after(int mpi_init_result) {
  if (start_seconds < 0) start_seconds = monotonic_seconds();
  return mpi_init_result;
}

/* A JSON string: quotes, backslashes and control bytes escaped; other bytes as they are. */
static void put_string(FILE* out, const char* s, size_t length) {
  fputc('"', out);
  for (size_t i = 0; i < length; ++i) {
    const unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      fprintf(out, "\\%c", c);
    else if (c < 0x20)
      fprintf(out, "\\u%04x", c);
    else
      fputc(c, out);
  }
  fputc('"', out);
}

/* The command line from /proc/self/cmdline, as a JSON list. */
static void put_command(FILE* out) {
  char buf[65536];
  size_t length = 0;
  FILE* in = fopen("/proc/self/cmdline", "r");
  if (in != NULL) {
    length = fread(buf, 1, sizeof buf, in);
    fclose(in);
  }
  fputc('[', out);
  size_t begin = 0;
  int first = 1;
  for (size_t i = 0; i < length; ++i) {
    if (buf[i] != '\0') continue;
    if (!first) fputc(',', out);
    put_string(out, buf + begin, i - begin);
    first = 0;
    begin = i + 1;
  }
  if (first) put_string(out, "?", 1); /* no command line: the fit will say the run is odd */
  fputc(']', out);
}

static int by_key(const void* a, const void* b) {
  return strcmp((*(const struct pskel_counter* const*)a)->key,
                (*(const struct pskel_counter* const*)b)->key);
}

void pskel_counters_finish(int rank, int ntasks) {
  const double end = monotonic_seconds();
  const char* dir = getenv("PSKEL_COUNTERS");
  if (finished || dir == NULL || *dir == '\0') return;
  finished = 1;
  const double start = start_seconds >= 0 ? start_seconds : load_seconds;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "pskel counters: %s: cannot create: %s\n", dir, strerror(errno));
    return;
  }
  char path[4096];
  if (snprintf(path, sizeof path, "%s/rank.%d.json", dir, rank) >= (int)sizeof path) {
    fprintf(stderr, "pskel counters: %s: path too long\n", dir);
    return;
  }
  const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "pskel counters: %s: %s%s\n", path, strerror(errno),
            errno == EEXIST ? " (not overwritten: give each run its own PSKEL_COUNTERS)" : "");
    return;
  }
  FILE* out = fdopen(fd, "w");
  if (out == NULL) {
    close(fd);
    return;
  }
  fprintf(out, "{\"format\":\"pskel-counters\",\"version\":1,\"rank\":%d,\"ntasks\":%d,", rank,
          ntasks);
  fprintf(out, "\"wall_seconds\":%.9f,\"command\":", end - start);
  put_command(out);
  fputs(",\"counters\":{", out);
  /* A rewritten header has a table in every file that includes it: one key, summed. */
  size_t total = 0;
  for (unsigned t = 0; t < table_count; ++t) total += tables[t].count;
  const struct pskel_counter** sorted = malloc((total ? total : 1) * sizeof *sorted);
  size_t n = 0;
  if (sorted != NULL) {
    for (unsigned t = 0; t < table_count; ++t)
      for (unsigned i = 0; i < tables[t].count; ++i) sorted[n++] = &tables[t].counters[i];
    qsort(sorted, n, sizeof *sorted, by_key);
  }
  for (size_t i = 0; i < n;) {
    unsigned long long sum = 0;
    size_t j = i;
    for (; j < n && strcmp(sorted[j]->key, sorted[i]->key) == 0; ++j) sum += sorted[j]->count;
    fputs(i == 0 ? "\n" : ",\n", out);
    put_string(out, sorted[i]->key, strlen(sorted[i]->key));
    fprintf(out, ":%llu", sum);
    i = j;
  }
  free(sorted);
  fputs("}}\n", out);
  if (fclose(out) != 0)
    fprintf(stderr, "pskel counters: %s: write failed: %s\n", path, strerror(errno));
}

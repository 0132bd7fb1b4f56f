// See huge_pages.h.
#include "huge_pages.h"

#include <gnu/libc-version.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>

#include "util/sanitizers.h"

namespace pskel::cli {

namespace {

constexpr char kTunables[] = "GLIBC_TUNABLES";
constexpr char kTunable[] = "glibc.malloc.hugetlb";
// Set in the restarted process only: "=" and the caller's GLIBC_TUNABLES, or "-" for none.
constexpr char kCallersTunables[] = "PSKEL_CALLERS_GLIBC_TUNABLES";

// glibc 2.35 added the tunable; an older one ignores it, and a restart would gain nothing.
bool libc_has_tunable() {
  int major = 0, minor = 0;
  return std::sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) == 2 &&
         (major > 2 || (major == 2 && minor >= 35));
}

// THP's mode is "[madvise]": huge pages go to memory that asks for them. Under "[always]"
// every large mapping has them already, under "[never]" none can.
bool huge_pages_on_request() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(mode, line) && line.find("[madvise]") != std::string::npos;
}

// The commands that hold a job's trace (the epilog's worker, forked, makes skeletons): only they
// gain more than a restart costs (about 12 ms here, as much as pskel's start-up).
bool holds_a_trace(std::string_view command) {
  for (std::string_view heavy : {"compress", "skeleton", "simulate", "timeline", "place", "info",
                                 "epilog"})
    if (command == heavy) return true;
  return false;
}

void restore_callers_tunables(const char* saved) {
  if (saved[0] == '=')
    setenv(kTunables, saved + 1, 1);
  else
    unsetenv(kTunables);
  unsetenv(kCallersTunables);
}

}  // namespace

void start_on_huge_pages(int argc, char** argv) {
  if (const char* saved = getenv(kCallersTunables)) {  // the restarted process
    restore_callers_tunables(std::string(saved).c_str());
    return;
  }
  const char* tunables = getenv(kTunables);
  const bool callers_choice = tunables && std::strstr(tunables, kTunable);
  // A sanitizer's allocator reads no glibc tunable.
  if (argc < 2 || !holds_a_trace(argv[1]) || callers_choice || util::sanitizer_allocator() ||
      !libc_has_tunable() || !huge_pages_on_request())
    return;  // a light command, the caller's setting stands, or there is nothing to gain
  const std::string saved = tunables ? std::string("=") + tunables : std::string("-");
  const std::string with_huge_pages = (tunables && *tunables ? std::string(tunables) + ":" : "") +
                                      kTunable + "=1";
  setenv(kCallersTunables, saved.c_str(), 1);
  setenv(kTunables, with_huge_pages.c_str(), 1);
  // The binary's own path, not /proc/self/exe, which would name the process "exe" in ps.
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length > 0) {
    self[length] = '\0';
    execv(self, argv);
  }
  restore_callers_tunables(saved.c_str());  // no restart: on small pages, as before
}

void keep_freed_memory(int argc, char** argv) {
  if (argc < 2 || !holds_a_trace(argv[1])) return;
  // Setting either also stops glibc from moving these thresholds as the program runs.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

}  // namespace pskel::cli

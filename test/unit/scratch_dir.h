// A per-process scratch directory under /tmp for the Slurm-integration unit tests, removed when
// the test program exits.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace pskel::testing {

// /tmp/pskel-<name>.<pid>, created on first use.
inline std::string scratch_dir(const char* name) {
  struct Dir {
    std::string path;
    explicit Dir(const char* n) : path("/tmp/pskel-" + std::string(n) + "." + std::to_string(::getpid())) {
      ::mkdir(path.c_str(), 0700);
    }
    ~Dir() {
      const std::string cmd = "rm -rf '" + path + "'";
      if (std::system(cmd.c_str()) != 0) {
      }
    }
  };
  static Dir dir(name);
  return dir.path;
}

}  // namespace pskel::testing

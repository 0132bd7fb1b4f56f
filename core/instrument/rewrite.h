// Seed 001's source instrumentation on clang's LibTooling: a counter in the body of every for,
// while and do loop and in each branch of every if (braces added where there are none), and
// around every MPI send, receive and collective a count of its calls and of its bytes (count x
// the datatype's size, per call site). Macros and files other than the one rewritten are left
// as they are. The rewritten file calls the counter runtime (core/counters/pskel_counters.h).
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace pskel::instrument {

struct Rewritten {
  std::string text;               // the whole rewritten file
  std::vector<std::string> keys;  // the counters, "file:line:kind", in table order
};

// Parses `path` with `compiler_args` (include paths, macros: what the program's own build
// passes) and rewrites it; counter keys name the file as `key_name`. Fails with clang's first
// error when the file does not compile.
Result<Rewritten> rewrite_file(const std::string& path, const std::string& key_name,
                               const std::vector<std::string>& compiler_args);

}  // namespace pskel::instrument

// Seed 001's source instrumentation on clang's LibTooling: a counter in the body of every for,
// while and do loop and in each branch of every if (braces added where there are none), and
// around every MPI send, receive and collective a count of its calls and of its bytes (count x
// the datatype's size, per call site). Macros and files other than those asked for (the source
// parsed and the headers named with it) are left as they are. The rewritten files call the
// counter runtime (core/counters/pskel_counters.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "util/result.h"

namespace pskel::instrument {

struct Rewritten {
  std::string path;               // the real path of the file rewritten
  std::string text;               // the whole rewritten file
  std::vector<std::string> keys;  // the counters, "file:line:kind", in table order
};

// Parses `source` with `compiler_args` (include paths, macros: what the program's own build
// passes) and rewrites it and each header it includes that `key_names` holds (real path ->
// the file's name in counter keys; the source must be there too). Returns the source's text
// and those headers' seen; fails with clang's first error when the source does not compile.
Result<std::vector<Rewritten>> rewrite_source(const std::string& source,
                                              const std::map<std::string, std::string>& key_names,
                                              const std::vector<std::string>& compiler_args);

}  // namespace pskel::instrument

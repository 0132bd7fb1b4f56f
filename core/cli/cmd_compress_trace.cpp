// `pskel compress DIR`: reads a trace directory, merges it and folds its loops.
#include "commands.h"

namespace pskel::cli {

int compress_trace_dir(const CompressTraceArgs& args) {
  return fail(args.dir + ": compressing a trace directory is not implemented yet");
}

}  // namespace pskel::cli

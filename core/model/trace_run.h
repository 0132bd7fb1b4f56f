// A traced job as a run of the run-time models (runs.h), for programs that were not
// instrumented (Fortran, or no source at hand): its features are the MPI calls and bytes per
// function (the trace has no call sites), the mean over ranks; its command line is rank 0's
// (meta.json's args), its task count the trace's ranks, its time the trace's wall time.
#pragma once

#include <string>

#include "model/runs.h"
#include "trace/reader.h"
#include "util/result.h"

namespace pskel::model {

// A trace directory (DIR/meta.json) or a counter directory (DIR/rank.N.json), whichever DIR is.
// A trace is read a window of ranks at a time, never whole.
Result<Run> read_run(const std::string& dir);

}  // namespace pskel::model

// Reading what scontrol prints (the worker asks slurmctld with `scontrol show job -o` and
// `scontrol show partition -o`; the epilog itself never does). Pure functions; reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "export/export.h"

namespace pskel::worker {

// "[days-]hours:minutes:seconds", "minutes:seconds" -> seconds; nullopt otherwise.
std::optional<int64_t> parse_duration(std::string_view text);

// The value of `key` in a one-line `Key=Value Key=Value ...` record ("" if absent). Only
// words starting a field count: "TimeLimit=" inside another field's text does not.
std::string field(std::string_view record, std::string_view key);

// The partitions of `scontrol show partition -o` (MaxTime, Default=YES).
std::vector<exportfile::Partition> parse_partitions(std::string_view text);

struct JobEnd {
  std::string state;        // JobState: COMPLETED, TIMEOUT, FAILED, ... (COMPLETING while ending)
  double runtime_seconds = -1;
  uint32_t ntasks = 0;      // NumTasks (0: not given)
  uint32_t nodes = 0;       // NumNodes (0: not given)
  uint32_t restarts = 0;    // Restarts: times Slurm requeued it
};
std::optional<JobEnd> parse_job(std::string_view record);

}  // namespace pskel::worker

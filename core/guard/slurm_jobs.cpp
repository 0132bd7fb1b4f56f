#include "guard/slurm_jobs.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <ctime>
#include <map>
#include <memory>

namespace pskel::guard {
namespace {

std::string slurm_error_text() { return slurm_strerror(slurm_get_errno()); }

uint32_t minutes_or_none(uint32_t minutes) {
  return minutes == NO_VAL || minutes == INFINITE ? kNoLimit : minutes;
}

// Run time so far as slurmctld counts it for the limit: suspended time does not count.
int64_t elapsed(const slurm_job_info_t& j, time_t now) {
  if (j.suspend_time) return static_cast<int64_t>(j.pre_sus_time + (now - j.suspend_time));
  return static_cast<int64_t>(now - j.start_time);
}

}  // namespace

void init_slurm() {
  static const bool done = [] {
    slurm_init(nullptr);
    return true;
  }();
  (void)done;
}

Result<std::vector<RunningJob>> running_pskel_jobs() {
  init_slurm();
  partition_info_msg_t* parts_raw = nullptr;
  if (slurm_load_partitions(0, &parts_raw, SHOW_ALL) != SLURM_SUCCESS)
    return Error{"slurmctld", "cannot load partitions: " + slurm_error_text()};
  std::unique_ptr<partition_info_msg_t, void (*)(partition_info_msg_t*)> parts(parts_raw,
                                                                               slurm_free_partition_info_msg);
  struct Limits {
    uint32_t default_minutes, max_minutes;
  };
  std::map<std::string, Limits, std::less<>> limits;
  for (uint32_t i = 0; i < parts->record_count; ++i) {
    const partition_info_t& p = parts->partition_array[i];
    if (p.name) limits[p.name] = {minutes_or_none(p.default_time), minutes_or_none(p.max_time)};
  }

  job_info_msg_t* jobs_raw = nullptr;
  if (slurm_load_jobs(0, &jobs_raw, SHOW_ALL) != SLURM_SUCCESS)
    return Error{"slurmctld", "cannot load jobs: " + slurm_error_text()};
  std::unique_ptr<job_info_msg_t, void (*)(job_info_msg_t*)> jobs(jobs_raw, slurm_free_job_info_msg);
  const time_t now = std::time(nullptr);
  std::vector<RunningJob> out;
  for (uint32_t i = 0; i < jobs->record_count; ++i) {
    const slurm_job_info_t& j = jobs->job_array[i];
    if ((j.job_state & JOB_STATE_BASE) != JOB_RUNNING || !j.admin_comment) continue;
    if (!parse_limit_comment(j.admin_comment)) continue;
    RunningJob r;
    r.job_id = j.job_id;
    r.time_limit_minutes = minutes_or_none(j.time_limit);
    r.elapsed_seconds = elapsed(j, now);
    r.admin_comment = j.admin_comment;
    if (j.partition) {
      if (const auto it = limits.find(std::string_view(j.partition)); it != limits.end()) {
        r.partition_default_minutes = it->second.default_minutes;
        r.partition_max_minutes = it->second.max_minutes;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<bool> update_job(uint32_t job_id, uint32_t time_limit_minutes, const std::string& admin_comment) {
  init_slurm();
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  desc.job_id = job_id;
  desc.time_limit = time_limit_minutes;
  std::string comment = admin_comment;  // libslurm takes char*, and only reads it
  desc.admin_comment = comment.data();
  if (slurm_update_job(&desc) != SLURM_SUCCESS)
    return Error{"job " + std::to_string(job_id), "cannot update: " + slurm_error_text()};
  return true;
}

}  // namespace pskel::guard

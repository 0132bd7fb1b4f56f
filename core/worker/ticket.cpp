#include "worker/ticket.h"

#include <charconv>
#include <cmath>

#include "config/config.h"
#include "export/app_key.h"
#include "export/job_args.h"
#include "export/export.h"
#include "util/text.h"

namespace pskel::worker {
namespace {

std::string get(const Env& env, std::string_view key) {
  const auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

bool to_u32(std::string_view s, uint32_t* out) {
  uint64_t v = 0;
  if (!config::parse_u64(s, &v) || v > 0xffffffffu) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool to_i64(std::string_view s, int64_t* out) {
  uint64_t v = 0;
  if (!config::parse_u64(s, &v) || v > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// "<prediction id>:<predicted seconds>:<limit minutes>"
bool parse_limited(std::string_view s, Ticket* t) {
  const size_t a = s.find(':');
  const size_t b = s.find(':', a == std::string_view::npos ? a : a + 1);
  if (a == std::string_view::npos || b == std::string_view::npos) return false;
  return to_i64(s.substr(0, a), &t->prediction_id) &&
         config::parse_double(s.substr(a + 1, b - a - 1), &t->predicted_seconds) &&
         t->predicted_seconds >= 0 && to_u32(s.substr(b + 1), &t->limit_minutes);
}

bool printable(std::string_view s) {
  for (const char c : s)
    if (c < ' ' || c > '~') return false;
  return s.size() <= 256;
}

}  // namespace

EpilogContext epilog_context(const Env& env) {
  return get(env, "SLURM_SCRIPT_CONTEXT") == "epilog_slurmd" ? EpilogContext::Node
                                                               : EpilogContext::Controller;
}

Result<std::optional<Ticket>> ticket_from_env(const Env& env) {
  Ticket t;
  t.traced = !get(env, "SPANK_PSKEL_PREDICT").empty();
  const std::string limited = get(env, "SPANK_PSKEL_LIMITED");
  t.limited = !limited.empty();
  if (!t.traced && !t.limited) return std::optional<Ticket>();
  if (!to_u32(get(env, "SLURM_JOB_ID"), &t.job_id) || t.job_id == 0)
    return Error{"epilog environment", "SLURM_JOB_ID missing or not a number"};
  if (!to_u32(get(env, "SLURM_JOB_UID"), &t.uid))
    return Error{"epilog environment", "SLURM_JOB_UID missing or not a number"};
  if (!to_u32(get(env, "SLURM_JOB_GID"), &t.gid))
    return Error{"epilog environment", "SLURM_JOB_GID missing or not a number"};
  t.user = get(env, "SLURM_JOB_USER");
  t.partition = get(env, "SLURM_JOB_PARTITION");
  if (!to_u32(get(env, "SLURM_JOB_NTASKS"), &t.ntasks)) t.ntasks = 0;
  if (!to_u32(get(env, "SLURM_JOB_NUM_NODES"), &t.nodes) || t.nodes == 0) t.nodes = 1;
  if (!to_u32(get(env, "SLURM_JOB_RESTART_COUNT"), &t.restarts) || t.restarts > 0xffff) t.restarts = 0;
  t.exit_code = get(env, "SLURM_JOB_EXIT_CODE2");
  if (t.user.empty() || !exportfile::valid_word(t.user)) t.user = std::to_string(t.uid);
  if (!t.partition.empty() && !exportfile::valid_word(t.partition))
    return Error{"epilog environment", "SLURM_JOB_PARTITION: not a partition name"};
  if (!printable(t.exit_code)) t.exit_code.clear();
  // The key job_submit computed; without job_submit_pskel.so, the --predict name.
  t.app_key = get(env, "SPANK_PSKEL_APP_KEY");
  if (!exportfile::valid_word(t.app_key)) {
    const std::string name = get(env, "SPANK_PSKEL_APP");
    t.app_key = exportfile::valid_app_name(name) ? name : "";
  }
  t.script_key = get(env, "SPANK_PSKEL_SCRIPT_KEY");
  if (!exportfile::valid_word(t.script_key) || !t.script_key.starts_with("script:")) t.script_key.clear();
  t.job_args = get(env, "SPANK_PSKEL_JOB_ARGS");
  if (std::vector<std::string> args; !exportfile::decode_job_args(t.job_args, &args))
    t.job_args.clear();
  if (t.limited && !parse_limited(limited, &t))
    return Error{"epilog environment", "SPANK_PSKEL_LIMITED: malformed: " + one_line(limited, 80)};
  return std::optional<Ticket>(t);
}

std::string format_ticket(const Ticket& t) {
  char predicted[64];
  const auto r = std::to_chars(predicted, predicted + sizeof predicted, t.predicted_seconds);
  return "JobId=" + std::to_string(t.job_id) + "\nUid=" + std::to_string(t.uid) +
         "\nGid=" + std::to_string(t.gid) + "\nUser=" + t.user + "\nPartition=" + t.partition +
         "\nNtasks=" + std::to_string(t.ntasks) + "\nNodes=" + std::to_string(t.nodes) +
         "\nRestarts=" + std::to_string(t.restarts) +
         "\nExitCode=" + t.exit_code +
         "\nTraced=" + (t.traced ? "1" : "0") + "\nAppKey=" + t.app_key +
         "\nScriptKey=" + t.script_key +
         "\nJobArgs=" + t.job_args +
         "\nLimited=" + (t.limited ? "1" : "0") +
         "\nPredictionId=" + std::to_string(t.prediction_id) +
         "\nPredictedSeconds=" + std::string(predicted, r.ptr) +
         "\nLimitMinutes=" + std::to_string(t.limit_minutes) +
         "\nAttempts=" + std::to_string(t.attempts) + "\n";
}

Result<Ticket> parse_ticket(std::string_view text, const std::string& origin) {
  Env env;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return Error{origin, "line without '='"};
    env.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  Ticket t;
  bool ok = to_u32(get(env, "JobId"), &t.job_id) && to_u32(get(env, "Uid"), &t.uid) &&
            to_u32(get(env, "Gid"), &t.gid) && to_u32(get(env, "Ntasks"), &t.ntasks) &&
            // A ticket queued by an older pskel has no Nodes: one node, as it then was.
            (!env.contains("Nodes") || (to_u32(get(env, "Nodes"), &t.nodes) && t.nodes > 0)) &&
            (!env.contains("Restarts") || to_u32(get(env, "Restarts"), &t.restarts)) &&
            to_i64(get(env, "PredictionId"), &t.prediction_id) &&
            config::parse_double(get(env, "PredictedSeconds"), &t.predicted_seconds) &&
            to_u32(get(env, "LimitMinutes"), &t.limit_minutes) &&
            to_u32(get(env, "Attempts"), &t.attempts);
  t.user = get(env, "User");
  t.partition = get(env, "Partition");
  t.exit_code = get(env, "ExitCode");
  t.traced = get(env, "Traced") == "1";
  t.limited = get(env, "Limited") == "1";
  t.app_key = get(env, "AppKey");
  t.script_key = get(env, "ScriptKey");
  t.job_args = get(env, "JobArgs");
  if (std::vector<std::string> args; !exportfile::decode_job_args(t.job_args, &args))
    t.job_args.clear();
  if (!ok || t.job_id == 0) return Error{origin, "malformed queue entry"};
  return t;
}

}  // namespace pskel::worker

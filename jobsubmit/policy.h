// What job_submit_pskel.so does to a job's time limit, as a pure function of the prediction,
// the configuration and the request. Free of Slurm headers; unit-tested.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace pskel::jobsubmit {

// Slurm's NO_VAL and INFINITE (slurm.h), repeated to keep this file free of Slurm headers;
// jobsubmit_test.cpp checks them against slurm.h.
inline constexpr uint32_t kNoVal = 0xfffffffe;
inline constexpr uint32_t kInfinite = 0xffffffff;

struct Limits {
  double margin = 0.2;        // fraction added to the prediction
  uint32_t pad_seconds = 60;  // added after the margin
  double cap_factor = 2.0;    // policy cap: a user's limit above prediction x this is lowered
};

// The largest limit pskel sets, whatever the inputs: clear of NO_VAL and INFINITE. Predictions
// within exportfile::kMaxPredictedSeconds and pskel.conf's Margin and Pad stay far below it.
inline constexpr uint32_t kMaxLimitMinutes = 0xfffffff0u;

// ceil((predicted x (1 + margin) + pad) / 60) minutes, at least 1, at most partition_max
// (kInfinite or kNoVal: no maximum) and kMaxLimitMinutes; predicted is taken as 0 when
// negative or NaN and as kMaxPredictedSeconds when larger.
uint32_t limit_minutes(double predicted_seconds, const Limits& limits, uint32_t partition_max);

struct Decision {
  bool change = false;         // set time_limit to limit
  uint32_t limit = 0;          // minutes
  std::string why;             // for admin_comment and the log: what was decided and why
};

// The prediction as it goes into AdminComment, PSKEL_LIMITED and the line sbatch prints: fixed
// notation with one decimal, at most "31536000.0" (kMaxPredictedSeconds). decide() only lets
// valid predictions through; any other double is clamped (NaN, -0 and negatives to 0). Empty if
// it could not be written (never, by the clamp).
std::string seconds_text(double seconds);

// The node count a job asked for, from its job_desc's min_nodes and max_nodes: sbatch -N n sets
// both to n and -N n-m to n and m; without -N both stay kNoVal (-n 0 sets min_nodes to 0). 0
// (cache.h's kAnyNodes) when it asked for none, or for a range: it may get any count in it.
uint32_t requested_nodes(uint32_t min_nodes, uint32_t max_nodes);

// `user_limit` is the job's time_limit as submitted (minutes, kNoVal when not given). A
// prediction that is not exportfile::valid_predicted_seconds changes nothing.
Decision decide(config::Policy policy, double predicted_seconds, const Limits& limits,
                uint32_t user_limit, uint32_t partition_max);

}  // namespace pskel::jobsubmit

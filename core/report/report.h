// `pskel report`'s figures and its page: for the jobs whose time limit pskel set, predicted
// against actual run time per application and overall, the signed error over time, and how many
// limits were set, extended by the guard and reached (killed); the worst applications first.
// report_html() writes one self-contained page (inline SVG, no script, nothing fetched) that a
// site can mail or archive. Pure functions over data read from the store; reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace pskel::report {

// The numbers of a set of outcomes. Errors are over the outcomes with an actual run time above
// zero; signed error = (predicted - actual) / actual: above zero, the prediction was long.
struct Figures {
  int limited = 0;   // outcomes: jobs whose limit pskel set
  int jobs = 0;      // of them, with an actual run time (the errors' count)
  int extended = 0;  // jobs the guard extended
  int killed = 0;    // TIMEOUT at a limit pskel set
  double mean_signed_error_pct = 0;
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
};

struct AppReport {
  store::Accuracy accuracy;              // the store's row (counts of extensions and kills)
  std::vector<store::Outcome> outcomes;  // oldest first
  Figures figures;
};

struct Report {
  std::string guard;  // guard::describe's text
  bool guard_running = false;
  int64_t generated = 0;        // Unix time
  std::vector<AppReport> apps;  // worst first
  Figures overall;
};

// The signed error of one outcome in %, or false when its actual run time is not above zero.
bool signed_error_pct(const store::Outcome& outcome, double* pct);

// Fills each application's figures and the overall ones, and orders the applications worst
// first: most jobs killed at a pskel limit, then largest mean |error|.
Report make_report(std::vector<AppReport> apps, std::string guard, bool guard_running,
                   int64_t generated);

std::string report_html(const Report& report);

}  // namespace pskel::report

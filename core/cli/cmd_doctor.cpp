// pskel doctor: checks this node's Slurm and pskel setup (core/doctor/doctor.h), one line per
// check with the fix for each failure; exit 0 when nothing failed, 1 otherwise.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "doctor/doctor.h"
#include "util/json_text.h"

namespace pskel::cli {

Subcommand add_doctor_command(CLI::App& app) {
  struct Options {
    std::string slurm_conf;
    std::string conf;
    bool json = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Check that this node is set up for pskel: plugins, slurm.conf and plugstack lines, "
      "directories, guard, MPI, store; each failure with its fix");
  cmd->add_option("--slurm-conf", opt->slurm_conf,
                  "slurm.conf the Slurm daemons read (default: $SLURM_CONF or " +
                      doctor::default_slurm_conf() + ")");
  cmd->add_option("--conf", opt->conf,
                  "pskel.conf to check (default: the plugstack line's conf=, else $PSKEL_CONF or "
                  "the installed one)");
  cmd->add_flag("--json", opt->json,
                "Print JSON: ok (bool), checks [{name, status (ok|fail|skip), detail, fix}]");
  return {cmd, [opt]() {
            char host[256] = {};
            ::gethostname(host, sizeof host - 1);
            doctor::Options options;
            options.slurm_conf =
                opt->slurm_conf.empty() ? doctor::default_slurm_conf() : opt->slurm_conf;
            options.pskel_conf = opt->conf;
            options.hostname = host;
            options.now = std::time(nullptr);
            const std::vector<doctor::Check> checks = doctor::run_doctor(options);
            const auto failed = std::count_if(
                checks.begin(), checks.end(),
                [](const doctor::Check& c) { return c.status == doctor::Status::fail; });
            if (opt->json) {
              nlohmann::json out{{"ok", failed == 0}, {"checks", nlohmann::json::array()}};
              for (const doctor::Check& c : checks)
                out["checks"].push_back(
                    {{"name", c.name},
                     {"status",
                      c.status == doctor::Status::fail ? "fail" : doctor::status_name(c.status)},
                     {"detail", c.detail},
                     {"fix", c.fix}});
              fmt::print("{}\n", json_text(out, 2));
            } else {
              size_t width = 0;
              for (const doctor::Check& c : checks) width = std::max(width, c.name.size());
              for (const doctor::Check& c : checks) {
                fmt::print("{:<5} {:<{}}  {}\n", doctor::status_name(c.status), c.name, width,
                           c.detail);
                if (!c.fix.empty()) fmt::print("{:<5} {:<{}}  fix: {}\n", "", "", width, c.fix);
              }
              if (failed == 0)
                fmt::print("doctor: all {} checks passed or did not apply here\n", checks.size());
              else
                fmt::print("doctor: {} of {} checks failed\n", failed, checks.size());
            }
            return failed == 0 ? 0 : 1;
          }};
}

}  // namespace pskel::cli

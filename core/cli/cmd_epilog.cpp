// pskel epilog: called from EpilogSlurmctld (etc/pskel-epilog) with slurmctld's environment,
// once per job. Queues traced jobs and jobs whose limit pskel set, starts a detached worker,
// returns at once. Always exits 0: pskel never affects jobs, nodes or slurmctld.
#include <fmt/format.h>

#include <cstdlib>

#include "commands.h"
#include "config/config.h"
#include "worker/worker.h"

extern char** environ;

namespace pskel::cli {

Subcommand add_epilog_command(CLI::App& app) {
  struct Options {
    std::string conf;
    bool foreground = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "epilog", "Slurm epilog: queue this job for the pskel worker and return at once");
  cmd->add_option("--conf", opt->conf, "pskel.conf to read (default: $PSKEL_CONF or the installed one)");
  cmd->add_flag("--foreground", opt->foreground,
                "Process the queue in this process instead of a detached worker (administration)");
  return {cmd, [opt]() {
    auto conf = config::load_given_config(opt->conf);
    if (!conf) {
      fmt::print(stderr, "pskel: {}\n", conf.error().line());
      return 0;
    }
    worker::Env env;
    for (char** e = environ; e && *e; ++e) {
      const std::string entry = *e;
      const size_t eq = entry.find('=');
      if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
    const worker::EpilogResult r = worker::epilog(conf.value(), env, !opt->foreground);
    if (opt->foreground) worker::work(conf.value());
    (void)r;
    return 0;
  }};
}

}  // namespace pskel::cli

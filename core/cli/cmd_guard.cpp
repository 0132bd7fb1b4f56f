// pskel guard: the daemon on the controller that extends jobs before a limit pskel set
// (core/guard/guard.h). Runs in the foreground (systemd: etc/pskel-guard.service) until SIGTERM;
// --once looks once and prints what it did.
#include <fmt/format.h>

#include <atomic>
#include <csignal>

#include "commands.h"
#include "config/config.h"
#ifdef PSKEL_HAVE_LIBSLURM
#include "guard/guard.h"
#endif

namespace pskel::cli {
namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

}  // namespace

Subcommand add_guard_command(CLI::App& app) {
  struct Options {
    std::string conf;
    bool once = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "guard", "Extend running jobs before a time limit pskel set (daemon on the controller, as root)");
  cmd->add_option("--conf", opt->conf, "pskel.conf to read (default: $PSKEL_CONF or the installed one)");
  cmd->add_flag("--once", opt->once, "Look at the running jobs once, print what was done, exit");
  return {cmd, [opt]() {
#ifndef PSKEL_HAVE_LIBSLURM
    (void)opt;
    return fail("guard: this pskel was built without libslurm (install libslurm-dev and rebuild)");
#else
    auto conf = config::load_given_config(opt->conf);
    if (!conf) return fail(conf.error().line());
    if (opt->once) {
      const guard::RoundResult r = guard::run_round(conf.value());
      if (!r.reached_slurmctld) return fail("guard: slurmctld did not answer (see " + conf.value().log_file + ")");
      fmt::print("guard: {} running job(s) with a pskel limit, {} extended\n", r.jobs, r.extended);
      return 0;
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    guard::run(conf.value(), g_stop);
    return 0;
#endif
  }};
}

}  // namespace pskel::cli

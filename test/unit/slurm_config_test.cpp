// pskel.conf parsing, the SPANK plugin's plugstack arguments and its pure helpers (LD_PRELOAD
// editing, step directory names), application keys.
#include <doctest/doctest.h>

#include <cstdlib>

#include "config/config.h"
#include "export/app_key.h"
#include "spank/args.h"
#include "util/parallel.h"
#include "util/spool_names.h"

using namespace pskel;

TEST_CASE("EmptyConfigGivesDefaultsAndDerivedPaths") {
  auto c = config::parse_config("", "pskel.conf");
  REQUIRE(c.ok());
  CHECK(c.value().policy == config::Policy::UnsetOnly);
  CHECK(c.value().state_dir == "/var/lib/pskel");
  CHECK(c.value().database == "/var/lib/pskel/pskel.db");
  CHECK(c.value().export_file == "/var/lib/pskel/predictions.export");
  CHECK(c.value().margin == doctest::Approx(0.2));
  CHECK(c.value().pad_seconds == 60);
}

TEST_CASE("ConfigKeysAreCaseInsensitiveAndSeveralFitOnALine") {
  auto c = config::parse_config(
      "# comment\nstatedir=/s  POLICY=cap # trailing\nMargin=0.5 Pad=0\n"
      "CalibratePartitions=a,b,,c\nLauncherMpich=\"srun --mpi=pmi2 -n {ntasks}\"\n",
      "pskel.conf");
  REQUIRE_MESSAGE(c.ok(), c.error().line());
  CHECK(c.value().policy == config::Policy::Cap);
  CHECK(c.value().database == "/s/pskel.db");
  CHECK(c.value().margin == doctest::Approx(0.5));
  CHECK(c.value().pad_seconds == 0);
  CHECK(c.value().calibrate_partitions == std::vector<std::string>{"a", "b", "c"});
  CHECK(c.value().launcher_mpich == "srun --mpi=pmi2 -n {ntasks}");
}

TEST_CASE("WorkerThreadsBoundTheThreadsOfTheWorkersSteps") {
  CHECK(config::parse_config("", "f").value().worker_threads == 1);  // slurmctld's node: gently
  auto c = config::parse_config("WorkerThreads=4\n", "f");
  REQUIRE(c.ok());
  CHECK(c.value().worker_threads == 4);
  for (const char* text : {"WorkerThreads=0", "WorkerThreads=1.5", "WorkerThreads=-2"})
    CHECK_FALSE(config::parse_config(text, "f").ok());
  // What the steps see: PSKEL_THREADS caps the CPUs a pskel command uses.
  ::setenv("PSKEL_THREADS", "1", 1);
  CHECK(util::usable_cpus() == 1);
  ::setenv("PSKEL_THREADS", "banana", 1);  // not a number: the affinity mask alone
  CHECK(util::usable_cpus() >= 1);
  ::unsetenv("PSKEL_THREADS");
}

TEST_CASE("TraceFilesChoosesTheTracedJobsFiles") {
  CHECK(config::parse_config("", "f").value().trace_files == "auto");
  CHECK(config::parse_config("TraceFiles=Node\n", "f").value().trace_files == "node");
  CHECK(config::parse_config("tracefiles=rank\n", "f").value().trace_files == "rank");
  auto bad = config::parse_config("TraceFiles=nodes\n", "pskel.conf");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().line() == "pskel.conf:1: TraceFiles=nodes: must be auto, node or rank");
}

TEST_CASE("ExplicitDatabaseIsNotOverriddenByStateDir") {
  auto c = config::parse_config("Database=/db/x.db\nStateDir=/s\n", "f");
  REQUIRE(c.ok());
  CHECK(c.value().database == "/db/x.db");
  CHECK(c.value().log_file == "/s/worker.log");
}

TEST_CASE("UnknownKeyIsRejectedNamingFileLineAndKey") {
  auto c = config::parse_config("Policy=off\n\nFrobnicate=1\n", "/etc/slurm/pskel.conf");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().line() == "/etc/slurm/pskel.conf:3: unknown key Frobnicate");
}

TEST_CASE("BadValuesAreRejected") {
  for (const char* text : {"Policy=sometimes", "Margin=-1", "Margin=abc", "Pad=1.5", "Pad=-3",
                           "StateDir=relative", "Mpi=lam", "CapFactor=0.5", "Margin=nan",
                           "LauncherMpich=\"unterminated", "NoEquals", "=value", "Pad=",
                           "Margin=1e999"}) {
    CAPTURE(text);
    CHECK_FALSE(config::parse_config(text, "f").ok());
  }
}

TEST_CASE("TheInstalledConfigParses") {
  auto c = config::load_config(PSKEL_ETC_CONF);
  REQUIRE_MESSAGE(c.ok(), c.error().line());
  CHECK(c.value().policy == config::Policy::UnsetOnly);
  CHECK(c.value().launcher_mpich == "srun --mpi=pmi2 -n {ntasks}");
}

TEST_CASE("MissingConfigFileIsAnErrorUnlessAllowed") {
  CHECK_FALSE(config::load_config("/nonexistent/pskel.conf").ok());
  CHECK(config::load_config("/nonexistent/pskel.conf", true).ok());
  CHECK_FALSE(config::load_config("/").ok());  // a directory
}

TEST_CASE("PlugstackArgumentsAreStrict") {
  using spank::parse_plugstack_args;
  auto ok = parse_plugstack_args({"conf=/etc/x.conf", "spool_dir=/s", "mpi=openmpi"});
  REQUIRE(ok.ok());
  CHECK(ok.value().conf == "/etc/x.conf");
  CHECK(*ok.value().spool_dir == "/s");
  CHECK(*ok.value().mpi == "openmpi");
  CHECK_FALSE(ok.value().tracer_mpich.has_value());

  auto unknown = parse_plugstack_args({"spooldir=/s"});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().what.find("spooldir: unknown key") == 0);
  CHECK_FALSE(parse_plugstack_args({"spool_dir=/a", "spool_dir=/b"}).ok());
  CHECK_FALSE(parse_plugstack_args({"spool_dir=relative"}).ok());
  CHECK_FALSE(parse_plugstack_args({"spool_dir="}).ok());
  CHECK_FALSE(parse_plugstack_args({"mpi=auto2"}).ok());
  CHECK_FALSE(parse_plugstack_args({"=x"}).ok());
  CHECK_FALSE(parse_plugstack_args({"conf"}).ok());
  CHECK(parse_plugstack_args({}).ok());
}

TEST_CASE("PlugstackOverridesWinOverTheConfigFile") {
  auto args = spank::parse_plugstack_args({"spool_dir=/fast", "tracer_mpich=/t/m.so"});
  REQUIRE(args.ok());
  auto conf = config::parse_config("SpoolDir=/slow\nTracerOpenmpi=/t/o.so\n", "f");
  REQUIRE(conf.ok());
  const config::Config c = spank::apply_overrides(conf.value(), args.value());
  CHECK(c.spool_dir == "/fast");
  CHECK(c.tracer_mpich == "/t/m.so");
  CHECK(c.tracer_openmpi == "/t/o.so");
}

TEST_CASE("TracerIsPrependedAndOtherTracersRemoved") {
  using spank::with_tracer;
  CHECK(with_tracer("", "/t/libpskel-trace-mpich.so") == "/t/libpskel-trace-mpich.so");
  CHECK(with_tracer("/a/libfoo.so:/b/libbar.so", "/t/libpskel-trace-mpich.so") ==
        "/t/libpskel-trace-mpich.so:/a/libfoo.so:/b/libbar.so");
  // A step started from a traced batch script inherits the batch step's tracer.
  CHECK(with_tracer("/t/libpskel-trace-mpich.so:/a/libfoo.so", "/t/libpskel-trace-openmpi.so") ==
        "/t/libpskel-trace-openmpi.so:/a/libfoo.so");
  CHECK(with_tracer("libpskel-trace-mpich.so /a/x.so", "/t/libpskel-trace-mpich.so") ==
        "/t/libpskel-trace-mpich.so:/a/x.so");
  CHECK(with_tracer("::/a/x.so::", "/t/libpskel-trace-mpich.so") ==
        "/t/libpskel-trace-mpich.so:/a/x.so");
  // Only the basename counts: a directory named like a tracer is not one.
  CHECK(with_tracer("/libpskel-trace-x.so/libfoo.so", "/t/l.so") ==
        "/t/l.so:/libpskel-trace-x.so/libfoo.so");
}

TEST_CASE("InheritedTracerIsTheFirstPskelTracer") {
  CHECK(spank::inherited_tracer("/a/x.so:/t/libpskel-trace-openmpi.so") ==
        "/t/libpskel-trace-openmpi.so");
  CHECK(spank::inherited_tracer("/a/x.so") == "");
  CHECK(spank::inherited_tracer("") == "");
}

TEST_CASE("StepDirectoriesHaveReadableNames") {
  CHECK(job_dir_name(42) == "job.42");
  CHECK(spank::step_dir_name(0) == "step.0");
  CHECK(spank::step_dir_name(0xfffffffb) == "step.batch");
  CHECK(spank::step_dir_name(0xfffffffc) == "step.extern");
  CHECK(spank::step_dir_name(0xfffffffa) == "step.interactive");
  CHECK(spank::step_dir_name(0, 2) == "run2.step.0");  // the third run of a requeued job
  CHECK(spank::step_dir_name(0xfffffffb, 1) == "run1.step.batch");
  // Open MPI's daemons on the other nodes keep the trace directory of mpiexec's step.
  const std::string job = "/spool/job.7";
  CHECK(spank::keeps_inherited_trace_dir("/usr/bin/orted", job + "/step.batch", job));
  CHECK(spank::keeps_inherited_trace_dir("orted", job + "/run1.step.0", job));
  CHECK_FALSE(spank::keeps_inherited_trace_dir("/usr/bin/orted", "/spool/job.8/step.batch", job));
  CHECK_FALSE(spank::keeps_inherited_trace_dir("/usr/bin/orted", job + "/step.batch/x", job));
  CHECK_FALSE(spank::keeps_inherited_trace_dir("/usr/bin/orted", job + "/..", job));
  CHECK_FALSE(spank::keeps_inherited_trace_dir("/usr/bin/orted", job + "x/step.0", job));
  CHECK_FALSE(spank::keeps_inherited_trace_dir("/usr/bin/orted", "", job));
  CHECK_FALSE(spank::keeps_inherited_trace_dir("./ring", job + "/step.batch", job));  // a program's own step
}

TEST_CASE("ApplicationNamesAreRestricted") {
  using exportfile::valid_app_name;
  CHECK(valid_app_name("lammps"));
  CHECK(valid_app_name("NPB.lu-C+2_x"));
  CHECK_FALSE(valid_app_name(""));
  CHECK_FALSE(valid_app_name("(null)"));  // what Slurm passes for a bare --predict
  CHECK_FALSE(valid_app_name("-x"));
  CHECK_FALSE(valid_app_name("a b"));
  CHECK_FALSE(valid_app_name("a/b"));
  CHECK_FALSE(valid_app_name(std::string(65, 'a')));
  CHECK(valid_app_name(std::string(64, 'a')));
}

TEST_CASE("ApplicationKeyPrefersTheNameThenTheScriptThenTheJobName") {
  using exportfile::app_key;
  CHECK(app_key("lu", "#!/bin/sh\n", "job") == "lu");
  CHECK(app_key("(null)", "#!/bin/sh\n", "job").starts_with("script:"));
  CHECK(app_key("", "#!/bin/sh\n", "job") == app_key("", "#!/bin/sh\n", "other"));
  CHECK(app_key("", "#!/bin/sh\n", nullptr).size() == 7 + 16);
  CHECK(app_key("", "#!/bin/sh\n", nullptr) != app_key("", "#!/bin/sh\n\n", nullptr));
  CHECK(app_key("", nullptr, "ring.mpich") == "job:ring.mpich");
  CHECK(app_key("", "", "a b/c") == "job:a_b_c");
  CHECK(app_key("", nullptr, nullptr) == "");
  // FNV-1a 64 reference values.
  CHECK(exportfile::fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(exportfile::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
}

// Issue 22: a config error echoed a 900 kB value with raw control characters into the log.
TEST_CASE("AConfigErrorQuotesAHugeValueAsOneShortLine") {
  const std::string value = std::string(900'000, 'v') + "\x1b[2J\r\x07";
  for (const std::string& text : {"Margin=" + value, value + "=1", "Policy=\"" + value,
                                  "StateDir=\"/x\"" + value}) {
    const auto c = config::parse_config(text, "/etc/slurm/pskel.conf");
    REQUIRE_FALSE(c.ok());
    const std::string line = c.error().line();
    CHECK(line.size() < 300);
    CHECK(line.find_first_of("\n\r\x1b\x07") == std::string::npos);
  }
  std::vector<std::string> args = {"conf=" + value + "\n"};
  const auto p = spank::parse_plugstack_args(args);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().line().size() < 300);
  CHECK(p.error().line().find('\n') == std::string::npos);
}

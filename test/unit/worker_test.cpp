// The epilog side: the epilog environment, queue tickets, scontrol output, and finding a trace
// safely in a directory its user controls.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "scratch_dir.h"
#include "trace/node_file.h"
#include "util/safe_dir.h"
#include "worker/slurm_text.h"
#include "worker/ticket.h"
#include "worker/trace_pick.h"
#include "worker/worker.h"

using namespace pskel;
using namespace pskel::worker;

namespace {

Env base_env() {
  return {{"SLURM_JOB_ID", "42"},        {"SLURM_JOB_UID", "1000"},    {"SLURM_JOB_GID", "100"},
          {"SLURM_JOB_USER", "alice"},   {"SLURM_JOB_PARTITION", "batch"},
          {"SLURM_JOB_NTASKS", "4"},     {"SLURM_JOB_EXIT_CODE2", "0:0"}};
}

std::string scratch(const std::string& name) {
  const std::string path = pskel::testing::scratch_dir("worker-test") + "/" + name;
  std::string cmd = "rm -rf '" + path + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return path;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A trace directory as the tracer leaves it: meta.json and the rank files.
// `hosts`: the meta.json host of each rank (none when empty); `files`: how many rank files
// are here (all of them when -1).
void fake_trace(const std::string& dir, int ranks, bool complete = true,
                const std::vector<std::string>& hosts = {}, int files = -1) {
  ::mkdir(dir.c_str(), 0755);
  std::string host_list;
  for (const std::string& h : hosts) host_list += (host_list.empty() ? "\"" : ", \"") + h + "\"";
  write(dir + "/meta.json", "{\"complete\": " + std::string(complete ? "true" : "false") +
                                ", \"ranks\": " + std::to_string(ranks) + ", \"mpi\": \"mpich\"" +
                                (hosts.empty() ? "" : ", \"hosts\": [" + host_list + "]") + "}");
  for (int r = 0; r < (files < 0 ? ranks : files); ++r)
    write(dir + "/rank." + std::to_string(r) + ".pskt", "xxxx");
}

}  // namespace

TEST_CASE("JobsPskelKnowsNothingAboutAreNotQueued") {
  auto t = ticket_from_env(base_env());
  REQUIRE(t.ok());
  CHECK_FALSE(t.value().has_value());
  CHECK_FALSE(ticket_from_env({}).value().has_value());
}

TEST_CASE("TracedJobBecomesATicket") {
  Env env = base_env();
  env["SPANK_PSKEL_PREDICT"] = "1";
  env["SPANK_PSKEL_APP_KEY"] = "script:0123456789abcdef";
  auto t = ticket_from_env(env);
  REQUIRE(t.ok());
  REQUIRE(t.value().has_value());
  const Ticket& k = *t.value();
  CHECK(k.job_id == 42);
  CHECK(k.uid == 1000);
  CHECK(k.gid == 100);
  CHECK(k.ntasks == 4);
  CHECK(k.traced);
  CHECK_FALSE(k.limited);
  CHECK(k.app_key == "script:0123456789abcdef");
  CHECK(k.script_key.empty());
  env["SPANK_PSKEL_APP_KEY"] = "lu";
  env["SPANK_PSKEL_SCRIPT_KEY"] = "script:0123456789abcdef";
  CHECK(ticket_from_env(env).value()->script_key == "script:0123456789abcdef");
  env["SPANK_PSKEL_SCRIPT_KEY"] = "lu2";  // not a script key
  CHECK(ticket_from_env(env).value()->script_key.empty());
}

TEST_CASE("WithoutJobSubmitTheNameGivenToPredictIsTheKey") {
  Env env = base_env();
  env["SPANK_PSKEL_PREDICT"] = "1";
  env["SPANK_PSKEL_APP"] = "lammps";
  CHECK(ticket_from_env(env).value()->app_key == "lammps");
  env["SPANK_PSKEL_APP"] = "(null)";
  CHECK(ticket_from_env(env).value()->app_key == "");
}

TEST_CASE("LimitedJobCarriesItsPrediction") {
  Env env = base_env();
  env["SPANK_PSKEL_LIMITED"] = "7:125.5:4";
  auto t = ticket_from_env(env);
  REQUIRE(t.ok());
  CHECK(t.value()->limited);
  CHECK(t.value()->prediction_id == 7);
  CHECK(t.value()->predicted_seconds == 125.5);
  CHECK(t.value()->limit_minutes == 4);
  for (const char* bad : {"7", "7:x:4", "7:1:", "-1:2:3", "7:-5:4", ":1:2"}) {
    env["SPANK_PSKEL_LIMITED"] = bad;
    CAPTURE(bad);
    CHECK_FALSE(ticket_from_env(env).ok());
  }
}

TEST_CASE("MalformedEpilogEnvironmentIsAnError") {
  Env env = base_env();
  env["SPANK_PSKEL_PREDICT"] = "1";
  env["SLURM_JOB_ID"] = "12x";
  CHECK_FALSE(ticket_from_env(env).ok());
  env = base_env();
  env["SPANK_PSKEL_PREDICT"] = "1";
  env.erase("SLURM_JOB_UID");
  CHECK_FALSE(ticket_from_env(env).ok());
  env = base_env();
  env["SPANK_PSKEL_PREDICT"] = "1";
  env["SLURM_JOB_PARTITION"] = "a b";
  CHECK_FALSE(ticket_from_env(env).ok());
}

TEST_CASE("TicketsRoundTrip") {
  Env env = base_env();
  env["SPANK_PSKEL_PREDICT"] = "1";
  env["SPANK_PSKEL_LIMITED"] = "7:125.5:4";
  env["SPANK_PSKEL_APP_KEY"] = "lu";
  env["SPANK_PSKEL_SCRIPT_KEY"] = "script:0123456789abcdef";
  env["SPANK_PSKEL_JOB_ARGS"] = "-n 256 in%20put";
  Ticket t = *ticket_from_env(env).value();
  CHECK(t.job_args == "-n 256 in%20put");
  t.attempts = 2;
  auto back = parse_ticket(format_ticket(t), "q");
  REQUIRE_MESSAGE(back.ok(), back.error().line());
  CHECK(format_ticket(back.value()) == format_ticket(t));
  CHECK(back.value().job_args == t.job_args);
  env["SPANK_PSKEL_JOB_ARGS"] = "a\nb";  // not what job_submit writes: dropped
  CHECK(ticket_from_env(env).value()->job_args.empty());
  CHECK_FALSE(parse_ticket("JobId=x\n", "q").ok());
  CHECK_FALSE(parse_ticket("garbage", "q").ok());
}

TEST_CASE("ScontrolDurationsAndFields") {
  CHECK(parse_duration("00:00:05") == 5);
  CHECK(parse_duration("1-02:03:04") == 86400 + 7384);
  CHECK(parse_duration("03:04") == 184);
  CHECK_FALSE(parse_duration("UNLIMITED").has_value());
  CHECK_FALSE(parse_duration("").has_value());
  CHECK_FALSE(parse_duration("1:2:3:4").has_value());
  const std::string rec =
      "JobId=5 JobName=x JobState=COMPLETED Reason=None RunTime=00:01:02 TimeLimit=00:04:00 "
      "AdminComment=pskel: time limit 4 min TimeLimit=9 Partition=batch";
  CHECK(field(rec, "JobState") == "COMPLETED");
  CHECK(field(rec, "TimeLimit") == "00:04:00");  // the first field of that name
  CHECK(field(rec, "Limit") == "");               // not a suffix of another key
  CHECK(field(rec, "Partition") == "batch");
  const auto end = parse_job(rec);
  REQUIRE(end);
  CHECK(end->runtime_seconds == 62);
  CHECK_FALSE(parse_job("garbage").has_value());
}

TEST_CASE("PartitionsFromScontrol") {
  const auto parts = parse_partitions(
      "PartitionName=pskel AllowGroups=ALL Default=YES MaxTime=00:30:00 State=UP\n"
      "PartitionName=long Default=NO MaxTime=UNLIMITED\n"
      "PartitionName=week MaxTime=7-00:00:00\n\ngarbage\n");
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].name == "pskel");
  CHECK(parts[0].max_minutes == 30);
  CHECK(parts[0].is_default);
  CHECK(parts[1].max_minutes == exportfile::kUnlimited);
  CHECK(parts[2].max_minutes == 7 * 1440);
}

TEST_CASE("ShellQuotingAndScale") {
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(choose_scale(-1, 20) == 1);
  CHECK(choose_scale(5, 20) == 1);
  CHECK(choose_scale(600, 20) == 30);
}

TEST_CASE("TheCompleteTraceWithTheMostRanksIsPicked") {
  const std::string spool = scratch("spool");
  ::mkdir(spool.c_str(), 0755);
  const std::string job = spool + "/job.7";
  ::mkdir(job.c_str(), 0700);
  fake_trace(job + "/step.batch", 2);
  fake_trace(job + "/step.0", 4);
  fake_trace(job + "/step.1", 8, /*complete=*/false);
  auto t = pick_trace(spool, 7, ::geteuid(), 1 << 20);
  REQUIRE_MESSAGE(t.ok(), t.error().line());
  CHECK(t.value().step == "step.0");
  CHECK(t.value().ranks == 4);
  CHECK(t.value().mpi == "mpich");
  CHECK(t.value().bytes == 16);
  CHECK(pick_trace(spool, 7, ::geteuid(), 8).value().step == "step.batch");  // MaxTraceBytes
  CHECK_FALSE(pick_trace(spool, 7, ::geteuid(), 4).ok());
  CHECK_FALSE(pick_trace(spool, 8, ::geteuid(), 1 << 20).ok());
}

TEST_CASE("SymlinkedTraceDirectoriesAreNeverRead") {
  const std::string spool = scratch("spool-links");
  ::mkdir(spool.c_str(), 0755);
  const std::string victim = scratch("victim");
  fake_trace(victim, 2);
  // The step directory replaced by a symlink...
  ::mkdir((spool + "/job.1").c_str(), 0700);
  REQUIRE(::symlink(victim.c_str(), (spool + "/job.1/step.0").c_str()) == 0);
  auto t = pick_trace(spool, 1, ::geteuid(), 1 << 20);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().what.find("symbolic link") != std::string::npos);
  // ...or the job directory itself.
  REQUIRE(::symlink(victim.c_str(), (spool + "/job.2").c_str()) == 0);
  CHECK_FALSE(pick_trace(spool, 2, ::geteuid(), 1 << 20).ok());
  // ...or meta.json.
  ::mkdir((spool + "/job.3").c_str(), 0700);
  ::mkdir((spool + "/job.3/step.0").c_str(), 0700);
  REQUIRE(::symlink((victim + "/meta.json").c_str(), (spool + "/job.3/step.0/meta.json").c_str()) == 0);
  CHECK_FALSE(pick_trace(spool, 3, ::geteuid(), 1 << 20).ok());
}

TEST_CASE("TraceOfAnotherUserIsRefused") {
  const std::string spool = scratch("spool-owner");
  ::mkdir(spool.c_str(), 0755);
  ::mkdir((spool + "/job.1").c_str(), 0700);
  fake_trace(spool + "/job.1/step.0", 2);
  auto t = pick_trace(spool, 1, ::geteuid() + 1, 1 << 20);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().what.find("not the job's user") != std::string::npos);
}

TEST_CASE("OwnedDirectoriesAreCreatedOnceAndSymlinksRefused") {
  const std::string base = scratch("owned");
  ::mkdir(base.c_str(), 0755);
  UniqueFd parent(::open(base.c_str(), O_RDONLY | O_DIRECTORY));
  auto a = ensure_owned_dir(parent.get(), base, "job.1", ::geteuid(), ::getegid());
  REQUIRE(a.ok());
  struct stat st;
  REQUIRE(::stat((base + "/job.1").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(ensure_owned_dir(parent.get(), base, "job.1", ::geteuid(), ::getegid()).ok());
  REQUIRE(::symlink("/etc", (base + "/job.2").c_str()) == 0);
  auto link = ensure_owned_dir(parent.get(), base, "job.2", ::geteuid(), ::getegid());
  REQUIRE_FALSE(link.ok());
  CHECK(link.error().what.find("symbolic link") != std::string::npos);
  CHECK_FALSE(ensure_owned_dir(parent.get(), base, "../x", ::geteuid(), ::getegid()).ok());
  CHECK_FALSE(ensure_private_root("relative").ok());
  CHECK(ensure_private_root(base + "/a/b/c", ::geteuid()).ok());
  REQUIRE(::symlink((base + "/a").c_str(), (base + "/alink").c_str()) == 0);
  CHECK_FALSE(ensure_private_root(base + "/alink/b", ::geteuid()).ok());
  ::chmod((base + "/a").c_str(), 0777);
  CHECK_FALSE(ensure_private_root(base + "/a", ::geteuid()).ok());  // world-writable
}

// Issue 22: samples files were not counted against MaxTraceBytes.
TEST_CASE("SamplesFilesCountAgainstMaxTraceBytes") {
  const std::string spool = scratch("spool-samples");
  ::mkdir(spool.c_str(), 0755);
  ::mkdir((spool + "/job.3").c_str(), 0700);
  fake_trace(spool + "/job.3/step.0", 2);  // 8 bytes of rank files
  REQUIRE(pick_trace(spool, 3, ::geteuid(), 100).ok());
  write(spool + "/job.3/step.0/samples.0", std::string(200, 's'));
  const auto t = pick_trace(spool, 3, ::geteuid(), 100);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().line().find("MaxTraceBytes") != std::string::npos);
  CHECK(pick_trace(spool, 3, ::geteuid(), 1 << 20).value().bytes == 208);
}

// Issue 22: a meta.json claiming a million ranks made the worker stat a million rank files
// per step directory; now one pass over the files that exist sizes it, and finds the ranks
// missing (issue 17).
TEST_CASE("AStepClaimingAMillionRanksIsSizedByTheFilesItHolds") {
  const std::string spool = scratch("spool-million");
  ::mkdir(spool.c_str(), 0755);
  ::mkdir((spool + "/job.4").c_str(), 0700);
  fake_trace(spool + "/job.4/step.0", 2);
  write(spool + "/job.4/step.0/meta.json", R"({"complete": true, "ranks": 1000000, "mpi": "mpich"})");
  const auto t = pick_trace(spool, 4, ::geteuid(), 1 << 20);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().line().find("999998 of 1000000 ranks have no trace file") != std::string::npos);
}

// Issue 22: a step directory named with a newline wrote forged lines into root's worker log.
TEST_CASE("TextWithANewlineStaysOneLineOfTheWorkerLog") {
  const std::string dir = scratch("log");
  ::mkdir(dir.c_str(), 0755);
  const Log log(dir + "/worker.log");
  log.line("job 5: step.0\n2026-01-01T00:00:00Z pskel[1]: job 6: forged \xff line");
  std::ifstream in(dir + "/worker.log");
  std::string first, second;
  REQUIRE(std::getline(in, first));
  CHECK_FALSE(std::getline(in, second));
  CHECK(first.find("step.0\\n2026") != std::string::npos);
  CHECK(first.find("\xEF\xBF\xBD") != std::string::npos);  // the stray byte, replaced
}

// Issue 17: slurmd runs Epilog on every node of a job; only EpilogSlurmctld (once per job) queues.
TEST_CASE("OnlyTheControllerEpilogQueuesAJob") {
  Env env = base_env();
  CHECK(epilog_context(env) == EpilogContext::Controller);  // by hand, or slurmctld without it
  env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmctld";
  CHECK(epilog_context(env) == EpilogContext::Controller);
  env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd";
  CHECK(epilog_context(env) == EpilogContext::Node);
}

TEST_CASE("TheControllerEpilogHasNodesButNoTaskCount") {
  Env env = base_env();
  env.erase("SLURM_JOB_NTASKS");
  env["SLURM_JOB_NUM_NODES"] = "2";
  env["SPANK_PSKEL_PREDICT"] = "1";
  const Ticket t = *ticket_from_env(env).value();
  CHECK(t.ntasks == 0);  // the worker asks scontrol
  CHECK(t.nodes == 2);
  const auto back = parse_ticket(format_ticket(t), "q");
  REQUIRE(back.ok());
  CHECK(back.value().nodes == 2);
  // A ticket an older pskel queued has no Nodes line: one node.
  auto old = parse_ticket("JobId=5\nUid=1\nGid=1\nNtasks=2\nPredictionId=0\nPredictedSeconds=0\n"
                          "LimitMinutes=0\nAttempts=0\n", "q");
  REQUIRE(old.ok());
  CHECK(old.value().nodes == 1);
  std::string zero_nodes = format_ticket(t);
  zero_nodes.replace(zero_nodes.find("Nodes=2"), 7, "Nodes=0");
  CHECK_FALSE(parse_ticket(zero_nodes, "q").ok());
  const auto end = parse_job("JobId=5 JobState=COMPLETED RunTime=00:00:07 NumNodes=2 NumCPUs=4 NumTasks=4");
  REQUIRE(end);
  CHECK(end->ntasks == 4);
  CHECK(end->nodes == 2);
}

TEST_CASE("TheTracedLayoutComesFromMetaHosts") {
  const std::string spool = scratch("spool-hosts");
  ::mkdir(spool.c_str(), 0755);
  ::mkdir((spool + "/job.9").c_str(), 0700);
  fake_trace(spool + "/job.9/step.0", 4, true, {"node1", "node1", "node2", "node2"});
  auto t = pick_trace(spool, 9, ::geteuid(), 1 << 20);
  REQUIRE_MESSAGE(t.ok(), t.error().line());
  CHECK(t.value().hosts == 2);
  CHECK(t.value().ranks_per_host == 2);
  ::mkdir((spool + "/job.10").c_str(), 0700);
  fake_trace(spool + "/job.10/step.0", 3, true, {"node1", "node1", "node2"});
  CHECK(pick_trace(spool, 10, ::geteuid(), 1 << 20).value().ranks_per_host == 0);  // uneven
  ::mkdir((spool + "/job.11").c_str(), 0700);
  fake_trace(spool + "/job.11/step.0", 2);
  CHECK(pick_trace(spool, 11, ::geteuid(), 1 << 20).value().hosts == 1);  // no hosts: one
}

// A node-local spool: rank 0's node wrote meta.json, the other node's ranks are elsewhere.
TEST_CASE("MissingRanksAreNamedWithTheirHosts") {
  const std::string spool = scratch("spool-missing");
  ::mkdir(spool.c_str(), 0755);
  ::mkdir((spool + "/job.12").c_str(), 0700);
  fake_trace(spool + "/job.12/step.0", 4, true, {"node1", "node1", "node2", "node2"}, 2);
  auto t = pick_trace(spool, 12, ::geteuid(), 1 << 20);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().line().find("2 of 4 ranks") != std::string::npos);
  CHECK(t.error().line().find("ranks 2-3 on node2") != std::string::npos);
  CHECK(t.error().line().find("SpoolDir") != std::string::npos);
  // No job directory at all where the worker looks.
  auto none = pick_trace(spool, 13, ::geteuid(), 1 << 20);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().line().find("shared") != std::string::npos);
}

namespace {

// A node file holding a trace section (content "xxxx") for each of `ranks`.
void fake_node_file(const std::string& path, const std::vector<int>& ranks) {
  std::ofstream out(path, std::ios::binary);
  const trace::NodeFileHeader header = trace::make_node_file_header();
  out.write(reinterpret_cast<const char*>(&header), sizeof header);
  for (const int r : ranks) {
    const trace::SectionHeader section = trace::make_section_header(trace::SectionKind::trace, r, 4);
    out.write(reinterpret_cast<const char*>(&section), sizeof section);
    out << "xxxx";
  }
}

}  // namespace

TEST_CASE("RanksInNodeFilesArePresentAndAMissingNodeIsNamed") {
  const std::string spool = scratch("spool-node-files");
  ::mkdir(spool.c_str(), 0755);
  ::mkdir((spool + "/job.14").c_str(), 0700);
  const std::string step = spool + "/job.14/step.0";
  fake_trace(step, 4, true, {"node1", "node1", "node2", "node2"}, 0);
  fake_node_file(step + "/node.0.pskn", {0, 1});
  auto half = pick_trace(spool, 14, ::geteuid(), 1 << 20);
  REQUIRE_FALSE(half.ok());
  CHECK(half.error().line().find("ranks 2-3 on node2") != std::string::npos);

  fake_node_file(step + "/node.2.pskn", {2, 3});
  auto t = pick_trace(spool, 14, ::geteuid(), 1 << 20);
  REQUIRE_MESSAGE(t.ok(), t.error().line());
  CHECK(t.value().ranks == 4);
  CHECK(t.value().bytes == 2 * (sizeof(trace::NodeFileHeader) + 2 * (sizeof(trace::SectionHeader) + 4)));

  write(step + "/node.2.pskn", "this is not a node file at all");
  auto forged = pick_trace(spool, 14, ::geteuid(), 1 << 20);
  REQUIRE_FALSE(forged.ok());
  INFO(forged.error().line());
  CHECK(forged.error().line().find(step + "/node.2.pskn: not a pskel node file") != std::string::npos);
}

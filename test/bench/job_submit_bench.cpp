// job_submit_pskel.so in-process, as slurmctld calls it: the plugin is dlopen()ed into a
// program linked against Slurm's libslurmfull (which provides the allocator it uses), fed
// synthetic job_desc_msg_t built with slurm_init_job_desc_msg.
//
//   job_submit_bench [--check] [--entries N] [--calls N] PLUGIN.so
//
// --check: assertions on what the plugin does to jobs (a test, registered in test/meson.build,
// also run under valgrind's memcheck: an uninitialised byte reaching a job is an error there
// even when it happens to be printable).
// Otherwise: the latency benchmark (docs/design.md: <= 10 us per submission with 100,000 cached
// entries), printing microseconds per call for a job with a prediction and one without. The
// plugin's log line for a job whose limit it sets goes to this program's stderr (a file), through
// Slurm's own stderr logging: about 6 us of the first figure on a VM.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "export/app_key.h"
#include "export/export.h"
#include "export/job_args.h"
#include "util/crc32c.h"

extern "C" {
char* slurm_xstrdup(const char* str);
void slurm_xfree(void** item);
void* slurm_xcalloc(size_t count, size_t size, bool clear, bool try_, const char* file, int line,
                    const char* func);
}

namespace {

using SubmitFn = int (*)(job_desc_msg_t*, uint32_t, char**);
using ModifyFn = int (*)(job_desc_msg_t*, void*, uint32_t, char**);
using InitFn = int (*)();

struct Plugin {
  InitFn init, fini;
  SubmitFn submit;
  ModifyFn modify;
  const uint32_t* version;
  const char* type;
};

int failures = 0;

// Where the bench's own lines go. The plugin logs through libslurmfull onto stderr, a line per
// load and per bad export: main() sends that to a file and prints its line count, so that a
// run is a few lines of figures, not thousands of identical log lines.
FILE* g_report = nullptr;
FILE* report() { return g_report ? g_report : stderr; }

#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(report(), "FAILED line %d: %s\n", __LINE__, #cond);   \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

Plugin load(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(report(), "job_submit_bench: %s\n", dlerror());
    std::exit(1);
  }
  auto sym = [&](const char* name) {
    void* p = dlsym(h, name);
    if (!p) {
      std::fprintf(report(), "job_submit_bench: %s: no symbol %s\n", path, name);
      std::exit(1);
    }
    return p;
  };
  return Plugin{reinterpret_cast<InitFn>(sym("init")), reinterpret_cast<InitFn>(sym("fini")),
                reinterpret_cast<SubmitFn>(sym("job_submit")),
                reinterpret_cast<ModifyFn>(sym("job_modify")),
                static_cast<const uint32_t*>(sym("plugin_version")),
                static_cast<const char*>(sym("plugin_type"))};
}

// A job as sbatch sends it: a script, a partition, a task count, the user.
struct Job {
  job_desc_msg_t desc;
  char* err_msg = nullptr;
  explicit Job(const std::string& script, uint32_t uid, uint32_t ntasks, const char* partition,
               std::vector<std::string> spank_env = {}) {
    slurm_init_job_desc_msg(&desc);
    desc.script = slurm_xstrdup(script.c_str());
    desc.user_id = uid;
    desc.num_tasks = ntasks;
    desc.partition = partition ? slurm_xstrdup(partition) : nullptr;
    desc.name = slurm_xstrdup("job.sh");
    if (!spank_env.empty()) {
      // The plugin grows this array with Slurm's allocator: it must come from there too.
      desc.spank_job_env = static_cast<char**>(slurm_xcalloc(spank_env.size() + 1, sizeof(char*),
                                                             true, false, __FILE__, __LINE__, __func__));
      for (size_t i = 0; i < spank_env.size(); ++i)
        desc.spank_job_env[i] = slurm_xstrdup(spank_env[i].c_str());
      desc.spank_job_env_size = static_cast<uint32_t>(spank_env.size());
    }
  }
  ~Job() {
    slurm_xfree(reinterpret_cast<void**>(&desc.script));
    slurm_xfree(reinterpret_cast<void**>(&desc.partition));
    slurm_xfree(reinterpret_cast<void**>(&desc.name));
    slurm_xfree(reinterpret_cast<void**>(&desc.admin_comment));
    slurm_xfree(reinterpret_cast<void**>(&err_msg));
    for (uint32_t i = 0; i < desc.spank_job_env_size; ++i)
      slurm_xfree(reinterpret_cast<void**>(&desc.spank_job_env[i]));
    slurm_xfree(reinterpret_cast<void**>(&desc.spank_job_env));
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  std::string env(const char* name) const {
    const std::string prefix = std::string(name) + "=";
    for (uint32_t i = 0; i < desc.spank_job_env_size; ++i)
      if (desc.spank_job_env[i] && std::strncmp(desc.spank_job_env[i], prefix.c_str(), prefix.size()) == 0)
        return desc.spank_job_env[i] + prefix.size();
    return "";
  }
};

std::string script_of(int i) {
  std::string s = "#!/bin/bash\n#SBATCH --ntasks=4\n";
  while (s.size() < 2048) s += "srun --mpi=pmi2 ./application-" + std::to_string(i) + " -i 100\n";
  return s;
}

std::string setup(const std::string& dir, size_t entries, const char* policy) {
  ::mkdir(dir.c_str(), 0700);
  const std::string conf = dir + "/pskel.conf";
  // No guard in this process: GuardRequired=no, or the plugin would set no limits.
  std::ofstream(conf) << "StateDir=" << dir << "\nPolicy=" << policy << "\nMargin=0.2\nPad=60\nGuardRequired=no\n";
  pskel::exportfile::Data data;
  data.partitions = {{"batch", 1440, true}, {"short", 5, false}};
  for (size_t i = 0; i < entries; ++i) {
    const std::string key = pskel::exportfile::app_key("", script_of(static_cast<int>(i)).c_str(), nullptr);
    data.entries.push_back({static_cast<uint32_t>(1000 + i % 100), 4, 1, "batch", key,
                            100.0 + static_cast<double>(i % 1000), static_cast<int64_t>(i + 1)});
  }
  data.entries.push_back({1000, 4, 1, "short", pskel::exportfile::app_key("", script_of(0).c_str(), nullptr),
                          3600, 999999});
  data.entries.push_back({1000, 1, 1, "batch", "named", 30, 888888});
  // One application traced on 1, 2 and 4 nodes (4 tasks each): the 2-node run is the longest.
  for (const auto& [nodes, seconds, id] : {std::tuple{1u, 100.0, 777001}, std::tuple{2u, 600.0, 777002},
                                           std::tuple{4u, 50.0, 777004}})
    data.entries.push_back({1000, 4, nodes, "batch", "multi", seconds, id});
  if (!pskel::exportfile::write_atomic(dir + "/predictions.export", data).ok()) std::exit(1);
  ::setenv("PSKEL_CONF", conf.c_str(), 1);
  return conf;
}

void write_conf(const std::string& dir, const char* policy, double margin, unsigned pad) {
  ::mkdir(dir.c_str(), 0700);
  const std::string conf = dir + "/pskel.conf";
  std::ofstream(conf) << "StateDir=" << dir << "\nPolicy=" << policy << "\nMargin=" << margin
                      << "\nPad=" << pad << "\nGuardRequired=no\n";
  ::setenv("PSKEL_CONF", conf.c_str(), 1);
}

// An export of format `version` with these E lines exactly as given (numbers the writer would
// never write among them) and a correct end line: what the parser, not the writer, must stand
// up to, or what a worker of the previous version wrote.
void write_export_text(const std::string& dir, const std::vector<std::string>& entries,
                       int version = 2) {
  std::string text = "pskel-export " + std::to_string(version) + "\nP huge unlimited default\n";
  for (const std::string& e : entries) text += e + "\n";
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", pskel::crc32c(text.data(), text.size()));
  text += "end " + std::to_string(entries.size()) + " 1 " + crc + "\n";
  const std::string path = dir + "/predictions.export";
  std::ofstream(path + ".new", std::ios::binary | std::ios::trunc) << text;
  ::rename((path + ".new").c_str(), path.c_str());
}

// Every byte a printable ASCII character. Branches on each byte: memcheck reports any that is
// uninitialised.
bool printable(const char* s) {
  if (!s) return true;
  for (; *s; ++s)
    if (*s < ' ' || *s > '~') return false;
  return true;
}

bool whole_number(std::string_view s, double* out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// A job pskel left alone: no limit, no comment, no message, no PSKEL_LIMITED.
void expect_untouched(const Job& j) {
  EXPECT(j.desc.time_limit == NO_VAL);
  EXPECT(j.desc.admin_comment == nullptr);
  EXPECT(j.err_msg == nullptr);
  EXPECT(j.env("PSKEL_LIMITED").empty());
}

// A job pskel limited from `predicted` seconds (prediction `id`): the limit policy.h's formula
// gives, bounded by the one of the largest prediction the export may hold, and text that is
// printable and says the same numbers.
void expect_sane(const Job& j, double predicted, int64_t id, double margin, unsigned pad) {
  const double bound = pskel::exportfile::kMaxPredictedSeconds;
  const double most = std::ceil((bound * (1 + margin) + pad) / 60);
  const double expected = std::max(1.0, std::ceil((predicted * (1 + margin) + pad) / 60));
  const uint32_t limit = j.desc.time_limit;
  EXPECT(limit != NO_VAL && limit != INFINITE);
  EXPECT(limit >= 1 && limit <= most);
  EXPECT(limit == expected);
  EXPECT(printable(j.desc.admin_comment));
  EXPECT(printable(j.err_msg));
  const std::string limited = j.env("PSKEL_LIMITED");
  EXPECT(printable(limited.c_str()));
  // <prediction id>:<predicted seconds, one decimal>:<limit minutes>
  const size_t a = limited.find(':'), b = limited.rfind(':');
  EXPECT(a != std::string::npos && b != a);
  if (a == std::string::npos || b == a) return;
  const std::string shown = limited.substr(a + 1, b - a - 1);
  double id_back = 0, seconds_back = -1, limit_back = 0;
  EXPECT(whole_number(limited.substr(0, a), &id_back) && id_back == static_cast<double>(id));
  EXPECT(whole_number(shown, &seconds_back));
  EXPECT(shown.find_first_not_of("0123456789.") == std::string::npos);
  EXPECT(seconds_back >= 0 && seconds_back <= bound);
  EXPECT(std::fabs(seconds_back - predicted) <= 0.05 + 1e-9);
  EXPECT(whole_number(limited.substr(b + 1), &limit_back) && limit_back == limit);
  EXPECT(j.desc.admin_comment &&
         std::strstr(j.desc.admin_comment, ("time limit " + std::to_string(limit) + " min").c_str()));
  EXPECT(j.desc.admin_comment && std::strstr(j.desc.admin_comment, ("(" + shown + "s for ").c_str()));
  EXPECT(j.err_msg && std::strstr(j.err_msg, ("(" + shown + " s)").c_str()));
}

// Issue 22, finding 1: a cached prediction of 1e30 s overflowed the plugin's 32-byte number
// buffer, and 32 bytes of slurmctld's stack went into the job's AdminComment, its
// spank_job_env and the line sbatch prints. Every kind of number an export line can hold,
// through the plugin as slurmctld calls it: a job gets no limit, or a sane one with clean text.
void check_extreme_predictions(const Plugin& p, const std::string& dir) {
  // Written as the parser must read them; the first two columns are what they mean.
  const std::vector<std::pair<const char*, double>> accepted = {
      {"0", 0},
      {"5e-324", 5e-324},  // the smallest denormal
      {"2.2250738585072014e-308", 2.2250738585072014e-308},
      {"1e-05", 1e-05},
      {"0.05", 0.05},
      {"0.04", 0.04},
      {"125.25", 125.25},
      {"86400", 86400},
      {"31535999.999999996", 31535999.999999996},  // just below the bound
      {"31536000", 31536000},                      // the bound
      {"3.1536e+07", 3.1536e+07},
  };
  const char* const refused[] = {
      "1e30", "1e+30", "1e308", "1.7976931348623157e+308", "31536000.000000004", "31536001",
      "4294967296", "inf", "nan", "-0", "-1", "-1e30", "+5", "1e400", "0x10", "1e",
  };
  struct Conf {
    const char* policy;
    double margin;
    unsigned pad;
    uint32_t user_limit;
  };
  // pskel.conf's defaults, its largest Margin and Pad, and Policy=cap lowering an UNLIMITED.
  for (const Conf c : {Conf{"unset-only", 0.2, 60, NO_VAL}, Conf{"unset-only", 100, 7 * 86400, NO_VAL},
                       Conf{"cap", 0.2, 60, INFINITE}}) {
    write_conf(dir, c.policy, c.margin, c.pad);
    std::vector<std::string> lines;
    for (size_t i = 0; i < accepted.size(); ++i)
      lines.push_back("E 2000 1 1 huge " + std::string(accepted[i].first) + " " +
                      std::to_string(5000 + i) + " extreme-" + std::to_string(i));
    write_export_text(dir, lines);
    EXPECT(p.init() == SLURM_SUCCESS);  // loads the export before returning
    for (size_t i = 0; i < accepted.size(); ++i) {
      const std::string tag = "_SLURM_SPANK_OPTION_pskel_predict=extreme-" + std::to_string(i);
      Job j("#!/bin/sh\n", 2000, 1, "huge", {tag});
      j.desc.time_limit = c.user_limit;
      EXPECT(p.submit(&j.desc, 2000, &j.err_msg) == SLURM_SUCCESS);
      std::fprintf(report(), "%s: prediction %s s: limit %u min, PSKEL_LIMITED=%s\n", c.policy,
                   accepted[i].first, j.desc.time_limit, j.env("PSKEL_LIMITED").c_str());
      expect_sane(j, accepted[i].second, static_cast<int64_t>(5000 + i), c.margin, c.pad);
    }
    EXPECT(p.fini() == SLURM_SUCCESS);
  }
  // A file with any of these is refused as a whole (docs/export-format.md): nobody's job is
  // limited from it, not even from its good line.
  write_conf(dir, "unset-only", 0.2, 60);
  for (const char* bad : refused) {
    write_export_text(dir, {"E 2000 1 1 huge 100 6000 probe", "E 2000 1 1 huge " + std::string(bad) + " 6001 bad"});
    EXPECT(p.init() == SLURM_SUCCESS);
    for (const char* app : {"probe", "bad"}) {
      Job j("#!/bin/sh\n", 2000, 1, "huge", {std::string("_SLURM_SPANK_OPTION_pskel_predict=") + app});
      EXPECT(p.submit(&j.desc, 2000, &j.err_msg) == SLURM_SUCCESS);
      if (j.desc.time_limit != NO_VAL)
        std::fprintf(report(), "FAILED: export with %s accepted: job %s limited\n", bad, app);
      expect_untouched(j);
    }
    EXPECT(p.fini() == SLURM_SUCCESS);
  }
}

// A job of application "multi" (4 tasks, batch) asking for nodes as sbatch -N sends them.
struct NodeRequest {
  uint32_t min_nodes, max_nodes;
};

// Predictions are per node count: a job that names one gets that prediction or none; a job that
// names none, or a range, gets the longest (it may land on any layout).
void check_node_counts(const Plugin& p) {
  struct Case {
    NodeRequest asked;
    const char* limited;  // PSKEL_LIMITED, "" for a job left alone
    const char* layout;   // in AdminComment
  };
  const char* const longest = "4 tasks on 2 nodes (no single node count requested: the longest)";
  const Case cases[] = {
      {{1, 1}, "777001:100.0:3", "4 tasks on 1 node, partition batch"},      // -N 1
      {{2, 2}, "777002:600.0:13", "4 tasks on 2 nodes, partition batch"},    // -N 2
      {{4, NO_VAL}, "777004:50.0:2", "4 tasks on 4 nodes, partition batch"}, // a minimum only
      {{3, 3}, "", ""},                                                      // -N 3: none for 3
      {{NO_VAL, NO_VAL}, "777002:600.0:13", longest},                        // no -N
      {{1, 4}, "777002:600.0:13", longest},                                  // -N 1-4
  };
  for (const Case& c : cases) {
    Job j("#!/bin/sh\n", 1000, 4, "batch", {"_SLURM_SPANK_OPTION_pskel_predict=multi"});
    j.desc.min_nodes = c.asked.min_nodes;
    j.desc.max_nodes = c.asked.max_nodes;
    EXPECT(p.submit(&j.desc, 1000, &j.err_msg) == SLURM_SUCCESS);
    std::fprintf(report(), "nodes %u-%u: PSKEL_LIMITED=%s, %s\n", c.asked.min_nodes, c.asked.max_nodes,
                 j.env("PSKEL_LIMITED").c_str(), j.desc.admin_comment ? j.desc.admin_comment : "-");
    EXPECT(j.env("PSKEL_LIMITED") == c.limited);
    if (*c.limited) {
      EXPECT(j.desc.admin_comment && std::strstr(j.desc.admin_comment, c.layout));
    } else {
      expect_untouched(j);
    }
  }
}

// An export of version 1, as a worker before node counts wrote it: still read, every prediction
// for one node.
void check_version1_export(const Plugin& p, const std::string& dir) {
  write_conf(dir, "unset-only", 0.2, 60);
  write_export_text(dir, {"E 2000 4 huge 100 6100 old"}, 1);
  EXPECT(p.init() == SLURM_SUCCESS);
  for (const NodeRequest asked : {NodeRequest{NO_VAL, NO_VAL}, NodeRequest{1, 1}, NodeRequest{2, 2}}) {
    Job j("#!/bin/sh\n", 2000, 4, "huge", {"_SLURM_SPANK_OPTION_pskel_predict=old"});
    j.desc.min_nodes = asked.min_nodes;
    j.desc.max_nodes = asked.max_nodes;
    EXPECT(p.submit(&j.desc, 2000, &j.err_msg) == SLURM_SUCCESS);
    if (asked.min_nodes == 2) {
      expect_untouched(j);
    } else {
      EXPECT(j.env("PSKEL_LIMITED") == "6100:100.0:3");
      EXPECT(j.desc.admin_comment && std::strstr(j.desc.admin_comment, "4 tasks on 1 node"));
    }
  }
  EXPECT(p.fini() == SLURM_SUCCESS);
}

// Issue 18: a skeleton prediction holds for its traced arguments; other arguments of the same
// shape get the application's run-time model; arguments of another shape, nothing.
void check_models(const Plugin& p, const std::string& dir) {
  write_conf(dir, "unset-only", 0.2, 60);
  const char* traced[] = {"100"};
  pskel::exportfile::Data data;
  data.partitions = {{"batch", 1440, true}};
  data.entries.push_back({3000, 2, 1, "batch", "swept", 200, 41, 
                          pskel::exportfile::input_key(pskel::exportfile::encode_job_args(traced))});
  // seconds = 10 + 2 x iterations (the script's one number), interval up to x 1.25.
  pskel::exportfile::Model m;
  m.uid = 3000;
  m.app = "swept";
  const std::vector<std::string> shape = {"job", pskel::exportfile::kNumberSlot};
  m.shape_key = pskel::exportfile::shape_key(shape);
  m.model_id = 7;
  m.parameters = 2;
  m.low_ratio = 0.9;
  m.high_ratio = 1.25;
  m.groups = {{1, false, 10, {{2, {{1, 1, 0}}}}}};
  data.models = {m};
  EXPECT(pskel::exportfile::write_atomic(dir + "/predictions.export", data).ok());
  EXPECT(p.init() == SLURM_SUCCESS);
  struct Case {
    std::vector<const char*> args;
    const char* limited;  // PSKEL_LIMITED, "" for a job left alone
    const char* said;     // in AdminComment
  };
  const Case cases[] = {
      {{"100"}, "41:200.0:5", "by its skeleton"},       // the traced arguments
      {{"400"}, "-7:1012.5:22", "by its model"},        // (10 + 800) x 1.25
      {{"1e3"}, "-7:2512.5:52", "by its model"},        // numbers in any spelling
      {{"-n", "400"}, "", ""},                          // another shape
      {{"abc"}, "", ""},
  };
  for (const Case& c : cases) {
    Job j("#!/bin/sh\n", 3000, 2, "batch", {"_SLURM_SPANK_OPTION_pskel_predict=swept"});
    std::vector<char*> argv = {const_cast<char*>("job.sh")};
    for (const char* a : c.args) argv.push_back(const_cast<char*>(a));
    j.desc.argv = argv.data();
    j.desc.argc = static_cast<uint32_t>(argv.size());
    EXPECT(p.submit(&j.desc, 3000, &j.err_msg) == SLURM_SUCCESS);
    std::fprintf(report(), "model: args %s: PSKEL_LIMITED=%s, %s\n", c.args[0],
                 j.env("PSKEL_LIMITED").c_str(), j.desc.admin_comment ? j.desc.admin_comment : "-");
    EXPECT(j.env("PSKEL_JOB_ARGS") == pskel::exportfile::encode_job_args(
                                          std::span<const char* const>(c.args.data(), c.args.size())));
    EXPECT(j.env("PSKEL_LIMITED") == c.limited);
    if (*c.limited) {
      EXPECT(j.desc.admin_comment && std::strstr(j.desc.admin_comment, c.said));
      EXPECT(printable(j.desc.admin_comment) && printable(j.err_msg));
    } else {
      expect_untouched(j);
    }
    j.desc.argv = nullptr;  // ours, not Slurm's to free
    j.desc.argc = 0;
  }
  EXPECT(p.fini() == SLURM_SUCCESS);
}

int check(const Plugin& p, const std::string& dir) {
  EXPECT(*p.version == SLURM_VERSION_NUMBER);
  EXPECT(std::strcmp(p.type, "job_submit/pskel") == 0);
  setup(dir, 100, "unset-only");
  EXPECT(p.init() == SLURM_SUCCESS);
  {  // a prediction (100 s), no --time: limit = ceil((100 x 1.2 + 60) / 60) = 3 minutes
    Job j(script_of(0), 1000, 4, "batch");
    EXPECT(p.submit(&j.desc, 1000, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.desc.time_limit == 3);
    EXPECT(j.desc.admin_comment && std::strstr(j.desc.admin_comment, "pskel: time limit 3 min"));
    EXPECT(j.err_msg && std::strstr(j.err_msg, "time limit set to 3 min"));
    EXPECT(j.env("PSKEL_LIMITED") == "1:100.0:3");
    EXPECT(j.env("PSKEL_APP_KEY").empty());  // not tagged
  }
  {  // the user's own --time is kept under unset-only, and nothing else is touched
    Job j(script_of(0), 1000, 4, "batch");
    j.desc.time_limit = 600;
    EXPECT(p.submit(&j.desc, 1000, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.desc.time_limit == 600);
    EXPECT(j.desc.admin_comment == nullptr);
    EXPECT(j.err_msg == nullptr);
    EXPECT(j.desc.spank_job_env_size == 0);
  }
  {  // unknown script, other user, other task count: untouched
    for (auto [uid, ntasks, script] : {std::tuple{1000u, 4u, std::string("#!/bin/sh\nnew\n")},
                                       std::tuple{1001u, 4u, script_of(0)},
                                       std::tuple{1000u, 8u, script_of(0)}}) {
      Job j(script, uid, ntasks, "batch");
      EXPECT(p.submit(&j.desc, uid, &j.err_msg) == SLURM_SUCCESS);
      EXPECT(j.desc.time_limit == NO_VAL);
      EXPECT(j.desc.admin_comment == nullptr);
    }
  }
  {  // no partition: the default one; the partition's MaxTime bounds the limit
    Job j(script_of(0), 1000, 4, nullptr);
    EXPECT(p.submit(&j.desc, 1000, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.desc.time_limit == 3);
    Job s(script_of(0), 1000, 4, "short");
    EXPECT(p.submit(&s.desc, 1000, &s.err_msg) == SLURM_SUCCESS);
    EXPECT(s.desc.time_limit == 5);
  }
  {  // --predict=named: keyed by the name, tagged with its key; the array grows by one
    Job j("#!/bin/sh\n", 1000, 1, "batch", {"_SLURM_SPANK_OPTION_pskel_predict=named", "PSKEL_PREDICT=1"});
    EXPECT(p.submit(&j.desc, 1000, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.env("PSKEL_APP_KEY") == "named");
    EXPECT(j.env("PSKEL_SCRIPT_KEY") == pskel::exportfile::app_key("", "#!/bin/sh\n", nullptr));
    EXPECT(j.desc.time_limit == 2);
    EXPECT(j.desc.spank_job_env_size == 5);  // + PSKEL_APP_KEY, PSKEL_SCRIPT_KEY, PSKEL_LIMITED
    EXPECT(j.desc.spank_job_env[5] == nullptr);
  }
  {  // a bare --predict arrives as "(null)": the script is the key; a forged key is replaced
    Job j(script_of(3), 1003, 4, "batch",
          {"_SLURM_SPANK_OPTION_pskel_predict=(null)", "PSKEL_APP_KEY=forged"});
    EXPECT(p.submit(&j.desc, 1003, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.env("PSKEL_APP_KEY") == pskel::exportfile::app_key("", script_of(3).c_str(), nullptr));
    EXPECT(j.env("PSKEL_SCRIPT_KEY").empty());  // the key is the script's already
    EXPECT(j.desc.spank_job_env_size == 3);  // + PSKEL_LIMITED
  }
  {  // a PSKEL_LIMITED the user sent is dropped: only a limit pskel set has an outcome recorded
    Job j(script_of(9), 4242, 4, "batch", {"PSKEL_LIMITED=1:1.0:1", "OTHER=x", "PSKEL_LIMITED=2:2.0:2"});
    EXPECT(p.submit(&j.desc, 4242, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.desc.time_limit == NO_VAL);
    EXPECT(j.env("PSKEL_LIMITED").empty());
    EXPECT(j.env("OTHER") == "x");
    EXPECT(j.desc.spank_job_env_size == 1);
  }
  check_node_counts(p);
  {  // job_modify leaves everything alone
    Job j(script_of(0), 1000, 4, "batch");
    EXPECT(p.modify(&j.desc, nullptr, 1000, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.desc.time_limit == NO_VAL);
  }
  {  // a corrupt export is ignored: the cached predictions stay in use
    std::ofstream(dir + "/predictions.export.new") << "pskel-export 2\nE 1000 4 1 batch 1 1 x\n";
    ::rename((dir + "/predictions.export.new").c_str(), (dir + "/predictions.export").c_str());
    for (int i = 0; i < 5; ++i) {
      Job j(script_of(0), 1000, 4, "batch");
      EXPECT(p.submit(&j.desc, 1000, &j.err_msg) == SLURM_SUCCESS);
      EXPECT(j.desc.time_limit == 3);
      ::usleep(100000);
    }
  }
  EXPECT(p.fini() == SLURM_SUCCESS);
  setup(dir, 10, "off");
  EXPECT(p.init() == SLURM_SUCCESS);
  {
    Job j(script_of(0), 1000, 4, "batch");
    EXPECT(p.submit(&j.desc, 1000, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.desc.time_limit == NO_VAL);
  }
  EXPECT(p.fini() == SLURM_SUCCESS);
  setup(dir, 10, "cap");
  EXPECT(p.init() == SLURM_SUCCESS);
  {
    Job j(script_of(0), 1000, 4, "batch");
    j.desc.time_limit = 600;
    EXPECT(p.submit(&j.desc, 1000, &j.err_msg) == SLURM_SUCCESS);
    EXPECT(j.desc.time_limit == 3);
  }
  EXPECT(p.fini() == SLURM_SUCCESS);
  check_extreme_predictions(p, dir);
  check_version1_export(p, dir);
  check_models(p, dir);
  std::printf("job_submit plugin checks: %s (%d failed)\n", failures ? "FAILED" : "ok", failures);
  return failures ? 1 : 0;
}

double time_calls(const Plugin& p, const std::string& script, uint32_t uid, int calls) {
  Job j(script, uid, 4, "batch");
  double total_us = 0;
  for (int i = 0; i < calls; ++i) {
    j.desc.time_limit = NO_VAL;
    const auto t0 = std::chrono::steady_clock::now();
    p.submit(&j.desc, uid, &j.err_msg);
    const auto t1 = std::chrono::steady_clock::now();
    total_us += std::chrono::duration<double, std::micro>(t1 - t0).count();
    // What slurmctld would free afterwards.
    slurm_xfree(reinterpret_cast<void**>(&j.desc.admin_comment));
    slurm_xfree(reinterpret_cast<void**>(&j.err_msg));
  }
  return total_us / calls;
}

int bench(const Plugin& p, const std::string& dir, size_t entries, int calls) {
  setup(dir, entries, "unset-only");
  const auto t0 = std::chrono::steady_clock::now();
  p.init();
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const double hit = time_calls(p, script_of(static_cast<int>(entries / 2)),
                                static_cast<uint32_t>(1000 + (entries / 2) % 100), calls);
  const double miss = time_calls(p, "#!/bin/sh\nunknown\n", 4242, calls);
  p.fini();
  std::printf("job_submit latency, %zu cached predictions, %d calls each (target <= 10 us)\n",
              entries, calls);
  std::printf("  %-44s %8.2f us/call\n", "job with a prediction (2 KiB script)", hit);
  std::printf("  %-44s %8.2f us/call\n", "job without one", miss);
  std::printf("  %-44s %8.1f ms (loader thread, not on the submit path)\n", "initial load of the export", load_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool do_check = false;
  size_t entries = 100000;
  int calls = 100000;
  const char* plugin = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check") do_check = true;
    else if (a == "--entries" && i + 1 < argc) entries = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--calls" && i + 1 < argc) calls = std::atoi(argv[++i]);
    else plugin = argv[i];
  }
  if (!plugin || calls <= 0) {
    std::fprintf(report(), "usage: job_submit_bench [--check] [--entries N] [--calls N] PLUGIN.so\n");
    return 2;
  }
  const std::string dir = "/tmp/pskel-job-submit-bench." + std::to_string(::getpid());
  const std::string log = dir + ".slurm.log";
  g_report = ::fdopen(::dup(2), "w");
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (!g_report || log_fd < 0 || ::dup2(log_fd, 2) < 0) return 1;
  ::close(log_fd);
  const Plugin p = load(plugin);
  const int rc = do_check ? check(p, dir) : bench(p, dir, entries, calls);
  std::fflush(stderr);
  std::ifstream in(log);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  std::fprintf(report(), "plugin log: %zu lines in %s%s\n", lines, log.c_str(),
               rc == 0 ? " (removed)" : " (kept)");
  std::fflush(report());
  std::system(("rm -rf '" + dir + "'").c_str());
  if (rc == 0) ::unlink(log.c_str());
  return rc;
}

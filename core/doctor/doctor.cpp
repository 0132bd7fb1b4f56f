#include "doctor.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "child/child.h"
#include "config/config.h"
#include "doctor/elf_symbol.h"
#include "doctor/slurm_files.h"
#include "guard/heartbeat.h"
#include "spank/args.h"
#include "store/store.h"
#include "util/text.h"

namespace pskel::doctor {
namespace {

constexpr const char* kJobSubmitPlugin = "job_submit_pskel.so";
constexpr const char* kSpankPlugin = "spank_pskel.so";
constexpr const char* kEpilogScript = "pskel-epilog";

class Report {
 public:
  void ok(const std::string& name, const std::string& detail) {
    checks_.push_back({name, Status::ok, one_line(detail), ""});
  }
  void fail(const std::string& name, const std::string& detail, const std::string& fix) {
    checks_.push_back({name, Status::fail, one_line(detail), one_line(fix)});
  }
  void skip(const std::string& name, const std::string& why) {
    checks_.push_back({name, Status::skip, one_line(why), ""});
  }
  std::vector<Check> take() { return std::move(checks_); }

 private:
  std::vector<Check> checks_;
};

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The first `dir/name` that is a file, for dir in PluginDir's list, or "".
std::string find_plugin(const std::vector<std::string>& plugin_dirs, const std::string& name) {
  for (const std::string& dir : plugin_dirs)
    if (is_file(dir + "/" + name)) return dir + "/" + name;
  return "";
}

// "22.05.8" from `scontrol --version` ("slurm-wlm 22.05.8", "slurm 22.05.8"), as a
// SLURM_VERSION_NUMBER.
std::optional<uint32_t> parse_version(const std::string& text) {
  const size_t space = text.find_last_of(' ');
  const std::string word = text.substr(space == std::string::npos ? 0 : space + 1);
  unsigned major = 0, minor = 0, micro = 0;
  if (std::sscanf(word.c_str(), "%u.%u.%u", &major, &minor, &micro) != 3 || major > 255 ||
      minor > 255 || micro > 255)
    return std::nullopt;
  return slurm_version_number(major, minor, micro);
}

std::optional<uint32_t> check_slurm_version(Report& r, const std::string& scontrol,
                                            const std::string& slurm_conf) {
  child::Options options;
  options.timeout_seconds = 30;
  options.search_path = scontrol.find('/') == std::string::npos;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).substr(0, 11) != "SLURM_CONF=") env.emplace_back(*e);
  env.push_back("SLURM_CONF=" + slurm_conf);
  options.env = env;
  const child::Result run = child::run({scontrol, "--version"}, options);
  const std::string out = run.out.substr(0, run.out.find('\n'));
  const auto version = run.exit_code == 0 ? parse_version(out) : std::nullopt;
  if (!version) {
    r.fail("Slurm version", scontrol + " --version: " + (run.exit_code == 0 ? out : run.failure()),
           "set Scontrol in pskel.conf to this node's scontrol");
    return std::nullopt;
  }
  r.ok("Slurm version", "Slurm " + slurm_version_text(*version) + " (" + scontrol + ")");
  return version;
}

// A plugin's file and the Slurm version it was built for against the one that runs here:
// Slurm loads a plugin only when its plugin_version is SLURM_VERSION_NUMBER exactly.
void check_plugin(Report& r, const std::string& name, const std::string& path,
                  std::optional<uint32_t> slurm_version) {
  auto built_for = read_u32_symbol(path, "plugin_version");
  if (!built_for) {
    r.fail(name, built_for.error().line(), "install the slurm-pskel-plugins package again");
    return;
  }
  const std::string built = slurm_version_text(built_for.value());
  if (slurm_version && *slurm_version != built_for.value()) {
    r.fail(name,
           path + " is built for Slurm " + built + ", this node runs " +
               slurm_version_text(*slurm_version) + ": Slurm will not load it",
           "rebuild pskel against Slurm " + slurm_version_text(*slurm_version) +
               "'s headers (libslurm-dev) and install its plugins");
    return;
  }
  r.ok(name, path + ", built for Slurm " + built);
}

bool is_controller(const SlurmConf& slurm, const std::string& hostname) {
  const std::string short_name = hostname.substr(0, hostname.find('.'));
  std::vector<std::string> hosts = slurm.all("SlurmctldHost");
  for (const std::string& legacy : slurm.all("ControlMachine")) hosts.push_back(legacy);
  for (const std::string& host : hosts) {
    const std::string name = host.substr(0, host.find('('));  // "name(address)"
    if (name.empty()) continue;
    if (name == hostname || name == short_name || name.substr(0, name.find('.')) == short_name)
      return true;
  }
  return false;
}

// A directory root trusts: root's, a directory itself (not a link), no write for group or others.
void check_root_directory(Report& r, const std::string& name, const std::string& path,
                          const std::string& purpose) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    r.fail(name, path + ": " + std::strerror(errno),
           "install -d -o root -g root -m 0755 " + path + " (" + purpose + ")");
    return;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
  if (!S_ISDIR(st.st_mode)) {
    r.fail(name, path + " is not a directory", "make " + path + " a directory of root, mode 0755");
  } else if (st.st_uid != 0 || (st.st_mode & 022) != 0) {
    r.fail(name,
           path + " is owned by uid " + std::to_string(st.st_uid) + ", mode " + mode +
               ": others could replace what root reads or writes there",
           "chown root:root " + path + " && chmod go-w " + path);
  } else {
    r.ok(name, path + ", root's, mode " + mode);
  }
}

void check_epilog(Report& r, const SlurmConf& slurm) {
  for (const std::string& epilog : config::split_list(slurm.get("Epilog")))
    if (std::filesystem::path(epilog).filename() == kEpilogScript) {
      r.fail("EpilogSlurmctld", "Epilog=" + epilog + " runs pskel's epilog on every node",
             "move it to EpilogSlurmctld= in " + slurm.path + " (once per job, on the controller)");
      return;
    }
  const std::string epilog = slurm.get("EpilogSlurmctld");
  if (epilog.empty()) {
    r.fail("EpilogSlurmctld", "not set in " + slurm.path + ": traced jobs are never predicted",
           "EpilogSlurmctld=<libexecdir>/" + std::string(kEpilogScript) + " in " + slurm.path +
               " (see slurm.conf.pskel)");
    return;
  }
  if (::access(epilog.c_str(), X_OK) != 0) {
    r.fail("EpilogSlurmctld", epilog + ": " + std::strerror(errno),
           "install pskel's epilog there, or point EpilogSlurmctld at it");
    return;
  }
  if (std::filesystem::path(epilog).filename() != kEpilogScript) {
    r.ok("EpilogSlurmctld",
         epilog + " (not pskel's own script: it must run " + std::string(kEpilogScript) + ")");
    return;
  }
  r.ok("EpilogSlurmctld", epilog);
}

void check_queue(Report& r, const SlurmConf& slurm, const std::string& state_dir) {
  const std::string slurm_user = slurm.get("SlurmUser", "root");
  const std::string queue = state_dir + "/queue";
  if (slurm_user == "root") {
    r.ok("queue", "SlurmUser=root: the epilog starts the worker itself");
    return;
  }
  const passwd* pw = ::getpwnam(slurm_user.c_str());
  struct stat st;
  const std::string fix = "install -d -o " + slurm_user + " -m 0700 " + queue;
  if (pw == nullptr) {
    r.fail("queue", "SlurmUser " + slurm_user + " is not a user of this node", "add the user");
  } else if (::lstat(queue.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    r.fail("queue", queue + " is missing: the epilog (as " + slurm_user + ") cannot hand jobs on",
           fix);
  } else if (st.st_uid != pw->pw_uid || (st.st_mode & 077) != 0) {
    r.fail("queue", queue + " must be " + slurm_user + "'s, mode 0700", fix);
  } else {
    r.ok("queue", queue + ", " + slurm_user + "'s, mode 0700");
  }
}

void check_store(Report& r, const std::string& database) {
  struct stat st;
  if (::stat(database.c_str(), &st) != 0 && errno == ENOENT) {
    r.skip("store", database + " not created yet (the worker creates it for the first traced job)");
    return;
  }
  auto store = store::Store::open(database, store::Access::ReadOnly);
  if (!store) {
    r.fail("store", store.error().line(), "see pskel db list; restore the store from a backup");
    return;
  }
  r.ok("store", database + ", readable");
}

void check_guard(Report& r, const config::Config& conf, std::time_t now) {
  const guard::Heartbeat beat = guard::read_heartbeat(conf.heartbeat_file, now);
  const std::string what = guard::describe(beat, conf.heartbeat_file);
  if (beat.alive) {
    r.ok("guard", what);
    return;
  }
  r.fail("guard", what + (conf.guard_required ? ": job_submit sets no limits" : ""),
         "systemctl enable --now pskel-guard (on the controller)");
}

// Whether the shared library `soname` is on this node (the dynamic loader finds it).
bool has_library(const char* soname) {
  void* handle = ::dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

void check_mpi(Report& r, const config::Config& conf) {
  struct Flavour {
    const char* name;
    const char* soname;
    std::string tracer;
    const char* conf_key;
  };
  const Flavour flavours[] = {{"MPICH", "libmpich.so.12", conf.tracer_mpich, "TracerMpich"},
                              {"Open MPI", "libmpi.so.40", conf.tracer_openmpi, "TracerOpenmpi"}};
  int present = 0;
  for (const Flavour& f : flavours) {
    const std::string name = std::string("MPI: ") + f.name;
    if (!has_library(f.soname)) {
      r.skip(name, std::string(f.soname) + " is not on this node");
      continue;
    }
    ++present;
    if (is_file(f.tracer))
      r.ok(name, std::string(f.soname) + " and " + f.tracer);
    else
      r.fail(name, std::string(f.soname) + " is here, its tracer " + f.tracer + " is not",
             std::string("install the pskel package, or set ") + f.conf_key + " in pskel.conf");
  }
  if (present == 0)
    r.fail("MPI", "neither MPICH nor Open MPI is on this node: no job here can be traced",
           "install libmpich12 or libopenmpi3");
}

}  // namespace

const char* status_name(Status status) {
  switch (status) {
    case Status::ok:
      return "ok";
    case Status::fail:
      return "FAIL";
    case Status::skip:
      return "skip";
  }
  return "?";
}

std::string default_slurm_conf() {
  const char* env = std::getenv("SLURM_CONF");
  return env != nullptr && *env != '\0' ? env : PSKEL_SLURM_DEFAULT_CONF;
}

std::vector<Check> run_doctor(const Options& o) {
  Report r;
  auto slurm_loaded = load_slurm_conf(o.slurm_conf);
  if (!slurm_loaded) {
    r.fail("slurm.conf", slurm_loaded.error().line(),
           "set SLURM_CONF to the slurm.conf the Slurm daemons read");
    return r.take();
  }
  const SlurmConf& slurm = slurm_loaded.value();
  r.ok("slurm.conf", slurm.path);
  const std::string conf_dir = slurm.dir();
  std::vector<std::string> plugin_dirs = config::split_list(slurm.get("PluginDir"), ':');
  if (plugin_dirs.empty()) plugin_dirs = {PSKEL_SLURM_PLUGIN_DIR};

  // plugstack.conf: the SPANK plugin's line, whose arguments may name pskel.conf and override it.
  const std::string plugstack = slurm.get("PlugStackConfig", conf_dir + "/plugstack.conf");
  std::optional<PlugstackLine> spank_line;
  spank::PlugstackArgs spank_args;
  if (auto lines = load_plugstack(plugstack); !lines) {
    r.fail("plugstack", lines.error().line(), "fix " + plugstack + " (PlugStackConfig)");
  } else {
    for (const PlugstackLine& line : lines.value())
      if (std::filesystem::path(line.plugin).filename() == kSpankPlugin) spank_line = line;
    if (!spank_line) {
      r.fail("plugstack",
             "no line for " + std::string(kSpankPlugin) + " in " + plugstack +
                 " or the files it includes: sbatch has no --predict",
             "optional " + plugin_dirs.front() + "/" + kSpankPlugin + " in " + conf_dir +
                 "/plugstack.conf.d/pskel.conf (include it from " + plugstack + ")");
    } else if (auto args = spank::parse_plugstack_args(spank_line->args); !args) {
      r.fail("plugstack", spank_line->origin + ": " + args.error().line(),
             "fix the arguments of that line (docs/slurm.md)");
      spank_line.reset();
    } else {
      spank_args = args.value();
      r.ok("plugstack", spank_line->origin + ": " +
                            (spank_line->required ? "required " : "optional ") +
                            spank_line->plugin);
    }
  }

  const std::string pskel_conf_path = !o.pskel_conf.empty()      ? o.pskel_conf
                                      : !spank_args.conf.empty() ? spank_args.conf
                                                                 : config::default_config_path();
  auto loaded = config::load_config(pskel_conf_path);
  if (!loaded) {
    r.fail("pskel.conf", loaded.error().line(), "install pskel.conf there, or fix the line named");
    return r.take();
  }
  const config::Config conf = spank::apply_overrides(loaded.value(), spank_args);
  r.ok("pskel.conf", pskel_conf_path);

  const std::optional<uint32_t> version = check_slurm_version(r, conf.scontrol, slurm.path);
  if (spank_line) {
    const std::string path = spank_line->plugin.starts_with('/')
                                 ? spank_line->plugin
                                 : find_plugin(plugin_dirs, spank_line->plugin);
    if (path.empty() || !is_file(path))
      r.fail(
          "SPANK plugin",
          (path.empty() ? spank_line->plugin : path) + " is missing (" + spank_line->origin + ")",
          "install the slurm-pskel-plugins package on every node");
    else
      check_plugin(r, "SPANK plugin", path, version);
  }
  check_root_directory(r, "SpoolDir", conf.spool_dir, "traced jobs' directories");

  const bool controller = is_controller(slurm, o.hostname);
  if (!controller) {
    const std::string why = "not the controller (SlurmctldHost is not " + o.hostname + ")";
    for (const char* name : {"job_submit plugin", "JobSubmitPlugins", "EpilogSlurmctld", "StateDir",
                             "queue", "store", "guard"})
      r.skip(name, why);
  } else {
    const std::string job_submit = find_plugin(plugin_dirs, kJobSubmitPlugin);
    if (job_submit.empty())
      r.fail("job_submit plugin",
             std::string(kJobSubmitPlugin) + " is not in PluginDir (" +
                 slurm.get("PluginDir", PSKEL_SLURM_PLUGIN_DIR) + ")",
             "install the slurm-pskel-plugins package, or set PluginDir");
    else
      check_plugin(r, "job_submit plugin", job_submit, version);
    bool listed = false;
    for (const std::string& plugin : config::split_list(slurm.get("JobSubmitPlugins")))
      listed |= plugin == "pskel" || plugin == "job_submit/pskel";
    if (listed)
      r.ok("JobSubmitPlugins", "JobSubmitPlugins=" + slurm.get("JobSubmitPlugins"));
    else
      r.fail("JobSubmitPlugins",
             "pskel is not in JobSubmitPlugins (" + slurm.get("JobSubmitPlugins", "unset") +
                 "): no job gets a predicted limit",
             "JobSubmitPlugins=pskel in " + slurm.path + " (or add ,pskel to the list)");
    check_epilog(r, slurm);
    check_root_directory(r, "StateDir", conf.state_dir, "the store and the worker's queue");
    check_queue(r, slurm, conf.state_dir);
    check_store(r, conf.database);
    check_guard(r, conf, o.now);
  }
  check_mpi(r, conf);
  return r.take();
}

}  // namespace pskel::doctor

// Slurm's own configuration files, read the way its daemons read them, for `pskel doctor`:
// slurm.conf's top-level `Key=Value` lines (keys case-insensitive, `Include` followed) and
// plugstack.conf's plugin lines (`required|optional PLUGIN ARGS...`, `include GLOB`). The parsers
// are pure functions over text; the loaders read the files and follow their includes.
// Thread safety: reentrant.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pskel::doctor {

struct SlurmConf {
  std::string path;
  std::map<std::string, std::vector<std::string>> values;  // lower-case key -> values, in order

  // The value of `key` (any case) that counts (the last), or `fallback` when none is set.
  std::string get(std::string_view key, const std::string& fallback = "") const;
  // Every value of a key that may be given more than once (SlurmctldHost).
  std::vector<std::string> all(std::string_view key) const;
  // The directory slurm.conf is in, which Slurm's other files default to.
  std::string dir() const;
};

// Parses slurm.conf text (`origin` names it in errors) into `conf`. Lines that describe a node,
// a partition or the like (NodeName=, PartitionName=, ...) are records, not settings: skipped.
// `Include` lines are returned in `includes` (as written), to be read by the caller.
Result<bool> parse_slurm_conf(std::string_view text, const std::string& origin, SlurmConf& conf,
                              std::vector<std::string>* includes);

// Reads slurm.conf and the files it includes (relative names are relative to its directory;
// at most 16 levels deep).
Result<SlurmConf> load_slurm_conf(const std::string& path);

struct PlugstackLine {
  bool required = false;          // "required" (a failing plugin fails the job) or "optional"
  std::string plugin;             // as written: absolute, or relative to PluginDir
  std::vector<std::string> args;  // what follows the plugin
  std::string origin;             // file:line
};

// Parses plugstack.conf text: plugin lines, and `include GLOB` lines into `includes`.
Result<std::vector<PlugstackLine>> parse_plugstack(std::string_view text, const std::string& origin,
                                                   std::vector<std::string>* includes);

// Reads plugstack.conf and every file its includes match (glob; relative to its directory).
Result<std::vector<PlugstackLine>> load_plugstack(const std::string& path);

}  // namespace pskel::doctor

#include "runs.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "util/file_read.h"

namespace pskel::model {
namespace {

// A counter file holds a few thousand counters at most; 64 MB is far beyond any real one.
constexpr uint64_t kMaxCounterFileBytes = 64ull << 20;
constexpr int kMaxRanks = 1 << 20;

struct RankFile {
  int rank = -1;
  int ntasks = 0;
  double seconds = 0;
  std::vector<std::string> command;
  std::map<std::string, double> counters;
};

Result<RankFile> read_rank_file(const std::string& path) {
  auto text = read_regular_file(path, kMaxCounterFileBytes);
  if (!text.ok()) return text.error();
  const nlohmann::json j = nlohmann::json::parse(text.value(), nullptr, false);
  auto bad = [&](const std::string& what) { return Error{path, what}; };
  if (j.is_discarded() || !j.is_object()) return bad("not JSON (a counter file is one object)");
  if (j.value("format", "") != "pskel-counters")
    return bad("not a pskel counter file (\"format\" is not \"pskel-counters\")");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != 1)
    return bad("counter file version is not 1");
  RankFile file;
  const auto& rank = j["rank"];
  const auto& ntasks = j["ntasks"];
  const auto& seconds = j["wall_seconds"];
  const auto& command = j["command"];
  const auto& counters = j["counters"];
  if (!rank.is_number_integer() || !ntasks.is_number_integer() || ntasks < 1 ||
      ntasks > kMaxRanks || rank < 0 || rank >= ntasks)
    return bad("\"rank\" and \"ntasks\" must be integers with 0 <= rank < ntasks");
  if (!seconds.is_number() || !(seconds.get<double>() > 0) ||
      !std::isfinite(seconds.get<double>()))
    return bad("\"wall_seconds\" must be a number above zero");
  if (!command.is_array() || command.empty())
    return bad("\"command\" must be a non-empty list of strings");
  for (const auto& word : command) {
    if (!word.is_string()) return bad("\"command\" must be a non-empty list of strings");
    file.command.push_back(word.get<std::string>());
  }
  if (!counters.is_object()) return bad("\"counters\" must be an object of numbers");
  for (const auto& [key, value] : counters.items()) {
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
      return bad("counter \"" + key + "\" is not a count");
    file.counters[key] = value.get<double>();
  }
  file.rank = rank.get<int>();
  file.ntasks = ntasks.get<int>();
  file.seconds = seconds.get<double>();
  return file;
}

}  // namespace

Result<Run> read_counter_run(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), ::closedir);
  if (!listing) return Error{dir, std::strerror(errno)};
  std::set<int> ranks;
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string name = entry->d_name;
    constexpr std::string_view kPrefix = "rank.", kSuffix = ".json";
    if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
        !name.ends_with(kSuffix))
      continue;
    const std::string digits =
        name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    if (digits.empty() || digits.size() > 7 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    ranks.insert(std::atoi(digits.c_str()));
  }
  if (ranks.empty())
    return Error{dir, "no counter files (rank.N.json; was PSKEL_COUNTERS set for the run?)"};
  Run run;
  run.source = dir;
  std::map<std::string, double> sums;
  for (int expected = 0; expected < static_cast<int>(ranks.size()); ++expected) {
    const std::string path = dir + "/rank." + std::to_string(expected) + ".json";
    if (!ranks.count(expected)) return Error{path, "missing (the run's ranks are incomplete)"};
    auto file = read_rank_file(path);
    if (!file.ok()) return file.error();
    RankFile& f = file.value();
    if (f.rank != expected) return Error{path, "says it is rank " + std::to_string(f.rank)};
    if (expected == 0) {
      run.command = f.command;
      run.ntasks = f.ntasks;
    } else if (f.command != run.command || f.ntasks != run.ntasks) {
      return Error{path, "is of another run than rank.0.json (command or task count differ)"};
    }
    run.seconds = std::max(run.seconds, f.seconds);
    for (const auto& [key, value] : f.counters) sums[key] += value;
  }
  if (static_cast<int>(ranks.size()) != run.ntasks)
    return Error{dir, std::to_string(ranks.size()) + " counter files for a run of " +
                          std::to_string(run.ntasks) + " tasks"};
  for (const auto& [key, sum] : sums) run.features[key] = sum / run.ntasks;
  return run;
}

}  // namespace pskel::model

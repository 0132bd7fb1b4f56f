#include "slurm_files.h"

#include <glob.h>

#include <algorithm>
#include <array>

#include "config/config.h"
#include "util/file_read.h"
#include "util/text.h"

namespace pskel::doctor {
namespace {

using config::lower;

constexpr uint64_t kMaxConfBytes = 4 << 20;
constexpr int kMaxIncludeDepth = 16;

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// The lines of `text`, each with its number, comments (from '#') and blanks around removed.
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    line = trim(line);
    if (!line.empty() && !fn(line, line_no)) return;
  }
}

// The first word of `line` and what follows it (trimmed).
std::pair<std::string_view, std::string_view> first_word(std::string_view line) {
  const size_t end = line.find_first_of(" \t");
  if (end == std::string_view::npos) return {line, {}};
  return {line.substr(0, end), trim(line.substr(end))};
}

std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  while (!(text = trim(text)).empty()) {
    const auto [word, rest] = first_word(text);
    words.emplace_back(word);
    text = rest;
  }
  return words;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string relative_to(const std::string& dir, const std::string& name) {
  return !name.empty() && name[0] == '/' ? name : dir + "/" + name;
}

// Records of slurm.conf: a line whose first key is one of these describes a node, a partition
// or the like; its other keys are that record's, not settings of the cluster.
bool is_record_key(const std::string& key) {
  static constexpr std::array<std::string_view, 6> kRecords = {
      "nodename", "partitionname", "nodeset", "downnodes", "frontendname", "switchname"};
  return std::find(kRecords.begin(), kRecords.end(), key) != kRecords.end();
}

Result<bool> load_slurm_conf_into(const std::string& path, SlurmConf& conf, int depth) {
  if (depth > kMaxIncludeDepth) return Error{path, "includes nested too deep (a loop?)"};
  auto text = read_regular_file(path, kMaxConfBytes);
  if (!text) return text.error();
  std::vector<std::string> includes;
  auto parsed = parse_slurm_conf(text.value(), path, conf, &includes);
  if (!parsed) return parsed.error();
  for (const std::string& include : includes) {
    // Slurm expands nothing in an include but a leading relative name.
    auto loaded = load_slurm_conf_into(relative_to(directory_of(path), include), conf, depth + 1);
    if (!loaded) return loaded.error();
  }
  return true;
}

Result<bool> load_plugstack_into(const std::string& path, std::vector<PlugstackLine>& lines,
                                 int depth) {
  if (depth > kMaxIncludeDepth) return Error{path, "includes nested too deep (a loop?)"};
  auto text = read_regular_file(path, kMaxConfBytes);
  if (!text) return text.error();
  std::vector<std::string> includes;
  auto parsed = parse_plugstack(text.value(), path, &includes);
  if (!parsed) return parsed.error();
  lines.insert(lines.end(), parsed.value().begin(), parsed.value().end());
  for (const std::string& pattern : includes) {
    glob_t matches{};
    const std::string full = relative_to(directory_of(path), pattern);
    const int rc = ::glob(full.c_str(), 0, nullptr, &matches);
    std::vector<std::string> files;
    if (rc == 0)
      for (size_t i = 0; i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
    ::globfree(&matches);
    for (const std::string& file : files) {  // an include that matches nothing is no error
      auto loaded = load_plugstack_into(file, lines, depth + 1);
      if (!loaded) return loaded.error();
    }
  }
  return true;
}

}  // namespace

std::string SlurmConf::get(std::string_view key, const std::string& fallback) const {
  const auto it = values.find(lower(key));
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

std::string SlurmConf::dir() const { return directory_of(path); }

std::vector<std::string> SlurmConf::all(std::string_view key) const {
  const auto it = values.find(lower(key));
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

Result<bool> parse_slurm_conf(std::string_view text, const std::string& origin, SlurmConf& conf,
                              std::vector<std::string>* includes) {
  Error error;
  for_each_line(text, [&](std::string_view line, size_t line_no) {
    const auto [word, rest] = first_word(line);
    if (lower(word) == "include") {
      if (includes) includes->emplace_back(rest);
      return true;
    }
    auto pairs = config::split_pairs(line);
    if (!pairs) {
      error = Error{origin + ":" + std::to_string(line_no), pairs.error().what};
      return false;
    }
    if (pairs.value().empty() || is_record_key(lower(pairs.value().front().key))) return true;
    for (const config::Pair& p : pairs.value()) conf.values[lower(p.key)].push_back(p.value);
    return true;
  });
  if (!error.what.empty()) return error;
  return true;
}

Result<SlurmConf> load_slurm_conf(const std::string& path) {
  SlurmConf conf;
  conf.path = path;
  auto loaded = load_slurm_conf_into(path, conf, 0);
  if (!loaded) return loaded.error();
  return conf;
}

Result<std::vector<PlugstackLine>> parse_plugstack(std::string_view text, const std::string& origin,
                                                   std::vector<std::string>* includes) {
  std::vector<PlugstackLine> lines;
  Error error;
  for_each_line(text, [&](std::string_view line, size_t line_no) {
    const std::string where = origin + ":" + std::to_string(line_no);
    const auto [word, rest] = first_word(line);
    const std::string kind = lower(word);
    if (kind == "include") {
      if (includes) includes->emplace_back(rest);
      return true;
    }
    std::vector<std::string> words = words_of(rest);
    if ((kind != "required" && kind != "optional") || words.empty()) {
      error = Error{where,
                    "expected 'required PLUGIN ...', 'optional PLUGIN ...' or 'include "
                    "GLOB', got " +
                        one_line(line, 80)};
      return false;
    }
    PlugstackLine entry{kind == "required", words.front(), {}, where};
    entry.args.assign(words.begin() + 1, words.end());
    lines.push_back(std::move(entry));
    return true;
  });
  if (!error.what.empty()) return error;
  return lines;
}

Result<std::vector<PlugstackLine>> load_plugstack(const std::string& path) {
  std::vector<PlugstackLine> lines;
  auto loaded = load_plugstack_into(path, lines, 0);
  if (!loaded) return loaded.error();
  return lines;
}

}  // namespace pskel::doctor

// Fuzz target: the site configuration as the epilog, the worker, the store commands and both
// Slurm plugins read it: pskel.conf text (parse_config), spank_pskel.so's plugstack.conf
// arguments (parse_plugstack_args) and, third, a job's LD_PRELOAD, which the plugin edits as
// root; the parts of one input split by kFileSeparator.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "fuzz_support.h"
#include "spank/args.h"

namespace {

// Slurm hands a plugin its plugstack.conf line's words split at blanks.
std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    at = line.find_first_not_of(" \t\n", at);
    if (at == std::string_view::npos) return out;
    const size_t end = line.find_first_of(" \t\n", at);
    out.emplace_back(line.substr(at, end == std::string_view::npos ? end : end - at));
    at = end;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pskel;
  const auto parts = fuzz::split_files(fuzz::as_text({data, size}), 3);
  auto conf = config::parse_config(parts[0], "pskel.conf");
  if (conf) (void)config::policy_name(conf.value().policy);
  if (parts.size() < 2) return 0;
  auto args = spank::parse_plugstack_args(words(parts[1]));
  if (conf && args) (void)spank::apply_overrides(std::move(conf).value(), args.value());
  if (parts.size() < 3) return 0;
  (void)spank::with_tracer(parts[2], "/usr/lib/x86_64-linux-gnu/pskel/libpskel-trace-mpich.so");
  (void)spank::inherited_tracer(parts[2]);
  return 0;
}

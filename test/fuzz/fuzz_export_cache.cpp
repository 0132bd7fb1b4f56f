// Fuzz target: the prediction export as job_submit_pskel.so reads it inside slurmctld
// (exportfile::parse, then the Snapshot it looks predictions up in). A file that parses must
// also survive a format/parse round trip (a version-1 file comes back as version 2) and find
// every entry it holds, for its node count and for a job that names none, with a prediction
// at least as long.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "export/export.h"
#include "fuzz_support.h"
#include "jobsubmit/cache.h"

namespace {

using namespace pskel;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_export_cache: %s\n", what);
  std::abort();
}

// The text with the checksum of its last line, if that is an end line, recomputed: the
// fuzzer cannot forge a CRC-32C, and without this the record parser sees almost no mutations
// that get past the end line.
std::string with_fixed_checksum(std::string_view text) {
  constexpr size_t kHex = 8;
  if (text.size() < 2 || !text.ends_with('\n')) return "";
  const size_t nl = text.rfind('\n', text.size() - 2);
  const size_t start = nl == std::string_view::npos ? 0 : nl + 1;
  const std::string_view line = text.substr(start, text.size() - 1 - start);
  if (!line.starts_with("end ") || line.size() < 4 + kHex) return "";
  char crc[kHex + 1];
  std::snprintf(crc, sizeof crc, "%08x", crc32c(text.data(), start));
  std::string out(text.substr(0, text.size() - 1 - kHex));
  out += crc;
  out += '\n';
  return out;
}

void check(std::string_view text) {
  auto data = exportfile::parse(text, "predictions.export");
  if (!data) return;
  const std::string again = exportfile::format(data.value());
  auto reparsed = exportfile::parse(again, "formatted");
  if (!reparsed) fail(("parsed, formatted, then refused: " + reparsed.error().line()).c_str());
  if (exportfile::format(reparsed.value()) != again) fail("format/parse changes the export");

  const jobsubmit::Snapshot snapshot(data.value());
  for (const exportfile::Entry& e : data.value().entries) {
    const jobsubmit::Prediction* exact =
        snapshot.find(e.uid, e.app, e.ntasks, e.nodes, e.partition);
    if (!exact) fail("an entry is not found");
    if (exact->nodes != e.nodes) fail("an entry is found for another node count");
    const jobsubmit::Prediction* any =
        snapshot.find(e.uid, e.app, e.ntasks, jobsubmit::kAnyNodes, e.partition);
    if (!any) fail("an entry is not found for a job without a node count");
    if (any->predicted_seconds < exact->predicted_seconds)
      fail("a job without a node count gets a shorter prediction than one of the node counts");
  }
  for (const exportfile::Partition& p : data.value().partitions)
    (void)snapshot.partition_max(p.name);
  (void)snapshot.find(0, "app", 1, 1, "no-such-partition");
  (void)snapshot.partition_max(snapshot.default_partition());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text({data, size});
  check(text);
  if (const std::string fixed = with_fixed_checksum(text); !fixed.empty()) check(fixed);
  return 0;
}

// Fuzz target: a whole trace directory as `pskel info` (and every command after it) reads it:
// meta.json, rank files, samples files and a node file, one input holding them all, split by
// kFileSeparator. Then the summary and compute gaps built from what was read; and the samples
// parser directly, on every samples part.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "trace/gaps.h"
#include "trace/node_file.h"
#include "trace/reader.h"
#include "trace/samples.h"

namespace {

using namespace pskel;

// The input's files in order: meta.json, then per rank its rank file and its samples file, then
// a node file. Two ranks are enough to cover every check between files (run id, rank, world
// size, a rank in two places).
constexpr int kMaxRanks = 2;
constexpr size_t kNodePart = 1 + 2 * kMaxRanks;
std::string file_name(size_t part) {
  if (part == 0) return trace::kMetaFileName;
  if (part == kNodePart) return std::string(trace::kNodeFilePrefix) + "0" + trace::kNodeFileSuffix;
  const std::string rank = std::to_string((part - 1) / 2);
  if (part % 2 == 1) return trace::kRankFilePrefix + rank + trace::kRankFileSuffix;
  return trace::kSamplesFilePrefix + rank;
}
constexpr size_t kParts = kNodePart + 1;

// Sets each section header's CRC, so that mutations reach the sections' contents.
void fix_section_crcs(std::vector<uint8_t>& bytes) {
  size_t at = sizeof(trace::NodeFileHeader);
  while (bytes.size() >= at && bytes.size() - at >= sizeof(trace::SectionHeader)) {
    trace::SectionHeader h;
    std::memcpy(&h, bytes.data() + at, sizeof h);
    h.header_crc = trace::section_header_crc(h);
    std::memcpy(bytes.data() + at, &h, sizeof h);
    const size_t content = at + sizeof h;
    if (h.bytes > bytes.size() - content) break;
    at = content + static_cast<size_t>(h.bytes);
  }
}

// The rank and run id a samples file's header names (words 3 and 4), so that the direct parse
// gets past the header check to the lines behind it.
void parse_samples_alone(std::string_view text) {
  const std::string_view header = text.substr(0, text.find('\n'));
  std::vector<std::string_view> words;
  for (size_t at = 0; at <= header.size() && words.size() < 4;) {
    const size_t end = std::min(header.find(' ', at), header.size());
    words.push_back(header.substr(at, end - at));
    at = end + 1;
  }
  int rank = 0;
  if (words.size() >= 3) std::from_chars(words[2].data(), words[2].data() + words[2].size(), rank);
  const std::string_view run_id = words.size() >= 4 ? words[3] : std::string_view();
  auto series = trace::parse_samples(text, "samples", rank, run_id);
  if (!series) return;
  // What trace/gaps.h does with the values: sums and interpolation, where overflows would be.
  const trace::LostTimeCurve lost(series.value().run_delay, series.value().probes);
  for (const trace::RunDelayPoint& p : series.value().run_delay) (void)lost.between(0, p.t_ns);
  for (const trace::ProbePoint& p : series.value().probes) (void)lost.at(p.t_ns);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = fuzz::scratch_subdir("trace");
  const auto parts = fuzz::split_files(fuzz::as_text({data, size}), kParts);
  for (size_t i = 0; i < kParts; ++i) {
    const std::string path = dir + "/" + file_name(i);
    // Absent, not the previous input's; an empty rank or samples part is absent too, so that
    // an input can hold a node file alone (an empty rank file is rank_trace's case).
    if (i >= parts.size() || (i > 0 && i < kNodePart && parts[i].empty())) {
      std::remove(path.c_str());
    } else if (i == kNodePart) {
      std::vector<uint8_t> node(parts[i].begin(), parts[i].end());
      fix_section_crcs(node);
      fuzz::write_file(path, fuzz::as_text(node));
    } else if (i % 2 == 1) {
      std::vector<uint8_t> rank(parts[i].begin(), parts[i].end());
      fuzz::fix_block_checksums(rank);
      fuzz::write_file(path, fuzz::as_text(rank));
    } else {
      fuzz::write_file(path, parts[i]);
      if (i > 0) parse_samples_alone(parts[i]);
    }
  }

  for (const bool truncated_ok : {false, true}) {
    auto set = trace::read_trace_dir(dir, {.allow_truncated = truncated_ok});
    if (!set) continue;
    (void)trace::summarize(set.value());
    for (const trace::RankTrace& rank : set.value().ranks) (void)trace::compute_gaps(rank);
  }
  return 0;
}

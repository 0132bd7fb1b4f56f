// Fuzz target: one rank file (docs/trace-format.md) through the reader, as `pskel info` and
// every other command read it, complete or cut short; then through the summary the reader's
// callers rely on. Also the same bytes with their block checksums repaired, to reach the records.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_support.h"
#include "trace/gaps.h"
#include "trace/reader.h"

namespace {

void parse(pskel::fuzz::Bytes bytes) {
  for (const bool truncated_ok : {false, true}) {
    auto rank =
        pskel::trace::parse_rank_trace(bytes, "rank.0.pskt", {.allow_truncated = truncated_ok});
    if (!rank) continue;
    (void)pskel::trace::compute_gaps(rank.value());
    pskel::trace::TraceSet set;
    set.ranks.push_back(std::move(rank).value());
    (void)pskel::trace::summarize(set);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parse({data, size});
  std::vector<uint8_t> repaired(data, data + size);
  pskel::fuzz::fix_block_checksums(repaired);
  parse(repaired);
  return 0;
}

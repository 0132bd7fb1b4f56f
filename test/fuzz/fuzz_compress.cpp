// Fuzz target: the loop compression (`pskel compress`) on arbitrary integer strings, checked
// against its own guarantees (the tree expands back to the input, the lengths agree), and the
// symbol-file parser of `pskel compress --symbols` on the raw bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "compress/compress.h"
#include "compress/symbol_file.h"
#include "fuzz_support.h"

namespace {

using namespace pskel;

// Bounded so that one input takes milliseconds; loops longer than this add nothing new.
constexpr size_t kMaxSymbols = 4096;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_compress: %s\n", what);
  std::abort();
}

void fold(const std::vector<compress::Symbol>& input) {
  compress::CompressStats stats;
  const compress::Sequence tree = compress::compress(input, &stats);
  if (compress::expand(tree) != input) fail("expand(compress(x)) != x");
  if (compress::expanded_length(tree) != input.size()) fail("expanded_length is not the input's");
  if (compress::compressed_length(tree) > input.size()) fail("the tree is longer than the input");
  (void)compress::to_string(tree, [](compress::Symbol s) { return std::to_string(s); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Each byte one symbol: a small alphabet, as in merged traces, so that loops are common.
  fold(std::vector<compress::Symbol>(data, data + std::min(size, kMaxSymbols)));

  auto symbols = compress::parse_symbols(fuzz::as_text({data, size}), "symbols.txt");
  if (symbols && symbols.value().size() <= kMaxSymbols) fold(symbols.value());
  return 0;
}

// Symbol files: the input of `pskel compress --symbols`, an integer string for the loop
// compression alone. Format: one symbol per line, a decimal integer in [0, 4294967295];
// spaces, tabs and a CR around it are ignored, and so are blank lines (so a trailing newline,
// or none, are both fine). Anything else is an error naming its line. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compress/compress.h"
#include "util/result.h"

namespace pskel::compress {

// Parses the contents of a symbol file; `name` is the file name errors carry.
// Errors: "line 7: 'abc' is not a non-negative integer", "line 7: '4294967296' is out of range
// (largest symbol: 4294967295)", "more than kMaxInputLength symbols".
Result<std::vector<Symbol>> parse_symbols(std::string_view text, const std::string& name);

// Reads and parses `path`. Errors also: "cannot read: <reason>", "is a directory".
Result<std::vector<Symbol>> read_symbol_file(const std::string& path);

}  // namespace pskel::compress

// The symbol-file reader (symbol_file.h). The whole file is read at once: at 10^7 lines that
// is about 80 MB, less than compress() itself needs.
#include "compress/symbol_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

namespace pskel::compress {
namespace {

constexpr std::string_view kBlank = " \t\r";

std::string_view trim(std::string_view s) {
  const size_t first = s.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlank) - first + 1);
}

// The offending text, short enough for a one-line message.
std::string quoted(std::string_view s) {
  constexpr size_t kShown = 40;
  return "'" + std::string(s.substr(0, kShown)) + (s.size() > kShown ? "...'" : "'");
}

}  // namespace

Result<std::vector<Symbol>> parse_symbols(std::string_view text, const std::string& name) {
  std::vector<Symbol> symbols;
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = trim(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    ++line_number;
    if (line.empty()) continue;
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), value);
    const std::string where = "line " + std::to_string(line_number) + ": " + quoted(line);
    if (end != line.data() + line.size() || (ec != std::errc{} && ec != std::errc::result_out_of_range))
      return Error{name, where + " is not a non-negative integer"};
    if (ec == std::errc::result_out_of_range || value > std::numeric_limits<Symbol>::max())
      return Error{name, where + " is out of range (largest symbol: " +
                             std::to_string(std::numeric_limits<Symbol>::max()) + ")"};
    if (symbols.size() == kMaxInputLength)
      return Error{name, "more than " + std::to_string(kMaxInputLength) + " symbols"};
    symbols.push_back(static_cast<Symbol>(value));
  }
  return symbols;
}

Result<std::vector<Symbol>> read_symbol_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path, std::string("cannot read: ") + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error{path, "is a directory"};
  }
  std::string contents;
  if (st.st_size > 0) contents.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Error{path, std::string("cannot read: ") + std::strerror(err)};
    }
    contents.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return parse_symbols(contents, path);
}

}  // namespace pskel::compress

// Symbol files (`pskel compress --symbols`): what is accepted, and errors that name the file
// and the line.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "compress/symbol_file.h"

namespace cz = pskel::compress;

namespace {

std::string error_of(std::string_view text) {
  const auto r = cz::parse_symbols(text, "in.txt");
  REQUIRE_MESSAGE(!r.ok(), "accepted: " << std::string(text));
  CHECK(r.error().file == "in.txt");
  return r.error().what;
}

std::vector<cz::Symbol> parsed(std::string_view text) {
  auto r = cz::parse_symbols(text, "in.txt");
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  return r.value();
}

// A scratch directory under $TMPDIR, removed at scope exit.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/pskel-symbols-XXXXXX";
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("one integer per line; blank lines, spaces, tabs and CRs are ignored") {
  CHECK(parsed("1\n2\n3\n") == std::vector<cz::Symbol>{1, 2, 3});
  CHECK(parsed("1\n2\n3") == std::vector<cz::Symbol>{1, 2, 3});
  CHECK(parsed("\n  7 \r\n\t8\t\n\n   \n0009\r\n") == std::vector<cz::Symbol>{7, 8, 9});
  CHECK(parsed("0\n4294967295\n") == std::vector<cz::Symbol>{0, 4294967295u});
  CHECK(parsed("").empty());
  CHECK(parsed("\n\n").empty());
}

TEST_CASE("a line that is not a non-negative integer is an error naming its line") {
  CHECK(error_of("1\n2\n3\n4\n5\n6\nabc\n8\n") == "line 7: 'abc' is not a non-negative integer");
  CHECK(error_of("1\n\n-3\n") == "line 3: '-3' is not a non-negative integer");
  CHECK(error_of("+3\n") == "line 1: '+3' is not a non-negative integer");
  CHECK(error_of("1 2\n") == "line 1: '1 2' is not a non-negative integer");
  CHECK(error_of("12x\n") == "line 1: '12x' is not a non-negative integer");
  CHECK(error_of("1.5\n") == "line 1: '1.5' is not a non-negative integer");
  CHECK(error_of(std::string(100, 'z')) ==
        "line 1: '" + std::string(40, 'z') + "...' is not a non-negative integer");
}

TEST_CASE("a symbol above 2^32 - 1 is out of range") {
  CHECK(error_of("5\n4294967296\n") ==
        "line 2: '4294967296' is out of range (largest symbol: 4294967295)");
  CHECK(error_of("99999999999999999999999999\n") ==
        "line 1: '99999999999999999999999999' is out of range (largest symbol: 4294967295)");
}

TEST_CASE("read_symbol_file: a missing file and a directory are errors naming them") {
  ScratchDir dir;
  const std::string missing = (dir.path / "missing.txt").string();
  auto r = cz::read_symbol_file(missing);
  REQUIRE(!r.ok());
  CHECK(r.error().line() == missing + ": cannot read: No such file or directory");

  auto d = cz::read_symbol_file(dir.path.string());
  REQUIRE(!d.ok());
  CHECK(d.error().line() == dir.path.string() + ": is a directory");
}

TEST_CASE("read_symbol_file reads a file, and its errors carry the path") {
  ScratchDir dir;
  const std::string good = (dir.path / "good.txt").string();
  std::ofstream(good) << "3\n1\n\n4\n1\n5\n";
  auto r = cz::read_symbol_file(good);
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  CHECK(r.value() == std::vector<cz::Symbol>{3, 1, 4, 1, 5});

  const std::string bad = (dir.path / "bad.txt").string();
  std::ofstream(bad) << "3\n1\nfour\n";
  auto b = cz::read_symbol_file(bad);
  REQUIRE(!b.ok());
  CHECK(b.error().line() == bad + ": line 3: 'four' is not a non-negative integer");
}

// read_regular_file: what it refuses (and with which words) and that what it accepts comes back
// byte for byte.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "util/file_read.h"

namespace {

using pskel::read_regular_file;
using pskel::read_regular_file_if_exists;

constexpr uint64_t kNoLimit = uint64_t{1} << 40;

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at scope exit; the
// fixture of every test case here.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string path = std::string(base && *base ? base : "/tmp") + "/pskel-file-read-XXXXXX";
    REQUIRE(::mkdtemp(path.data()) != nullptr);
    path_ = path;
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `bytes` to the file `name` in here and returns its path.
  std::string put(const std::string& name, const std::string& bytes) const {
    const std::string path = file(name);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
    return path;
  }

 private:
  std::string path_;
};

// What read_regular_file gives for a file it must accept.
std::string accepted(const std::string& path, uint64_t max_bytes) {
  auto r = read_regular_file(path, max_bytes);
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  return r.value();
}

template <class T>
void check_refused(const pskel::Result<T>& r, const std::string& path, const std::string& what) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().file == path);
  CHECK(r.error().what == what);
}

}  // namespace

TEST_CASE_FIXTURE(ScratchDir, "a missing file is an error, or nothing when the caller allows it") {
  const std::string absent = file("absent");
  check_refused(read_regular_file(absent, kNoLimit), absent, "missing");
  auto maybe = read_regular_file_if_exists(absent, kNoLimit);
  REQUIRE(maybe.ok());
  CHECK_FALSE(maybe.value().has_value());
}

TEST_CASE_FIXTURE(ScratchDir, "a symbolic link is refused, also a dangling one, never as missing") {
  const std::string link = file("link");
  REQUIRE(::symlink(put("target", "secret").c_str(), link.c_str()) == 0);
  check_refused(read_regular_file(link, kNoLimit), link, "is a symbolic link (refused)");
  check_refused(read_regular_file_if_exists(link, kNoLimit), link, "is a symbolic link (refused)");

  const std::string dangling = file("dangling");
  REQUIRE(::symlink(file("nowhere").c_str(), dangling.c_str()) == 0);
  check_refused(read_regular_file_if_exists(dangling, kNoLimit), dangling,
                "is a symbolic link (refused)");
}

TEST_CASE_FIXTURE(ScratchDir, "a directory is refused") {
  check_refused(read_regular_file(path(), kNoLimit), path(), "not a regular file");
}

TEST_CASE_FIXTURE(ScratchDir, "a FIFO is refused at once instead of waiting for a writer") {
  const std::string fifo = file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_refused(read_regular_file(fifo, kNoLimit), fifo, "not a regular file");
}

TEST_CASE_FIXTURE(ScratchDir, "a file above the limit is refused with its size; one at it is read") {
  const std::string eleven = put("eleven", "0123456789\n");
  check_refused(read_regular_file(eleven, 10), eleven, "too large (11 bytes)");
  CHECK(accepted(eleven, 11) == "0123456789\n");
}

TEST_CASE_FIXTURE(ScratchDir, "a normal file comes back whole, binary bytes included") {
  std::string bytes(size_t{3} << 20, '\0');  // several read() calls' worth, NULs included
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7919 % 251);
  const std::string binary = put("binary", bytes);
  CHECK(accepted(binary, kNoLimit) == bytes);
  auto maybe = read_regular_file_if_exists(binary, kNoLimit);
  REQUIRE(maybe.ok());
  CHECK(maybe.value() == std::optional<std::string>(bytes));
}

TEST_CASE_FIXTURE(ScratchDir, "an empty file is read as an empty string, not refused") {
  CHECK(accepted(put("empty", ""), 0).empty());
}

TEST_CASE_FIXTURE(ScratchDir, "any other failure to open gives the system's reason") {
  const std::string below_a_file = put("plain", "x") + "/child";
  check_refused(read_regular_file_if_exists(below_a_file, kNoLimit), below_a_file,
                "Not a directory");
}

// meta_writer (core/tracer/meta_writer.h): JSON string escaping and the meta.json it writes.
#include "meta_writer.h"

#include <sys/stat.h>

#include <cstdlib>
#include <limits>
#include <locale>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "test_support.h"

using namespace pskel::test;
using pskel::tracer::json_escape;
using pskel::tracer::MetaInfo;
using pskel::tracer::write_meta;

namespace {

// What a JSON parser makes of `s` escaped and put in quotes.
std::string json_round_trip(const std::string& s) {
  const auto j = nlohmann::json::parse("\"" + json_escape(s) + "\"", nullptr, false);
  REQUIRE_MESSAGE(j.is_string(), "escaped text is not a JSON string: " << json_escape(s));
  return j.get<std::string>();
}

MetaInfo sample_meta(const std::string& dir) {
  MetaInfo m;
  m.dir = dir;
  m.run_id = "run \"quoted\" \\ 1";
  m.flavour = 2;
  m.ranks = 3;
  m.hosts.assign(3 * 64, '\0');
  m.hosts.replace(0, 5, "alpha");
  m.hosts.replace(64, 9, "be\"ta\\\n\x01");
  m.hosts.replace(128, 64, std::string(64, 'g'));  // exactly 64 bytes, no NUL
  m.work_ns_per_unit = {1.25, 0.1, 1e-3};
  m.start_realtime_ns = 1'700'000'000'000'000'001;
  m.end_realtime_ns = 1'700'000'009'000'000'002;
  m.init_entry_ns = -5;
  m.total_records = 123456789012ULL;
  m.complete = true;
  return m;
}

// Number punctuation as in de_DE: '.' groups thousands, ',' is the decimal point.
struct GermanPunct : std::numpunct<char> {
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
  char do_decimal_point() const override { return ','; }
};

// Sets the global C++ locale for a scope, as a traced program may have done.
class GlobalLocale {
 public:
  explicit GlobalLocale(const std::locale& l) : old_(std::locale::global(l)) {}
  ~GlobalLocale() { std::locale::global(old_); }
  GlobalLocale(const GlobalLocale&) = delete;
  GlobalLocale& operator=(const GlobalLocale&) = delete;

 private:
  std::locale old_;
};

nlohmann::json read_json(const std::string& path) {
  const auto bytes = read_bytes(path);
  auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << std::string(bytes.begin(), bytes.end()));
  return j;
}

}  // namespace

TEST_CASE("json_escape leaves plain text alone") {
  CHECK(json_escape("") == "");
  CHECK(json_escape("node017.cluster-x_1/2 :~") == "node017.cluster-x_1/2 :~");
  CHECK(json_escape("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 passes through
  CHECK(json_escape("\x7f") == "\x7f");
}

TEST_CASE("json_escape escapes quotes and backslashes") {
  CHECK(json_escape("\"") == "\\\"");
  CHECK(json_escape("\\") == "\\\\");
  CHECK(json_escape("a\"b\\c") == "a\\\"b\\\\c");
  CHECK(json_escape("\\\"") == "\\\\\\\"");
}

TEST_CASE("json_escape writes control characters as \\n, \\t, \\r or \\u00XX") {
  CHECK(json_escape("\n") == "\\n");
  CHECK(json_escape("\t") == "\\t");
  CHECK(json_escape("\r") == "\\r");
  CHECK(json_escape("\x01") == "\\u0001");
  CHECK(json_escape(std::string(1, '\0')) == "\\u0000");
  CHECK(json_escape("\x08") == "\\u0008");
  const std::string us = json_escape("\x1f");
  REQUIRE(us.size() == 6);
  CHECK(us.substr(0, 4) == "\\u00");
  CHECK((us.substr(4) == "1f" || us.substr(4) == "1F"));
  // Every control character becomes an escape without any raw control byte left.
  for (int c = 0; c < 0x20; ++c) {
    const std::string e = json_escape(std::string(1, static_cast<char>(c)));
    CAPTURE(c);
    CHECK(e[0] == '\\');
    for (const char ch : e) CHECK(static_cast<unsigned char>(ch) >= 0x20);
  }
}

TEST_CASE("every byte string json_escape produces parses back to the original") {
  std::string all;
  for (int c = 1; c < 0x80; ++c) all += static_cast<char>(c);
  CHECK(json_round_trip(all) == all);
  const std::string with_nul("a\0b", 3);
  CHECK(json_round_trip(with_nul) == with_nul);
  CHECK(json_round_trip("\"\\\"\\\\\n\t") == "\"\\\"\\\\\n\t");
  CHECK(json_round_trip("caf\xc3\xa9") == "caf\xc3\xa9");
}

// Regression: json_escape copied bytes >= 0x80 unchanged, so a string that is not UTF-8 (a
// Latin-1 argument in /proc/self/cmdline, say "caf\xe9") made a meta.json that JSON parsers
// (nlohmann, which the reader uses) reject.
TEST_CASE("json_escape output is a valid JSON string even for bytes that are not UTF-8") {
  for (const std::string s : {"caf\xe9", "\xff", "\xc3", "\x80" "xyz"}) {
    CAPTURE(s);
    const auto j = nlohmann::json::parse("\"" + json_escape(s) + "\"", nullptr, false);
    CHECK(j.is_string());
  }
}

TEST_CASE("json_escape writes a byte that is not UTF-8 as \\u00XX, the byte read as Latin-1") {
  CHECK(json_escape("caf\xe9") == "caf\\u00e9");
  CHECK(json_round_trip("caf\xe9") == "caf\xc3\xa9");
  CHECK(json_escape("\xff\xfe") == "\\u00ff\\u00fe");
  CHECK(json_escape("\x80xyz") == "\\u0080xyz");        // a continuation byte alone
  CHECK(json_escape("a\xc3") == "a\\u00c3");            // a sequence cut off by the end
  CHECK(json_escape("\xc3(") == "\\u00c3(");            // ... or by a byte that does not continue it
  CHECK(json_escape("\xe2\x82") == "\\u00e2\\u0082");   // 3-byte sequence missing its last byte
  CHECK(json_escape("\xc0\xaf") == "\\u00c0\\u00af");   // overlong "/"
  CHECK(json_escape("\xe0\x80\xaf") == "\\u00e0\\u0080\\u00af");  // overlong, 3 bytes
  CHECK(json_escape("\xed\xa0\x80") == "\\u00ed\\u00a0\\u0080");  // a UTF-16 surrogate
  CHECK(json_escape("\xf4\x90\x80\x80") == "\\u00f4\\u0090\\u0080\\u0080");  // > U+10FFFF
  CHECK(json_escape("\xf8\x88\x80\x80\x80") == "\\u00f8\\u0088\\u0080\\u0080\\u0080");
}

TEST_CASE("json_escape copies well-formed UTF-8 of every length, including the extremes") {
  for (const std::string s : {"\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xe2\x82\xac",
                              "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf",
                              "\xf0\x90\x80\x80", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
    CAPTURE(s);
    CHECK(json_escape(s) == s);
    CHECK(json_escape("a" + s + "\xff") == "a" + s + "\\u00ff");
  }
}

TEST_CASE("json_escape output parses for every byte string of up to two bytes") {
  for (int a = 0; a < 256; ++a) {
    for (int b = -1; b < 256; ++b) {
      std::string s(1, static_cast<char>(a));
      if (b >= 0) s += static_cast<char>(b);
      const auto j = nlohmann::json::parse("\"" + json_escape(s) + "\"", nullptr, false);
      if (!j.is_string()) FAIL_CHECK("bytes " << a << " " << b << " give " << json_escape(s));
    }
  }
}

TEST_CASE("write_meta writes a JSON meta.json holding what it was given") {
  TempDir dir;
  ::unsetenv("SLURM_JOB_ID");
  REQUIRE(write_meta(sample_meta(dir.path())));
  const auto j = read_json(dir.file("meta.json"));
  CHECK(j["format"] == "pskel-trace");
  CHECK(j["version"] == pskel::trace::kFormatVersion);
  CHECK(j["run_id"] == "run \"quoted\" \\ 1");
  CHECK(j["complete"] == true);
  CHECK(j["job_id"].is_null());
  CHECK(j["ranks"] == 3);
  CHECK(j["mpi"] == "openmpi");
  CHECK(j["start_realtime_ns"] == 1'700'000'000'000'000'001);
  CHECK(j["end_realtime_ns"] == 1'700'000'009'000'000'002);
  CHECK(j["init_entry_ns"] == -5);
  CHECK(j["records"] == 123456789012ULL);
  CHECK(j["hosts"] == nlohmann::json::array({"alpha", "be\"ta\\\n\x01", std::string(64, 'g')}));
  REQUIRE(j["work_ns_per_unit"].size() == 3);
  CHECK(j["work_ns_per_unit"][0].get<double>() == 1.25);
  CHECK(j["work_ns_per_unit"][1].get<double>() == 0.1);   // precision 17: exact round trip
  CHECK(j["work_ns_per_unit"][2].get<double>() == 1e-3);
  CHECK(j["executable"].is_string());
  CHECK_FALSE(j["executable"].get<std::string>().empty());
  REQUIRE(j["args"].is_array());
  CHECK_FALSE(j["args"].empty());
  // Replaced atomically: no temporary left behind.
  struct stat st;
  CHECK(::stat(dir.file("meta.json.tmp").c_str(), &st) != 0);
}

TEST_CASE("write_meta records SLURM_JOB_ID as an escaped string and an unknown flavour") {
  TempDir dir;
  REQUIRE(::setenv("SLURM_JOB_ID", "12\"34", 1) == 0);
  MetaInfo m = sample_meta(dir.path());
  m.flavour = 77;
  m.complete = false;
  const bool written = write_meta(m);
  ::unsetenv("SLURM_JOB_ID");
  REQUIRE(written);
  const auto j = read_json(dir.file("meta.json"));
  CHECK(j["job_id"] == "12\"34");
  CHECK(j["mpi"] == "unknown");
  CHECK(j["complete"] == false);
}

// Regression: write_meta formatted numbers with a default std::ostringstream, i.e. in the
// program's global C++ locale. A traced program that called
// std::locale::global(std::locale("de_DE.UTF-8")) (or en_US, which groups thousands with ',')
// got "start_realtime_ns": 1.700.000.000..., "work_ns_per_unit": [1,25] -- not JSON.
TEST_CASE("write_meta writes valid JSON whatever the program's global C++ locale") {
  TempDir dir;
  bool written = false;
  {
    GlobalLocale german(std::locale(std::locale::classic(), new GermanPunct));
    written = write_meta(sample_meta(dir.path()));
  }
  REQUIRE(written);
  const auto bytes = read_bytes(dir.file("meta.json"));
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), std::string(bytes.begin(), bytes.end()));
  CHECK(j["start_realtime_ns"] == 1'700'000'000'000'000'001);
  CHECK(j["records"] == 123456789012ULL);
  CHECK(j["work_ns_per_unit"][0].get<double>() == 1.25);
}

TEST_CASE("write_meta writes a calibration that is not finite as null") {
  TempDir dir;
  MetaInfo m = sample_meta(dir.path());
  m.work_ns_per_unit = {std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity(), 2.5};
  REQUIRE(write_meta(m));
  const auto j = read_json(dir.file("meta.json"));
  CHECK(j["work_ns_per_unit"] == nlohmann::json::parse("[null, null, 2.5]"));
}

TEST_CASE("write_meta writes the calibrations of MPI_Finalize, of the probes and of memory once there are any") {
  TempDir dir;
  MetaInfo m = sample_meta(dir.path());
  REQUIRE(write_meta(m));
  CHECK_FALSE(read_json(dir.file("meta.json")).contains("work_ns_per_unit_at_finalize"));
  CHECK_FALSE(read_json(dir.file("meta.json")).contains("work_ns_per_unit_in_run"));
  m.work_ns_per_unit_at_finalize = {1.5, std::numeric_limits<double>::quiet_NaN(), 0.25};
  m.work_ns_per_unit_in_run = {1.25, -1, 0.5};
  REQUIRE(write_meta(m));
  CHECK(read_json(dir.file("meta.json"))["work_ns_per_unit_at_finalize"] ==
        nlohmann::json::parse("[1.5, null, 0.25]"));
  CHECK(read_json(dir.file("meta.json"))["work_ns_per_unit_in_run"] ==
        nlohmann::json::parse("[1.25, -1, 0.5]"));
  CHECK_FALSE(read_json(dir.file("meta.json")).contains("stream_ns_per_byte"));
  m.stream_ns_per_byte = {0.125, -1, std::numeric_limits<double>::infinity()};
  REQUIRE(write_meta(m));
  CHECK(read_json(dir.file("meta.json"))["stream_ns_per_byte"] ==
        nlohmann::json::parse("[0.125, -1, null]"));
  CHECK_FALSE(read_json(dir.file("meta.json")).contains("stream_ns_per_byte_in_run"));
  m.stream_ns_per_byte_in_run = {0.0625, -1, 0.5};
  REQUIRE(write_meta(m));
  CHECK(read_json(dir.file("meta.json"))["stream_ns_per_byte_in_run"] ==
        nlohmann::json::parse("[0.0625, -1, 0.5]"));
  CHECK_FALSE(read_json(dir.file("meta.json")).contains("stream_kind"));
  m.stream_kind = "read";
  REQUIRE(write_meta(m));
  CHECK(read_json(dir.file("meta.json"))["stream_kind"] == "read");
}

TEST_CASE("write_meta replaces an existing meta.json") {
  TempDir dir;
  write_text(dir.file("meta.json"), "old contents that are much longer than the new ones would be......");
  MetaInfo m = sample_meta(dir.path());
  m.ranks = 1;
  m.hosts.resize(64);
  m.work_ns_per_unit = {2.0};
  REQUIRE(write_meta(m));
  const auto j = read_json(dir.file("meta.json"));
  CHECK(j["ranks"] == 1);
  CHECK(j["hosts"].size() == 1);
}

TEST_CASE("write_meta into a nonexistent directory returns false") {
  TempDir dir;
  MetaInfo m = sample_meta(dir.file("absent"));
  CHECK_FALSE(write_meta(m));
  struct stat st;
  CHECK(::stat(dir.file("absent").c_str(), &st) != 0);
}

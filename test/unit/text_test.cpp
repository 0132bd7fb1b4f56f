// Text from users on its way into logs, messages and JSON (util/text.h, util/json_text.h):
// invalid UTF-8 replaced, controls escaped, cuts on character boundaries, never a throw.
#include <doctest/doctest.h>

#include <string>

#include "util/json_text.h"
#include "util/text.h"

using pskel::json_text;
using pskel::one_line;
using pskel::utf8_prefix;
using pskel::valid_utf8;

namespace {
const std::string kFffd = "\xEF\xBF\xBD";
}

TEST_CASE("WellFormedUtf8IsKeptAndEveryMalformedSequenceReplaced") {
  CHECK(valid_utf8("plain ascii") == "plain ascii");
  CHECK(valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  CHECK(valid_utf8("step.\xff") == "step." + kFffd);
  CHECK(valid_utf8("\xC0\xAF") == kFffd + kFffd);               // overlong '/'
  CHECK(valid_utf8("\xED\xA0\x80") == kFffd + kFffd + kFffd);   // a surrogate
  CHECK(valid_utf8("\xF4\x90\x80\x80") == kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  CHECK(valid_utf8("\x80x") == kFffd + "x");                    // stray continuation byte
  CHECK(valid_utf8("ab\xE2\x82") == "ab" + kFffd + kFffd);      // cut short at the end
  CHECK(valid_utf8(std::string("a\0b", 3)) == std::string("a\0b", 3));
}

TEST_CASE("OneLineEscapesControlsAndCutsOnACharacterBoundary") {
  CHECK(one_line("a\nb\rc\td\x01\x7f") == "a\\nb\\rc\\td\\x01\\x7f");
  CHECK(one_line(one_line("x\ny\\z")) == one_line("x\ny\\z"));  // idempotent
  const std::string long_text(1000, 'a');
  CHECK(one_line(long_text, 80).size() == 80);
  CHECK(one_line(long_text, 80).ends_with("..."));
  // 299 bytes, then a 2-byte character across the cut of 300 (issue 22: a message cut there
  // made every JSON writer downstream throw).
  const std::string across = std::string(298, 'a') + "\xC3\xA9\xC3\xA9";
  const std::string cut = one_line(across, 300);
  CHECK(cut.size() <= 300);
  CHECK(valid_utf8(cut) == cut);
  CHECK(utf8_prefix(across, 299) == std::string(298, 'a'));
  CHECK(utf8_prefix(across, 300) == std::string(298, 'a') + "\xC3\xA9");
}

TEST_CASE("JsonTextOfInvalidUtf8ReplacesInsteadOfThrowing") {
  const nlohmann::json j = {{"trace_dir", "/spool/job.1/step.\xff"}, {"n", 3}};
  CHECK_THROWS(j.dump());  // what every --json output did
  std::string text;
  CHECK_NOTHROW(text = json_text(j));
  CHECK(text.find("step." + kFffd) != std::string::npos);
  CHECK(nlohmann::json::parse(text)["n"] == 3);
}

// Text that came from users (trace fields, directory names, command output, config values) on
// its way into logs, messages and JSON: made valid UTF-8 and kept on one line, so that no byte a
// user chose can forge a log line, break a JSON writer or end a message mid-character.
// Pure functions; reentrant.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pskel {

// The length of the well-formed UTF-8 sequence that starts `text` (RFC 3629: no overlong form,
// no UTF-16 surrogate, nothing above U+10FFFF), or 0 when none does. REQUIRES: !text.empty().
size_t utf8_sequence_length(std::string_view text);

// `text` with every byte sequence that is not well-formed UTF-8 (overlong forms, surrogates,
// code points past U+10FFFF, stray continuation bytes, a sequence cut short) replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

// `text` as one printable line of at most `max_bytes` bytes: valid_utf8, then C0 controls and
// DEL written as \n, \r, \t or \xNN, cut on a character boundary with "..." appended when
// longer. Idempotent (a backslash stays as it is), so a line made of lines made this way is
// still right. REQUIRES: max_bytes >= 3.
std::string one_line(std::string_view text, size_t max_bytes = 400);

// The longest prefix of `text` of at most `max_bytes` bytes that does not end inside a UTF-8
// sequence (`text` itself assumed valid UTF-8).
std::string_view utf8_prefix(std::string_view text, size_t max_bytes);

}  // namespace pskel

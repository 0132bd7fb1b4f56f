// JSON text for output (stdout, skeleton.json, logs): nlohmann::json::dump throws on a string
// that is not valid UTF-8, and such strings come from users (paths, trace fields, stored text).
// Here invalid bytes are replaced by U+FFFD instead. Header only; reentrant.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pskel {

// REQUIRES: nothing of `value`; never throws for text content.
inline std::string json_text(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pskel

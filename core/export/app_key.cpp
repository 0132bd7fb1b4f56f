#include "export/app_key.h"

#include <cstring>

namespace pskel::exportfile {

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '+' || c == '-';
}

}  // namespace

bool valid_app_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || !name_char(name[0]) || name[0] == '.' ||
      name[0] == '_' || name[0] == '+' || name[0] == '-')
    return false;
  for (const char c : name)
    if (!name_char(c)) return false;
  return true;
}

std::string app_key(std::string_view predict_name, const char* script, const char* job_name) {
  if (valid_app_name(predict_name)) return std::string(predict_name);
  if (script && *script) {
    static constexpr char kHex[] = "0123456789abcdef";
    uint64_t h = fnv1a64(script);
    std::string key = "script:0000000000000000";
    for (size_t i = key.size(); i-- > 7; h >>= 4) key[i] = kHex[h & 15];
    return key;
  }
  if (job_name && *job_name) {
    std::string key = "job:";
    for (size_t i = 0; job_name[i] && i < 64; ++i) key += name_char(job_name[i]) ? job_name[i] : '_';
    return key;
  }
  return "";
}

}  // namespace pskel::exportfile

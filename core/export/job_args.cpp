#include "job_args.h"

namespace pskel::exportfile {
namespace {

bool plain(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("._+=/,:-").find(static_cast<char>(c)) != std::string_view::npos;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string encode_job_args(std::span<const char* const> args) {
  if (args.size() > kMaxJobArgs) return "";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char* arg : args) {
    if (arg == nullptr) return "";
    if (!out.empty()) out += ' ';
    if (*arg == '\0') out += "%00";  // an empty argument still holds its place
    for (const unsigned char* p = reinterpret_cast<const unsigned char*>(arg); *p; ++p) {
      if (plain(*p)) {
        out += static_cast<char>(*p);
      } else {
        out += '%';
        out += kHex[*p >> 4];
        out += kHex[*p & 15];
      }
      if (out.size() > kMaxJobArgsBytes) return "";
    }
  }
  return out;
}

bool decode_job_args(std::string_view text, std::vector<std::string>* args) {
  args->clear();
  if (text.empty()) return true;
  if (text.size() > kMaxJobArgsBytes) return false;
  std::string word;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ' ') {
      if (word.empty() || args->size() == kMaxJobArgs) return false;
      args->push_back(word == std::string(1, '\0') ? "" : word);
      word.clear();
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '%') {
      if (i + 2 >= text.size()) return false;
      const int high = hex_value(text[i + 1]), low = hex_value(text[i + 2]);
      if (high < 0 || low < 0) return false;
      word += static_cast<char>(high * 16 + low);
      i += 2;
    } else if (plain(c)) {
      word += static_cast<char>(c);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace pskel::exportfile

#include "job_args.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "export/app_key.h"

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

bool parse_number(const std::string& text, double* value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  // "inf", "nan" and hex floats are words here, not sizes.
  if (text.find_first_not_of("0123456789.eE+-") != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v)) return false;
  *value = v;
  return true;
}

bool is_number(const std::string& text) {
  double ignored;
  return parse_number(text, &ignored);
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

Result<JobParameters> job_parameters(std::span<const std::string> command, int ntasks) {
  if (command.empty() || command[0].empty()) return Error{"", "the command is empty"};
  if (ntasks < 1) return Error{"", "the task count must be at least 1"};
  JobParameters p;
  p.program = std::filesystem::path(command[0]).filename().string();
  p.shape.push_back(p.program);
  p.names.push_back("ntasks");
  p.values.push_back(ntasks);
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& word = command[i];
    double value;
    if (parse_number(word, &value)) {
      const std::string& before = command[i - 1];
      const bool after_option = i > 1 && before.size() > 1 && before[0] == '-' &&
                                !is_number(before) && before.find('=') == std::string::npos;
      p.shape.push_back(kNumberSlot);
      p.names.push_back(after_option ? before : "arg" + std::to_string(i));
      p.values.push_back(value);
      continue;
    }
    const size_t equals = word.find('=');
    if (word.size() > 1 && word[0] == '-' && equals != std::string::npos &&
        parse_number(word.substr(equals + 1), &value)) {
      p.shape.push_back(word.substr(0, equals + 1) + kNumberSlot);
      p.names.push_back(word.substr(0, equals));
      p.values.push_back(value);
      continue;
    }
    p.shape.push_back(word);
  }
  return p;
}

bool batch_command(std::string_view encoded_args, std::vector<std::string>* command) {
  std::vector<std::string> args;
  if (!decode_job_args(encoded_args, &args)) return false;
  *command = {"job"};
  command->insert(command->end(), args.begin(), args.end());
  return true;
}

std::string input_key(std::string_view encoded_args) {
  char key[24];
  snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(fnv1a64(encoded_args)));
  return key;
}

uint64_t shape_key(std::span<const std::string> shape) {
  std::string text;
  for (const std::string& word : shape) text += std::to_string(word.size()) + ":" + word;
  return fnv1a64(text);
}

}  // namespace pskel::exportfile

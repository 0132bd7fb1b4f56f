// Errors as values (leveldb's Status idea): a Result holds a value or an Error naming the file
// and what is wrong with it, ready to print as one line. No exceptions cross module borders.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace pskel {

struct Error {
  std::string file;   // the file (or directory) the problem is in; may be empty
  std::string what;   // what is wrong, lower case, no trailing period
  std::string line() const { return file.empty() ? what : file + ": " + what; }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}   // NOLINT: implicit by design
  Result(Error error) : error_(std::move(error)) {}  // NOLINT
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // REQUIRES: ok()
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& value() const& { return *value_; }
  // REQUIRES: !ok()
  const Error& error() const { return error_; }

 private:
  std::optional<T> value_;
  Error error_;
};

}  // namespace pskel

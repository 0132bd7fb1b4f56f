// Rule fitting for per-instance parameters; see rule.h.
#include "looptree/rule.h"

namespace pskel::looptree {

int64_t Rule::at(uint64_t i) const {
  switch (kind) {
    case Kind::constant: return base;
    case Kind::linear: return base + step * static_cast<int64_t>(i);
    case Kind::periodic: return values[i % values.size()];
    case Kind::table: return i < values.size() ? values[i] : values.back();
  }
  return base;
}

uint64_t Rule::distinct_values_bound() const {
  return kind == Kind::constant || kind == Kind::linear ? 1 : values.size();
}

void RuleBuilder::add(int64_t value) {
  if (n_ == 0) {
    first_ = value;
  } else if (n_ == 1) {
    step_ = value - first_;
  } else if (linear_ && value != first_ + step_ * static_cast<int64_t>(n_)) {
    linear_ = false;
    values_.reserve(n_ + 1);
    for (uint64_t i = 0; i < n_; ++i) values_.push_back(first_ + step_ * static_cast<int64_t>(i));
  }
  if (!linear_) values_.push_back(value);
  ++n_;
}

Rule RuleBuilder::build() const {
  Rule rule;
  rule.base = first_;
  if (linear_) {
    rule.kind = step_ == 0 || n_ < 2 ? Rule::Kind::constant : Rule::Kind::linear;
    rule.step = rule.kind == Rule::Kind::linear ? step_ : 0;
    return rule;
  }
  const uint64_t period = smallest_period(values_);
  // A period is worth keeping only if it repeats at least twice; otherwise it is a table.
  if (period * 2 <= values_.size()) {
    rule.kind = Rule::Kind::periodic;
    rule.values.assign(values_.begin(), values_.begin() + static_cast<ptrdiff_t>(period));
  } else {
    rule.kind = Rule::Kind::table;
    rule.values = values_;
  }
  return rule;
}

uint64_t smallest_period(std::span<const int64_t> values) {
  const size_t n = values.size();
  if (n == 0) return 0;
  std::vector<uint32_t> border(n, 0);  // border[i]: longest proper border of values[0..i]
  for (size_t i = 1; i < n; ++i) {
    uint32_t k = border[i - 1];
    while (k > 0 && values[i] != values[k]) k = border[k - 1];
    if (values[i] == values[k]) ++k;
    border[i] = k;
  }
  return n - border[n - 1];
}

}  // namespace pskel::looptree

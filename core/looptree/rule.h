// How an integer parameter of a folded event (message bytes, tag) varies over the event's
// instances, kept as a rule instead of one symbol per value, so that a loop whose sizes change
// from iteration to iteration still folds into one loop (issue 3, item 4).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pskel::looptree {

// value(i) for the i-th instance (0-based, in execution order) of an event.
struct Rule {
  enum class Kind : uint8_t {
    constant,  // base
    linear,    // base + step * i
    periodic,  // values[i % values.size()]: sizes that cycle with an inner loop
    table,     // values[i]: anything else (adaptive codes)
  };
  Kind kind = Kind::constant;
  int64_t base = 0;
  int64_t step = 0;
  std::vector<int64_t> values;

  int64_t at(uint64_t i) const;
  uint64_t distinct_values_bound() const;  // 1 for constant, table size otherwise
  bool operator==(const Rule&) const = default;
};

// Fits a Rule value by value without keeping the values while they stay constant or linear:
// the common case (fixed-size halos) costs O(1) memory per rank and event.
class RuleBuilder {
 public:
  void add(int64_t value);
  uint64_t size() const { return n_; }
  // The simplest rule that reproduces every value added, in the order above.
  Rule build() const;

 private:
  uint64_t n_ = 0;
  int64_t first_ = 0;
  int64_t step_ = 0;
  bool linear_ = true;
  std::vector<int64_t> values_;  // filled only once the values stop being linear
};

// The smallest p such that values[i] == values[i % p] for all i (Knuth-Morris-Pratt failure
// function; O(n)). Returns values.size() when there is no shorter period.
uint64_t smallest_period(std::span<const int64_t> values);

}  // namespace pskel::looptree

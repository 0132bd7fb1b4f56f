// C expressions for per-rank and per-instance values of a generated skeleton (internal to
// core/skeleton): a value that is the same on every rank is a literal, one that follows the
// rank is an expression of it ("rank + 1", "(rank + 1) % size"), anything else a static table
// indexed by the rank (the seed's id_proc matrix). Rules over an event's instances become
// expressions of the loop indices.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "looptree/rule.h"

namespace pskel::skeleton::detail {

// Values that are written as MPI constants.
inline constexpr int64_t kTokProcNull = INT64_MIN + 1;
inline constexpr int64_t kTokAnySource = INT64_MIN + 2;
inline constexpr int64_t kTokAnyTag = INT64_MIN + 3;
inline constexpr int64_t kTokUndefined = INT64_MIN + 4;

std::string literal(int64_t value);
std::string literal(double value);

// Text from a trace or a command line (a program name, the MPI's name) as a quoted C string
// literal: printable ASCII stays, anything else (and ", \\ and ?, which could start a
// trigraph) is an escape, so no byte of it can end the literal or the line.
std::string string_literal(std::string_view text);
// The same text inside a /* */ comment: printable ASCII only (other bytes as \xNN), no "*/"
// to end the comment early, no trigraph, at most `max_bytes`.
std::string comment_text(std::string_view text, size_t max_bytes = 200);

// The instance index of an event as C: `plain` counts the instances the skeleton runs (right
// for values that repeat with a period), `spread` maps them evenly onto the original's
// instances (right for values that grow or vary: a scaled loop samples the whole range).
struct Index {
  std::string plain = "0";
  std::string spread = "0";
  uint64_t instances = 1;   // of the original
};

class Tables {
 public:
  explicit Tables(int world_size) : n_(world_size) {}

  // values[r] for the ranks with present[r]; the others do not matter.
  std::string ints(std::string_view hint, const std::vector<int64_t>& values,
                   const std::vector<bool>& present);
  std::string doubles(std::string_view hint, const std::vector<double>& values,
                      const std::vector<bool>& present);
  // A C condition true for the ranks in `set` among those in `known` (the others do not
  // matter); "" when every known rank is in the set.
  std::string condition(const std::vector<bool>& set, const std::vector<bool>& known);
  // A rule per rank (null: absent) as an expression of the instance index; values are divided
  // by `divisor` (rounding up). Long tables are replaced by their mean (a note says so).
  std::string rules(std::string_view hint, const std::vector<const looptree::Rule*>& rules,
                    const Index& index, int64_t divisor, std::vector<std::string>& notes);
  // Named static arrays; identical contents share one name.
  std::string array(std::string_view hint, std::string_view type,
                    const std::vector<int64_t>& values);
  std::string array2(std::string_view hint, std::string_view type,
                     const std::vector<std::vector<int64_t>>& rows);
  // A row per rank (the ranks not `present` do not matter) as an expression of the rank: the
  // array2 indexed by the rank, or, where that saves at least half its text, the rows that
  // occur and an index into them (`v_rows[v_index[rank]]`: a stencil's few kinds of rank;
  // the index is per_rank()'s, so runs of one kind compress too).
  std::string rows_per_rank(std::string_view hint, std::string_view type,
                            const std::vector<std::vector<int64_t>>& rows,
                            const std::vector<bool>& present);

  size_t max_table = 65536;
  std::string declarations() const { return decls_; }

 private:
  std::string name(std::string_view hint);
  std::string declare(std::string_view hint, std::string text_after_name, std::string key);
  std::string one_rule(std::string_view hint, const looptree::Rule& rule, const Index& index,
                       int64_t divisor, std::vector<std::string>& notes);
  // ints() when a rule says it (split_further: also split()), else kNoRule (no table is
  // declared).
  std::string rule_ints(const std::vector<int64_t>& values, const std::vector<bool>& present,
                        bool split_further);
  // condition() when a rule says it, else kNoRule (no table is declared).
  static constexpr const char* kNoRule = "?";
  std::string rule_condition(const std::vector<bool>& set, const std::vector<bool>& known) const;
  // A table of one C literal per rank (`cells`; the ranks not `present` do not matter) as an
  // expression of the rank: a plain array, or, where that saves at least half its text, the
  // runs of equal values (`v_runs[pskel_run(v_starts, k, rank)]`: ranks in blocks, a rank 0
  // alone) or an index into the values that occur (`v_values[v_index[rank]]`: few values,
  // scattered).
  std::string per_rank(std::string_view hint, std::string_view type,
                       const std::vector<std::string>& cells, const std::vector<bool>& present);
  // One value on a set of ranks that a condition names and an expression (not a table) of
  // the others: "(rank % 64 == 0 ? MPI_ANY_SOURCE : rank / 64 * 64)", or "".
  std::string split(const std::vector<int>& ranks, const std::vector<int64_t>& values,
                    const std::vector<bool>& present);

  int n_;
  std::map<std::string, std::string> by_content_;
  std::map<std::string, int> used_;
  std::string decls_;
};

// The generator's side of pskel_grid_place() (skeletons/pskel_runtime.h): 0..26, see cexpr.cpp.
int grid_place(int r, int nx, int ny, int nz);

// The largest value a rule takes over `instances` instances.
int64_t rule_max(const looptree::Rule& rule, uint64_t instances);

}  // namespace pskel::skeleton::detail

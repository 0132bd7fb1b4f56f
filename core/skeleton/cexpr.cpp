// C expressions for per-rank and per-instance values; see cexpr.h.
#include "skeleton/cexpr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace pskel::skeleton::detail {

namespace lt = looptree;

std::string literal(int64_t value) {
  switch (value) {
    case kTokProcNull: return "MPI_PROC_NULL";
    case kTokAnySource: return "MPI_ANY_SOURCE";
    case kTokAnyTag: return "MPI_ANY_TAG";
    case kTokUndefined: return "MPI_UNDEFINED";
    default: return std::to_string(value);
  }
}

std::string literal(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{:.1f}", value);
  return fmt::format("{:.9g}", value);
}

std::string string_literal(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += ch;
    } else if (c >= 0x20 && c < 0x7F) {
      out += ch;
    } else {
      out += fmt::format("\\{:03o}", c);  // octal: at most 3 digits, unlike \x
    }
  }
  return out + "\"";
}

std::string comment_text(std::string_view text, size_t max_bytes) {
  std::string out;
  for (const char ch : text) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(ch);
    const char previous = out.empty() ? '\0' : out.back();
    if (c < 0x20 || c >= 0x7F || (c == '/' && previous == '*') || (c == '?' && previous == '?'))
      out += fmt::format("\\x{:02x}", c);
    else
      out += ch;
  }
  return out;
}

namespace {

bool is_token(int64_t v) { return v <= kTokUndefined; }

constexpr const char* kName = "@NAME@";  // where declare() puts a table's name

int64_t div_up(int64_t v, int64_t d) {
  if (d <= 1 || is_token(v)) return v;
  return v >= 0 ? (v + d - 1) / d : v / d;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += ", ";
    out += parts[i];
  }
  return out;
}

bool fits_int(const std::vector<int64_t>& values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) {
    return is_token(v) || (v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max());
  });
}

}  // namespace

int64_t rule_max(const lt::Rule& rule, uint64_t instances) {
  switch (rule.kind) {
    case lt::Rule::Kind::constant: return rule.base;
    case lt::Rule::Kind::linear:
      return std::max(rule.base,
                      rule.base + rule.step * static_cast<int64_t>(instances > 0 ? instances - 1 : 0));
    case lt::Rule::Kind::periodic:
    case lt::Rule::Kind::table:
      return rule.values.empty() ? rule.base
                                 : *std::max_element(rule.values.begin(), rule.values.end());
  }
  return rule.base;
}

std::string Tables::name(std::string_view hint) {
  const int k = used_[std::string(hint)]++;
  return k == 0 ? std::string(hint) : fmt::format("{}_{}", hint, k + 1);
}

std::string Tables::declare(std::string_view hint, std::string text, std::string key) {
  const auto it = by_content_.find(key);
  if (it != by_content_.end()) return it->second;
  const std::string n = name(hint);
  by_content_.emplace(std::move(key), n);
  const size_t at = text.find(kName);
  if (at != std::string::npos) text.replace(at, std::string_view(kName).size(), n);
  decls_ += text;
  decls_ += '\n';
  return n;
}

std::string Tables::array(std::string_view hint, std::string_view type,
                          const std::vector<int64_t>& values) {
  std::vector<std::string> parts;
  for (int64_t v : values) parts.push_back(literal(v));
  const std::string body = join(parts);
  return declare(hint, fmt::format("static const {} {}[{}] = {{{}}};", type, kName, values.size(), body),
                 fmt::format("{}[{}]{{{}}}", type, values.size(), body));
}

std::string Tables::array2(std::string_view hint, std::string_view type,
                           const std::vector<std::vector<int64_t>>& rows) {
  size_t width = 1;
  for (const auto& row : rows) width = std::max(width, row.size());
  std::vector<std::string> lines;
  for (const auto& row : rows) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < width; ++i) parts.push_back(literal(i < row.size() ? row[i] : 0));
    lines.push_back("{" + join(parts) + "}");
  }
  const std::string body = join(lines);
  return declare(hint,
                 fmt::format("static const {} {}[{}][{}] = {{{}}};", type, kName, rows.size(), width, body),
                 fmt::format("{}[{}][{}]{{{}}}", type, rows.size(), width, body));
}

std::string Tables::rows_per_rank(std::string_view hint, std::string_view type,
                                  const std::vector<std::vector<int64_t>>& rows,
                                  const std::vector<bool>& present) {
  std::map<std::vector<int64_t>, int64_t> code;
  std::vector<std::vector<int64_t>> distinct;
  std::vector<int64_t> codes(rows.size(), 0);
  size_t width = 1;
  for (const auto& row : rows) width = std::max(width, row.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    if (r >= present.size() || !present[r]) continue;
    const auto [it, fresh] = code.try_emplace(rows[r], static_cast<int64_t>(distinct.size()));
    if (fresh) distinct.push_back(rows[r]);
    codes[r] = it->second;
  }
  // In cells of about the same few characters: the kinds of row and an index entry per rank,
  // against a row per rank.
  if (distinct.size() > 256 || 2 * (distinct.size() * width + rows.size()) > rows.size() * width)
    return array2(hint, type, rows) + "[rank]";
  const std::string kinds = array2(fmt::format("{}_rows", hint), type, distinct);
  std::vector<std::string> cells;
  for (int64_t c : codes) cells.push_back(literal(c));
  return fmt::format("{}[{}]", kinds, per_rank(fmt::format("{}_index", hint), "unsigned char", cells, present));
}

namespace {

// The neighbour on a Cartesian grid that `values` holds for `ranks`, as C, or "" if it is not
// one: rank ± s when the rank's coordinate along the axis of stride s and extent d
// (rank / s % d) can step that way, else MPI_PROC_NULL (a non-periodic grid) or the neighbour
// at the axis's other end (a periodic one): what MPI_Cart_shift gives. Tried for each extent d
// that divides n / s; each try stops at the first rank it gets wrong.
std::string grid_neighbour(const std::vector<int>& ranks, const std::vector<int64_t>& values,
                           int n) {
  int64_t step = 0;  // the offset of the ranks whose neighbour is not past the edge
  for (int r : ranks) {
    const int64_t v = values[static_cast<size_t>(r)];
    if (v == kTokProcNull) continue;
    if (is_token(v)) return "";
    if (step == 0 || std::abs(v - r) < std::abs(step)) step = v - r;
  }
  if (step == 0) return "";
  const int64_t s = std::abs(step);
  if (n % s != 0) return "";
  for (int64_t d = 2; d <= n / s; ++d) {
    if ((n / s) % d != 0) continue;
    for (bool periodic : {false, true}) {
      auto expected = [&](int64_t r) -> int64_t {
        const int64_t c = r / s % d;
        if (step > 0 ? c < d - 1 : c > 0) return r + step;
        return periodic ? r - step * (d - 1) : kTokProcNull;
      };
      if (!std::all_of(ranks.begin(), ranks.end(),
                       [&](int r) { return values[static_cast<size_t>(r)] == expected(r); }))
        continue;
      const std::string coord = s == 1 ? fmt::format("rank % {}", d) : fmt::format("rank / {} % {}", s, d);
      const std::string inside = step > 0 ? fmt::format("{} < {}", coord, d - 1) : coord + " > 0";
      const std::string near = step > 0 ? fmt::format("rank + {}", s) : fmt::format("rank - {}", s);
      const std::string far = !periodic  ? "MPI_PROC_NULL"
                              : step > 0 ? fmt::format("rank - {}", s * (d - 1))
                                         : fmt::format("rank + {}", s * (d - 1));
      return fmt::format("({} ? {} : {})", inside, near, far);
    }
  }
  return "";
}

// A condition on a 2-D grid of rows of `width` ranks that holds for exactly the ranks with
// in[r] among those with known[r], or "": the ranks of some columns in some rows, where the
// columns are all, the first, the last, all but the first, all but the last or the inner ones,
// and so are the rows. Boundary ranks of a wavefront or a stencil that take part in a call,
// or do not, are such sets.
std::string grid_set(const std::vector<bool>& in, const std::vector<bool>& known, int n, int width) {
  const int height = n / width;
  std::vector<char> col(static_cast<size_t>(width), 0), row(static_cast<size_t>(height), 0);
  for (int r = 0; r < n; ++r)
    if (known[static_cast<size_t>(r)] && in[static_cast<size_t>(r)])
      col[static_cast<size_t>(r % width)] = row[static_cast<size_t>(r / width)] = 1;
  for (int r = 0; r < n; ++r)  // a product set: no known rank outside it in its columns x rows
    if (known[static_cast<size_t>(r)] && !in[static_cast<size_t>(r)] &&
        col[static_cast<size_t>(r % width)] && row[static_cast<size_t>(r / width)])
      return "";
  // Which of the six shapes `marks` has over 0..extent-1, as C over `coord`, with "" for all;
  // nullopt for none of them.
  auto shape = [](const std::vector<char>& marks, const std::string& coord,
                  int extent) -> std::optional<std::string> {
    const int last = extent - 1;
    auto is = [&](auto pred) {
      for (int c = 0; c < extent; ++c)
        if ((marks[static_cast<size_t>(c)] != 0) != pred(c)) return false;
      return true;
    };
    if (is([](int) { return true; })) return std::string();
    if (is([](int c) { return c == 0; })) return coord + " == 0";
    if (is([&](int c) { return c == last; })) return fmt::format("{} == {}", coord, last);
    if (is([](int c) { return c > 0; })) return coord + " > 0";
    if (is([&](int c) { return c < last; })) return fmt::format("{} < {}", coord, last);
    if (is([&](int c) { return c > 0 && c < last; }))
      return fmt::format("{} > 0 && {} < {}", coord, coord, last);
    return std::nullopt;
  };
  const auto columns = shape(col, fmt::format("rank % {}", width), width);
  const auto rows = shape(row, fmt::format("rank / {}", width), height);
  if (!columns || !rows || (columns->empty() && rows->empty())) return "";
  if (columns->empty()) return *rows;
  if (rows->empty()) return *columns;
  return *columns + " && " + *rows;
}

// grid_set over the row widths that divide n (2 .. n/2), the first that fits.
std::string grid_condition(const std::vector<bool>& in, const std::vector<bool>& known, int n) {
  for (int width = 2; width <= n / 2; ++width)
    if (n % width == 0)
      if (std::string c = grid_set(in, known, n, width); !c.empty()) return c;
  return "";
}

// Two offsets from the rank, told apart by a grid condition:
// "(rank % 32 == 0 ? rank + 32 : rank - 1)", or "".
std::string two_offsets(const std::vector<int>& ranks, const std::vector<int64_t>& values, int n) {
  int64_t first = 0, second = 0;
  bool have_second = false;
  for (int r : ranks) {
    const int64_t v = values[static_cast<size_t>(r)];
    if (is_token(v)) return "";
    const int64_t d = v - r;
    if (r == ranks[0]) first = d;
    else if (d != first && !have_second) { second = d; have_second = true; }
    else if (d != first && d != second) return "";
  }
  if (!have_second) return "";
  std::vector<bool> in(static_cast<size_t>(n), false), known(static_cast<size_t>(n), false);
  for (int r : ranks) {
    known[static_cast<size_t>(r)] = true;
    in[static_cast<size_t>(r)] = values[static_cast<size_t>(r)] - r == first;
  }
  const std::string when = grid_condition(in, known, n);
  if (when.empty()) return "";
  auto offset = [](int64_t d) {
    return d == 0 ? std::string("rank") : d > 0 ? fmt::format("rank + {}", d) : fmt::format("rank - {}", -d);
  };
  return fmt::format("({} ? {} : {})", when, offset(first), offset(second));
}

// The first rank of each block of `block` ranks plus an offset ("rank / 64 * 64": a worker's
// master when every 64 ranks have one), over the block sizes that divide n, or "".
std::string block_start(const std::vector<int>& ranks, const std::vector<int64_t>& values, int n) {
  constexpr int64_t kLimit = int64_t{1} << 40;  // ranks and offsets are far smaller; no overflow
  if (!std::all_of(ranks.begin(), ranks.end(), [&](int r) {
        return std::abs(values[static_cast<size_t>(r)]) < kLimit;
      }))
    return "";
  for (int block = 2; block <= n / 2; ++block) {
    if (n % block != 0) continue;
    const int64_t offset = values[static_cast<size_t>(ranks[0])] - ranks[0] / block * block;
    if (!std::all_of(ranks.begin(), ranks.end(), [&](int r) {
          return values[static_cast<size_t>(r)] == r / block * block + offset;
        }))
      continue;
    if (offset == 0) return fmt::format("rank / {0} * {0}", block);
    return fmt::format("(rank / {0} * {0} {1} {2})", block, offset > 0 ? '+' : '-', std::abs(offset));
  }
  return "";
}

// Where rank r sits on an nx x ny x nz grid (x fastest): per axis 0 at the first coordinate, 2
// at the last, 1 between; 0..kGridPlaces-1. pskel_grid_place() in the skeleton's runtime is the
// same.
constexpr int kGridPlaces = 27;

}  // namespace

int grid_place(int r, int nx, int ny, int nz) {
  const auto axis = [](int c, int extent) { return c == 0 ? 0 : c == extent - 1 ? 2 : 1; };
  return axis(r % nx, nx) + 3 * axis(r / nx % ny, ny) + 9 * axis(r / (nx * ny), nz);
}

namespace {

struct GridPlaces {
  int nx = 0, ny = 0, nz = 0;     // nx == 0: none fits
  std::vector<int64_t> codes;     // [place]: the code of the ranks there, -1 where none
};

// The first grid (by nx, then ny, over the factorisations of n) on which the code of every
// present rank is the code of its place: a 3-D stencil's kinds of rank (inside, on a face, on
// an edge, at a corner), which differ by what their edges leave out.
GridPlaces grid_places(const std::vector<int64_t>& codes, const std::vector<bool>& present, int n) {
  // Where the code changes from one present rank to the next, the place must change too: a test
  // that rejects most grids at once (a job size of many factorisations has thousands). The
  // ranks of those changes are checked first, then the rest, so that a grid that fails, fails
  // early.
  std::vector<std::pair<int, int>> changes;
  std::vector<int> order;
  for (int r = 0, last = -1; r < n; ++r) {
    if (!present[static_cast<size_t>(r)]) continue;
    if (last >= 0 && codes[static_cast<size_t>(r)] != codes[static_cast<size_t>(last)]) {
      changes.emplace_back(last, r);
      order.push_back(r);
    }
    last = r;
  }
  for (int r = 0; r < n; ++r)
    if (present[static_cast<size_t>(r)]) order.push_back(r);
  for (int nx = 2; nx <= n; ++nx) {
    if (n % nx != 0) continue;
    for (int ny = 1; ny <= n / nx; ++ny) {
      if (n / nx % ny != 0) continue;
      const int nz = n / nx / ny;
      if (!std::all_of(changes.begin(), changes.end(), [&](const std::pair<int, int>& c) {
            return grid_place(c.first, nx, ny, nz) != grid_place(c.second, nx, ny, nz);
          }))
        continue;
      GridPlaces grid{nx, ny, nz, std::vector<int64_t>(kGridPlaces, -1)};
      const bool fits = std::all_of(order.begin(), order.end(), [&](int r) {
        int64_t& code = grid.codes[static_cast<size_t>(grid_place(r, nx, ny, nz))];
        if (code < 0) code = codes[static_cast<size_t>(r)];
        return code == codes[static_cast<size_t>(r)];
      });
      if (fits) return grid;
    }
  }
  return {};
}

}  // namespace

std::string Tables::per_rank(std::string_view hint, std::string_view type,
                             const std::vector<std::string>& cells, const std::vector<bool>& present) {
  const std::string body = join(cells);
  const std::string plain = fmt::format("static const {} {}[{}] = {{{}}};", type, kName, cells.size(), body);
  // Runs of one value (ranks that do not get here extend the run they are in), and the values
  // that occur, once each.
  std::vector<int64_t> starts;
  std::vector<std::string> run_values, distinct;
  std::map<std::string, int64_t> code;
  std::vector<int64_t> codes(cells.size(), 0);
  for (size_t r = 0; r < cells.size(); ++r) {
    if (!present[r]) continue;
    if (run_values.empty() || run_values.back() != cells[r]) {
      starts.push_back(run_values.empty() ? 0 : static_cast<int64_t>(r));
      run_values.push_back(cells[r]);
    }
    const auto [it, fresh] = code.try_emplace(cells[r], static_cast<int64_t>(distinct.size()));
    if (fresh) distinct.push_back(cells[r]);
    codes[r] = it->second;
  }
  const auto text = [](const std::vector<int64_t>& v) {
    size_t n = 0;
    for (int64_t x : v) n += literal(x).size() + 2;
    return n;
  };
  const size_t declaration = 2 * (hint.size() + type.size() + 32);  // two arrays' boilerplate
  const size_t runs_text = declaration + join(run_values).size() + text(starts);
  const size_t codes_text = declaration + join(distinct).size() + text(codes);
  const GridPlaces grid = cells.size() == static_cast<size_t>(n_) && distinct.size() <= kGridPlaces
                              ? grid_places(codes, present, n_)
                              : GridPlaces{};
  std::vector<std::string> grid_cells;
  for (const int64_t c : grid.codes)
    grid_cells.push_back(c < 0 ? "0" : distinct[static_cast<size_t>(c)]);
  const size_t grid_text = grid.nx == 0 ? std::numeric_limits<size_t>::max()
                                         : declaration + join(grid_cells).size();
  // Compressed only where it saves most of the table: small tables stay as they were.
  if (std::min({runs_text, codes_text, grid_text}) * 2 > plain.size()) {
    return declare(hint, plain, fmt::format("{}[{}]{{{}}}", type, cells.size(), body)) + "[rank]";
  }
  auto values_of = [&](std::string_view what, const std::vector<std::string>& values) {
    const std::string list = join(values);
    return declare(fmt::format("{}_{}", hint, what),
                   fmt::format("static const {} {}[{}] = {{{}}};", type, kName, values.size(), list),
                   fmt::format("{}[{}]{{{}}}", type, values.size(), list));
  };
  if (grid_text <= std::min(runs_text, codes_text)) {
    return fmt::format("{}[pskel_grid_place(rank, {}, {}, {})]", values_of("places", grid_cells),
                       grid.nx, grid.ny, grid.nz);
  }
  if (runs_text <= codes_text) {
    const std::string at = array(fmt::format("{}_starts", hint), "int", starts);
    return fmt::format("{}[pskel_run({}, {}, rank)]", values_of("runs", run_values), at, starts.size());
  }
  const std::string index =
      array(fmt::format("{}_index", hint), distinct.size() <= 256 ? "unsigned char" : "int", codes);
  return fmt::format("{}[{}[rank]]", values_of("values", distinct), index);
}

std::string Tables::split(const std::vector<int>& ranks, const std::vector<int64_t>& values,
                          const std::vector<bool>& present) {
  const int64_t first = values[static_cast<size_t>(ranks[0])];
  const auto other = std::find_if(ranks.begin(), ranks.end(),
                                  [&](int r) { return values[static_cast<size_t>(r)] != first; });
  for (const int64_t value : {first, values[static_cast<size_t>(*other)]}) {
    std::vector<bool> in(present.size(), false), rest = present;
    for (int r : ranks) {
      in[static_cast<size_t>(r)] = values[static_cast<size_t>(r)] == value;
      rest[static_cast<size_t>(r)] = !in[static_cast<size_t>(r)];
    }
    const std::string when = rule_condition(in, present);
    if (when == kNoRule) continue;
    const std::string otherwise = rule_ints(values, rest, /*split_further=*/false);
    if (otherwise != kNoRule) return fmt::format("({} ? {} : {})", when, literal(value), otherwise);
  }
  return "";
}

std::string Tables::ints(std::string_view hint, const std::vector<int64_t>& values,
                         const std::vector<bool>& present) {
  if (std::string rule = rule_ints(values, present, true); rule != kNoRule) return rule;
  std::vector<int64_t> table(static_cast<size_t>(n_), 0);
  std::vector<std::string> cells;
  for (int r = 0; r < n_; ++r) {
    if (present[static_cast<size_t>(r)] && static_cast<size_t>(r) < values.size())
      table[static_cast<size_t>(r)] = values[static_cast<size_t>(r)];
    cells.push_back(literal(table[static_cast<size_t>(r)]));
  }
  return per_rank(hint, fits_int(table) ? "int" : "long", cells, present);
}

std::string Tables::rule_ints(const std::vector<int64_t>& values, const std::vector<bool>& present,
                              bool split_further) {
  std::vector<int> ranks;
  for (int r = 0; r < n_ && r < static_cast<int>(values.size()); ++r)
    if (present[static_cast<size_t>(r)]) ranks.push_back(r);
  if (ranks.empty()) return "0";
  const int64_t first = values[static_cast<size_t>(ranks[0])];
  if (std::all_of(ranks.begin(), ranks.end(),
                  [&](int r) { return values[static_cast<size_t>(r)] == first; }))
    return literal(first);
  const bool tokens = std::any_of(ranks.begin(), ranks.end(),
                                  [&](int r) { return is_token(values[static_cast<size_t>(r)]); });
  if (!tokens) {
    const int64_t d = first - ranks[0];
    if (std::all_of(ranks.begin(), ranks.end(),
                    [&](int r) { return values[static_cast<size_t>(r)] - r == d; }))
      return d == 0 ? "rank" : d > 0 ? fmt::format("rank + {}", d) : fmt::format("rank - {}", -d);
    for (int d2 = 1; d2 < n_; ++d2)
      if (std::all_of(ranks.begin(), ranks.end(),
                      [&](int r) { return values[static_cast<size_t>(r)] == (r + d2) % n_; }))
        return fmt::format("(rank + {}) % size", d2);
  }
  if (std::string grid = grid_neighbour(ranks, values, n_); !grid.empty()) return grid;
  if (std::string two = two_offsets(ranks, values, n_); !two.empty()) return two;
  if (!tokens)
    if (std::string start = block_start(ranks, values, n_); !start.empty()) return start;
  if (split_further)
    if (std::string parts = split(ranks, values, present); !parts.empty()) return parts;
  return kNoRule;
}

std::string Tables::doubles(std::string_view hint, const std::vector<double>& values,
                            const std::vector<bool>& present) {
  std::vector<int> ranks;
  for (int r = 0; r < n_ && r < static_cast<int>(values.size()); ++r)
    if (present[static_cast<size_t>(r)]) ranks.push_back(r);
  if (ranks.empty()) return "0.0";
  const double first = values[static_cast<size_t>(ranks[0])];
  if (std::all_of(ranks.begin(), ranks.end(),
                  [&](int r) { return values[static_cast<size_t>(r)] == first; }))
    return literal(first);
  // Two values, told apart by a condition: "(rank % 64 == 0 ? 0.0 : 1204.5)".
  const double second = values[static_cast<size_t>(*std::find_if(
      ranks.begin(), ranks.end(), [&](int r) { return values[static_cast<size_t>(r)] != first; }))];
  if (std::all_of(ranks.begin(), ranks.end(), [&](int r) {
        return values[static_cast<size_t>(r)] == first || values[static_cast<size_t>(r)] == second;
      })) {
    std::vector<bool> in(present.size(), false);
    for (int r : ranks) in[static_cast<size_t>(r)] = values[static_cast<size_t>(r)] == first;
    if (const std::string when = rule_condition(in, present); when != kNoRule)
      return fmt::format("({} ? {} : {})", when, literal(first), literal(second));
  }
  std::vector<std::string> cells;
  for (int r = 0; r < n_; ++r)
    cells.push_back(present[static_cast<size_t>(r)] ? literal(values[static_cast<size_t>(r)]) : "0.0");
  return per_rank(hint, "double", cells, present);
}

std::string Tables::condition(const std::vector<bool>& set, const std::vector<bool>& known) {
  if (std::string rule = rule_condition(set, known); rule != kNoRule) return rule;
  std::vector<std::string> cells;
  for (int r = 0; r < n_; ++r)
    cells.push_back(known[static_cast<size_t>(r)] && set[static_cast<size_t>(r)] ? "1" : "0");
  return per_rank("takes_part", "unsigned char", cells, known);
}

std::string Tables::rule_condition(const std::vector<bool>& set, const std::vector<bool>& known) const {
  std::vector<int> in, out;
  for (int r = 0; r < n_; ++r) {
    if (!known[static_cast<size_t>(r)]) continue;
    (set[static_cast<size_t>(r)] ? in : out).push_back(r);
  }
  if (out.empty()) return "";
  if (in.empty()) return "0";
  if (in.size() == 1) return fmt::format("rank == {}", in[0]);
  if (out.size() == 1) return fmt::format("rank != {}", out[0]);
  auto all = [](const std::vector<int>& v, auto pred) { return std::all_of(v.begin(), v.end(), pred); };
  if (all(in, [](int r) { return r % 2 == 0; }) && all(out, [](int r) { return r % 2 == 1; }))
    return "rank % 2 == 0";
  if (all(in, [](int r) { return r % 2 == 1; }) && all(out, [](int r) { return r % 2 == 0; }))
    return "rank % 2 == 1";
  if (in.back() < out.front()) return fmt::format("rank < {}", out.front());
  if (in.front() > out.back()) return fmt::format("rank >= {}", in.front());
  if (std::string grid = grid_condition(set, known, n_); !grid.empty()) return grid;
  return kNoRule;
}

std::string Tables::one_rule(std::string_view hint, const lt::Rule& rule, const Index& index,
                             int64_t divisor, std::vector<std::string>& notes) {
  switch (rule.kind) {
    case lt::Rule::Kind::constant: return literal(div_up(rule.base, divisor));
    case lt::Rule::Kind::linear: {
      std::string e = fmt::format("{} {} {} * {}", rule.base, rule.step < 0 ? "-" : "+",
                                  rule.step < 0 ? -rule.step : rule.step,
                                  index.spread.find(' ') != std::string::npos ? "(" + index.spread + ")"
                                                                              : index.spread);
      if (divisor > 1) return fmt::format("({} + {}) / {}", e, divisor - 1, divisor);
      return "(" + e + ")";
    }
    case lt::Rule::Kind::periodic: {
      std::vector<int64_t> v;
      for (int64_t x : rule.values) v.push_back(div_up(x, divisor));
      const std::string t = array(hint, fits_int(v) ? "int" : "long", v);
      return fmt::format("{}[({}) % {}]", t, index.plain, v.size());
    }
    case lt::Rule::Kind::table: {
      if (rule.values.size() > max_table) {
        double sum = 0;
        for (int64_t x : rule.values) sum += static_cast<double>(x);
        const auto mean = static_cast<int64_t>(std::llround(sum / static_cast<double>(rule.values.size())));
        notes.push_back(fmt::format("{}: {} values differ from instance to instance; their mean {} is used",
                                    hint, rule.values.size(), mean));
        return literal(div_up(mean, divisor));
      }
      std::vector<int64_t> v;
      for (int64_t x : rule.values) v.push_back(div_up(x, divisor));
      const std::string t = array(hint, fits_int(v) ? "int" : "long", v);
      return fmt::format("{}[{}]", t, index.spread);
    }
  }
  return "0";
}

std::string Tables::rules(std::string_view hint, const std::vector<const lt::Rule*>& rules,
                          const Index& index, int64_t divisor, std::vector<std::string>& notes) {
  std::vector<int> ranks;
  for (int r = 0; r < n_ && r < static_cast<int>(rules.size()); ++r)
    if (rules[static_cast<size_t>(r)] != nullptr) ranks.push_back(r);
  if (ranks.empty()) return "0";
  const lt::Rule& first = *rules[static_cast<size_t>(ranks[0])];
  if (std::all_of(ranks.begin(), ranks.end(),
                  [&](int r) { return *rules[static_cast<size_t>(r)] == first; }))
    return one_rule(hint, first, index, divisor, notes);
  std::vector<bool> present(static_cast<size_t>(n_), false);
  for (int r : ranks) present[static_cast<size_t>(r)] = true;
  auto kind_is = [&](std::initializer_list<lt::Rule::Kind> kinds) {
    return std::all_of(ranks.begin(), ranks.end(), [&](int r) {
      return std::find(kinds.begin(), kinds.end(), rules[static_cast<size_t>(r)]->kind) != kinds.end();
    });
  };
  if (kind_is({lt::Rule::Kind::constant})) {
    std::vector<int64_t> v(static_cast<size_t>(n_), 0);
    for (int r : ranks) v[static_cast<size_t>(r)] = div_up(rules[static_cast<size_t>(r)]->base, divisor);
    return ints(hint, v, present);
  }
  if (kind_is({lt::Rule::Kind::constant, lt::Rule::Kind::linear})) {
    std::vector<int64_t> base(static_cast<size_t>(n_), 0), step(static_cast<size_t>(n_), 0);
    for (int r : ranks) {
      base[static_cast<size_t>(r)] = rules[static_cast<size_t>(r)]->base;
      step[static_cast<size_t>(r)] = rules[static_cast<size_t>(r)]->step;
    }
    const std::string e = fmt::format("{} + {} * ({})", ints(std::string(hint) + "_base", base, present),
                                      ints(std::string(hint) + "_step", step, present), index.spread);
    if (divisor > 1) return fmt::format("({} + {}) / {}", e, divisor - 1, divisor);
    return "(" + e + ")";
  }
  // Rules of different kinds: a function of the rank and the instance.
  std::string fn = fmt::format("static long {}(int rank, long i, long j)\n{{\n    (void)i;\n    (void)j;\n    switch (rank) {{\n", kName);
  Index local{"i", "j", index.instances};
  for (int r : ranks)
    fn += fmt::format("    case {}: return {};\n", r,
                      one_rule(fmt::format("{}_r{}", hint, r), *rules[static_cast<size_t>(r)], local,
                               divisor, notes));
  fn += "    default: return 0;\n    }\n}";
  std::string key = fn;
  const std::string f = declare(hint, fn, key);
  return fmt::format("{}(rank, {}, {})", f, index.plain, index.spread);
}

}  // namespace pskel::skeleton::detail

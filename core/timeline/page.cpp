#include "timeline/page.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "timeline/aggregate.h"
#include "timeline/groups.h"
#include "timeline/page_assets.h"
#include "util/json_text.h"

namespace pskel::timeline {
namespace {

using Out = std::back_insert_iterator<std::string>;

// Writes "key":[v0,v1-v0,...] when `delta`, else "key":[v0,v1,...].
template <class Range, class Value>
void write_array(Out out, std::string_view key, const Range& items, Value value, bool delta) {
  fmt::format_to(out, "\"{}\":[", key);
  int64_t previous = 0;
  bool first = true;
  for (const auto& item : items) {
    const int64_t v = value(item);
    if (!first) *out++ = ',';
    fmt::format_to(out, "{}", delta ? v - previous : v);
    previous = v;
    first = false;
  }
  *out++ = ']';
}

int64_t permille(double fraction) {
  return fraction < 0 ? -1 : static_cast<int64_t>(fraction * 1000 + 0.5);
}

int64_t kib(int64_t bytes) { return bytes < 0 ? -1 : bytes / 1024; }

// Small indexes for the functions that occur, in id order.
std::map<uint16_t, int> function_indexes(const Timeline& t) {
  std::map<uint16_t, int> index;
  for (const Lane& lane : t.lanes)
    for (const Call& c : lane.calls) index.emplace(c.function, 0);
  int next = 0;
  for (auto& [id, i] : index) i = next++;
  return index;
}

// `node`: the lane's node's index among the nodes the page holds.
void write_lane(Out out, const Lane& lane, int node, const std::vector<RankUsage>& usage,
                const std::map<uint16_t, int>& fn, int64_t span_ns) {
  const auto& calls = lane.calls;
  fmt::format_to(out, "{{\"rank\":{},\"node\":{},\"begin\":{},\"end\":{},", lane.rank, node,
                 lane.begin_ns, lane.end_ns);
  write_array(out, "start", calls, [](const Call& c) { return c.start_ns; }, true);
  *out++ = ',';
  write_array(out, "dur", calls, [](const Call& c) { return c.duration(); }, false);
  *out++ = ',';
  write_array(out, "fn", calls, [&](const Call& c) { return int64_t{fn.at(c.function)}; }, false);
  *out++ = ',';
  write_array(out, "peer", calls, [](const Call& c) { return int64_t{c.peer}; }, false);
  *out++ = ',';
  write_array(out, "tag", calls, [](const Call& c) { return int64_t{c.tag}; }, false);
  *out++ = ',';
  write_array(out, "bytes", calls, [](const Call& c) { return c.bytes; }, false);
  fmt::format_to(out, ",\"levels\":[");
  bool first = true;
  for (const Level& level : detail_levels(calls, span_ns)) {
    fmt::format_to(out, "{}{{\"bucket\":{},", first ? "" : ",", level.bucket_ns);
    first = false;
    const auto& boxes = level.boxes;
    write_array(out, "start", boxes, [](const Box& b) { return b.start_ns; }, true);
    *out++ = ',';
    write_array(out, "dur", boxes, [](const Box& b) { return b.end_ns - b.start_ns; }, false);
    *out++ = ',';
    write_array(out, "count", boxes, [](const Box& b) { return int64_t{b.count}; }, false);
    *out++ = ',';
    write_array(out, "state", boxes, [](const Box& b) { return int64_t(b.state); }, false);
    *out++ = '}';
  }
  fmt::format_to(out, "],\"usage\":{{");
  write_array(out, "t", usage, [](const RankUsage& u) { return u.t_ns; }, true);
  *out++ = ',';
  write_array(out, "cpu", usage, [](const RankUsage& u) { return permille(u.cpu); }, false);
  *out++ = ',';
  write_array(out, "rss", usage, [](const RankUsage& u) { return kib(u.rss_bytes); }, false);
  fmt::format_to(out, "}}}}");
}

void write_node(Out out, const Node& node) {
  fmt::format_to(out, "{{\"host\":{},\"ranks\":[{}],", json_text(node.host),
                 fmt::join(node.ranks, ","));
  const auto& usage = node.usage;
  write_array(out, "t", usage, [](const NodeUsage& u) { return u.t_ns; }, true);
  *out++ = ',';
  write_array(out, "cpu", usage, [](const NodeUsage& u) { return permille(u.cpu_busy); }, false);
  *out++ = ',';
  write_array(out, "mem", usage, [](const NodeUsage& u) { return kib(u.mem_used_bytes); }, false);
  *out++ = ',';
  write_array(out, "mem_total", usage, [](const NodeUsage& u) { return kib(u.mem_total_bytes); },
              false);
  *out++ = '}';
}

std::string base64(const std::vector<uint8_t>& bytes) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t a = bytes[i];
    const uint32_t b = i + 1 < bytes.size() ? bytes[i + 1] : 0;
    const uint32_t c = i + 2 < bytes.size() ? bytes[i + 2] : 0;
    const uint32_t word = (a << 16) | (b << 8) | c;
    out += kDigits[(word >> 18) & 63];
    out += kDigits[(word >> 12) & 63];
    out += i + 1 < bytes.size() ? kDigits[(word >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kDigits[word & 63] : '=';
  }
  return out;
}

void write_groups(Out out, const GroupSummary& g) {
  fmt::format_to(out,
                 "{{\"size\":{},\"count\":{},\"buckets\":{},\"bucket_ns\":{},\"share\":\"{}\"}}",
                 g.group_size, g.groups, g.buckets, g.bucket_ns, base64(g.share));
}

void replace_all(std::string& text, std::string_view marker, std::string_view with) {
  const size_t at = text.find(marker);
  if (at != std::string::npos) text.replace(at, marker.size(), with);
}

}  // namespace

PageLayout page_layout(const Timeline& t, const PageOptions& options) {
  PageLayout layout;
  const int n = static_cast<int>(t.lanes.size());
  if (t.lanes.size() <= options.max_lanes) {
    for (int r = 0; r < n; ++r) layout.lanes.push_back(r);
    return layout;
  }
  layout.group_size = group_size_for(n, options.max_groups);
  layout.groups = group_count(n, options.max_groups);
  if (options.ranks.empty())
    for (int r = 0; r < n && r < 16; ++r) layout.lanes.push_back(r);
  for (int r : options.ranks)
    if (r >= 0 && r < n) layout.lanes.push_back(r);
  std::sort(layout.lanes.begin(), layout.lanes.end());
  layout.lanes.erase(std::unique(layout.lanes.begin(), layout.lanes.end()), layout.lanes.end());
  return layout;
}

std::string page_data(const Timeline& t, const PageOptions& options) {
  std::string text;
  Out out(text);
  const auto fn = function_indexes(t);
  std::vector<std::string> names;
  std::vector<int> states;
  for (const auto& [id, index] : fn) {
    const trace::FunctionInfo* info = trace::find_function(id);
    names.push_back(json_text(info ? std::string(info->name) : fmt::format("function {}", id)));
    states.push_back(static_cast<int>(state_of(static_cast<trace::FunctionId>(id))));
  }
  std::vector<std::string> state_names;
  for (int s = 0; s < kStateCount; ++s)
    state_names.push_back(json_text(std::string(state_name(static_cast<State>(s)))));
  fmt::format_to(out,
                 "{{\"version\":1,\"program\":{},\"mpi\":{},\"end\":{},\"calls\":{},"
                 "\"interval_ms\":{},\"sampler_cpu_ns\":{},\"states\":[{}],\"functions\":[{}],"
                 "\"function_state\":[{}],\"ranks_total\":{},\"groups\":",
                 json_text(t.program), json_text(t.mpi), t.end_ns, call_count(t),
                 t.sample_interval_ms, t.sampler_cpu_ns, fmt::join(state_names, ","),
                 fmt::join(names, ","), fmt::join(states, ","), t.lanes.size());
  const PageLayout layout = page_layout(t, options);
  std::vector<bool> drawn(t.lanes.size(), false);
  for (int r : layout.lanes) drawn[static_cast<size_t>(r)] = true;
  if (layout.groups > 0)
    write_groups(out, summarize_groups(t, options.max_groups, options.group_buckets));
  else
    fmt::format_to(out, "null");
  // Nodes: those with a drawn rank, with their drawn ranks (lanes are indexed by node there).
  std::vector<int> node_index(t.nodes.size(), -1);
  fmt::format_to(out, ",\"nodes\":[");
  int written = 0;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    Node node = t.nodes[i];
    std::erase_if(node.ranks, [&](int r) { return !drawn[static_cast<size_t>(r)]; });
    if (node.ranks.empty()) continue;
    if (written > 0) *out++ = ',';
    node_index[i] = written++;
    write_node(out, node);
  }
  fmt::format_to(out, "],\"lanes\":[");
  static const std::vector<RankUsage> kNoUsage;
  bool first = true;
  for (size_t i = 0; i < t.lanes.size(); ++i) {
    if (!drawn[i]) continue;
    if (!first) *out++ = ',';
    first = false;
    const Lane& lane = t.lanes[i];
    write_lane(out, lane, node_index[static_cast<size_t>(lane.node)],
               i < t.rank_usage.size() ? t.rank_usage[i] : kNoUsage, fn, t.end_ns);
  }
  fmt::format_to(out, "]}}");
  // Inside <script>, "</script>" or "<!--" in a string (a host or program name) would end or
  // change the element; \u003c is the same character to a JSON parser.
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    if (c == '<')
      escaped += "\\u003c";
    else
      escaped += c;
  }
  return escaped;
}

std::string timeline_page(const Timeline& t, const PageOptions& options) {
  std::string page(kPageHtml);
  replace_all(page, "<!--pskel:style-->", fmt::format("<style>\n{}</style>", kPageCss));
  replace_all(page, "<!--pskel:data-->",
              fmt::format("<script type=\"application/json\" id=\"pskel-data\">{}</script>",
                          page_data(t, options)));
  replace_all(page, "<!--pskel:script-->", fmt::format("<script>\n{}</script>", kPageJs));
  return page;
}

}  // namespace pskel::timeline

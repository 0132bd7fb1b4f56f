// Chrome trace-event JSON (the format of chrome://tracing, which Perfetto imports): times in
// microseconds with ns precision, pid = node index + 1, tid = world rank + 1 (ids of 0 are
// avoided: some importers reserve them), names given by metadata ("M") events.
#include <fmt/format.h>

#include "timeline/page.h"
#include "util/json_text.h"

namespace pskel::timeline {
namespace {

using Out = std::back_insert_iterator<std::string>;

std::string micros(int64_t ns) {
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", magnitude / 1000, magnitude % 1000);
}

void separator(Out out, bool& first) {
  if (!first) fmt::format_to(out, ",\n");
  first = false;
}

void counter(Out out, bool& first, int pid, const std::string& name, int64_t t_ns,
             std::string_view series, double value) {
  separator(out, first);
  fmt::format_to(out, R"({{"ph":"C","pid":{},"name":{},"ts":{},"args":{{"{}":{:.3f}}}}})", pid,
                 json_text(name), micros(t_ns), series, value);
}

}  // namespace

std::string perfetto_json(const Timeline& t) {
  std::string text;
  Out out(text);
  fmt::format_to(out, "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"program\":{},\"mpi\":{}}},"
                      "\"traceEvents\":[\n",
                 json_text(t.program), json_text(t.mpi));
  bool first = true;
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const int pid = static_cast<int>(n) + 1;
    separator(out, first);
    fmt::format_to(out, R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})",
                   pid, json_text("node " + t.nodes[n].host));
    separator(out, first);
    fmt::format_to(out,
                   R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})",
                   pid, n);
    for (const NodeUsage& u : t.nodes[n].usage) {
      if (u.cpu_busy >= 0) counter(out, first, pid, "node CPU busy %", u.t_ns, "busy", u.cpu_busy * 100);
      if (u.mem_used_bytes >= 0)
        counter(out, first, pid, "node memory used MiB", u.t_ns, "used",
                static_cast<double>(u.mem_used_bytes) / (1 << 20));
    }
  }
  for (const Lane& lane : t.lanes) {
    const int pid = lane.node + 1;
    const int tid = lane.rank + 1;
    separator(out, first);
    fmt::format_to(out,
                   R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"rank {}"}}}})",
                   pid, tid, lane.rank);
    separator(out, first);
    fmt::format_to(out,
                   R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
                   pid, tid, lane.rank);
    for (const Call& c : lane.calls) {
      const trace::FunctionInfo* info = trace::find_function(c.function);
      separator(out, first);
      fmt::format_to(out,
                     R"({{"ph":"X","pid":{},"tid":{},"name":"{}","cat":"{}","ts":{},"dur":{},)"
                     R"("args":{{"peer":{},"tag":{},"bytes":{}}}}})",
                     pid, tid, info ? info->name : "unknown", state_name(c.state),
                     micros(c.start_ns), micros(c.duration()), c.peer, c.tag, c.bytes);
    }
    if (static_cast<size_t>(lane.rank) < t.rank_usage.size()) {
      for (const RankUsage& u : t.rank_usage[static_cast<size_t>(lane.rank)]) {
        const std::string name = fmt::format("rank {} ", lane.rank);
        if (u.cpu >= 0) counter(out, first, pid, name + "CPU %", u.t_ns, "cpu", u.cpu * 100);
        if (u.rss_bytes >= 0)
          counter(out, first, pid, name + "RSS MiB", u.t_ns, "rss",
                  static_cast<double>(u.rss_bytes) / (1 << 20));
      }
    }
  }
  fmt::format_to(out, "\n]}}\n");
  return text;
}

}  // namespace pskel::timeline

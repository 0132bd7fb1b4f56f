// pskel place DIR --nodes N --cores-per-node C: where to run each rank (seed 002's task
// allocation), written as a Slurm SLURM_HOSTFILE. A thin shell over core/place.
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>

#include "commands.h"
#include "util/json_text.h"
#include "place/from_trace.h"
#include "place/place.h"
#include "trace/reader.h"

namespace pskel::cli {
namespace {

struct PlaceOptions {
  std::string dir;
  int nodes = 0;
  int cores_per_node = 0;
  std::string hostfile;
  std::vector<std::string> hosts;
  double bandwidth = place::kDefaultBandwidth;
  bool json = false;
};

std::string check_hosts(const PlaceOptions& opt) {
  if (opt.hosts.empty()) return {};
  if (static_cast<int>(opt.hosts.size()) != opt.nodes)
    return fmt::format("--hosts names {} hosts, but --nodes is {}", opt.hosts.size(), opt.nodes);
  std::set<std::string> seen;
  for (const std::string& h : opt.hosts) {
    if (h.empty() || h.find_first_of(" \t\r\n") != std::string::npos)
      return fmt::format("--hosts: \"{}\" is not a host name", h);
    if (!seen.insert(h).second) return fmt::format("--hosts names {} twice", h);
  }
  return {};
}

nlohmann::json figures_json(const place::Figures& f, const std::vector<std::string>& hosts) {
  return {{"inter_node_bytes", f.inter_node_bytes},
          {"max_node_load_seconds", f.max_load_seconds},
          {"most_loaded_node", hosts[f.most_loaded_node]},
          {"most_loaded_node_index", f.most_loaded_node},
          {"node_load_seconds", f.load_seconds}};
}

std::string write_hostfile(const std::string& path, const place::Assignment& assignment,
                           const std::vector<std::string>& hosts) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return fmt::format("{}: cannot write the hostfile: {}", path, std::strerror(errno));
  for (place::Node n : assignment) out << hosts[n] << '\n';
  out.close();
  if (!out) return fmt::format("{}: cannot write the hostfile", path);
  return {};
}

int run_place(const PlaceOptions& opt) {
  if (std::string problem = check_hosts(opt); !problem.empty()) return usage_error(problem);
  std::vector<std::string> hosts = opt.hosts;
  if (hosts.empty())
    for (int n = 0; n < opt.nodes; ++n) hosts.push_back(fmt::format("node{}", n));

  std::optional<place::WorkloadBuilder> builder;  // a rank at a time: never the whole trace
  auto trace = trace::read_trace_dir(opt.dir, {}, [&](trace::RankTrace& rank) {
    if (!builder) builder.emplace(rank.header.world_size, opt.dir);
    builder->add(rank);
    rank.drop_records();
  });
  if (!trace) return fail(trace.error().line());
  auto costs = builder->finish();
  if (!costs) return fail(costs.error().line());
  const place::Machine machine{opt.nodes, opt.cores_per_node, opt.bandwidth};
  auto found = place::place(costs.value().workload, machine);
  if (!found) return fail(fmt::format("{}: {}", opt.dir, found.error().what));
  const place::Placement& p = found.value();

  if (!opt.hostfile.empty())
    if (std::string problem = write_hostfile(opt.hostfile, p.assignment, hosts); !problem.empty())
      return fail(problem);

  const place::TraceWorkload& c = costs.value();
  const size_t ranks = p.assignment.size();
  if (opt.json) {
    std::vector<std::string> rank_hosts;
    for (place::Node n : p.assignment) rank_hosts.push_back(hosts[n]);
    const nlohmann::json out = {
        {"trace_dir", opt.dir},
        {"ranks", ranks},
        {"nodes", opt.nodes},
        {"cores_per_node", opt.cores_per_node},
        {"bandwidth_bytes_per_second", opt.bandwidth},
        {"compute_seconds", c.workload.compute_seconds},
        {"p2p_messages", c.messages},
        {"p2p_bytes", c.message_bytes},
        {"collective_calls_not_counted", c.collective_calls},
        {"found", figures_json(p.figures, hosts)},
        {"block", figures_json(p.block, hosts)},
        {"cyclic", figures_json(p.cyclic, hosts)},
        {"start", p.start},
        {"moves", p.stats.moves},
        {"swaps", p.stats.swaps},
        {"traffic_steps", p.stats.traffic_steps},
        {"assignment", p.assignment},
        {"hosts", rank_hosts},
        {"hostfile", opt.hostfile.empty() ? nlohmann::json(nullptr) : nlohmann::json(opt.hostfile)},
    };
    fmt::print("{}\n", json_text(out, 2));
    return 0;
  }
  fmt::print("trace        {} ({} ranks)\n", opt.dir, ranks);
  fmt::print("machine      {} nodes x {} cores, {:g} bytes/s per node link\n", opt.nodes,
             opt.cores_per_node, opt.bandwidth);
  fmt::print(
      "traffic      {} point-to-point messages, {:.0f} bytes ({} collective calls not counted)\n\n",
      c.messages, c.message_bytes, c.collective_calls);
  fmt::print("{:<10} {:>18} {:>20}  {}\n", "placement", "inter-node bytes", "max node load (s)",
             "most loaded node");
  const auto row = [&](const char* name, const place::Figures& f) {
    fmt::print("{:<10} {:>18.0f} {:>20.6f}  {}\n", name, f.inter_node_bytes, f.max_load_seconds,
               hosts[f.most_loaded_node]);
  };
  row("found", p.figures);
  row("block", p.block);
  row("cyclic", p.cyclic);
  fmt::print("\nfound from the {} start: {} moves, {} swaps, {} traffic steps\n", p.start,
             p.stats.moves, p.stats.swaps, p.stats.traffic_steps);
  std::vector<std::string> members(opt.nodes);
  for (size_t r = 0; r < ranks; ++r) members[p.assignment[r]] += fmt::format(" {}", r);
  for (int n = 0; n < opt.nodes; ++n)
    if (!members[n].empty()) fmt::print("{:<12} ranks{}\n", hosts[n], members[n]);
  if (!opt.hostfile.empty())
    fmt::print("\nhostfile     {} (export SLURM_HOSTFILE={}; srun --distribution=arbitrary ...)\n",
               opt.hostfile, opt.hostfile);
  return 0;
}

// CLI11's PositiveNumber prints its range up to DBL_MAX in full: say it plainly instead.
// `most` keeps node counts to what a host list and the per-node figures can hold.
CLI::Validator positive(double most = HUGE_VAL) {
  return CLI::Validator(
      [most](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !(value > 0) || !std::isfinite(value))
          return fmt::format("{} is not a positive number", text);
        if (value > most) return fmt::format("{} is more than {:.0f}", text, most);
        return {};
      },
      "POSITIVE");
}

constexpr double kMostNodes = 1 << 20;

}  // namespace

Subcommand add_place_command(CLI::App& app) {
  auto opt = std::make_shared<PlaceOptions>();
  CLI::App* cmd = app.add_subcommand(
      "place",
      "Choose a node for each rank (compute + inter-node traffic); write a SLURM_HOSTFILE");
  cmd->add_option("DIR", opt->dir, "Trace directory (written by `pskel run`)")->required();
  cmd->add_option("--nodes", opt->nodes, "Number of nodes")
      ->required()
      ->check(positive(kMostNodes));
  cmd->add_option("--cores-per-node", opt->cores_per_node, "Ranks a node can hold")
      ->required()
      ->check(positive());
  cmd->add_option("-o,--hostfile", opt->hostfile,
                  "Write the placement here: line i is the host of rank i (for SLURM_HOSTFILE)");
  cmd->add_option("--hosts", opt->hosts,
                  "Host names, comma-separated, one per node (default node0..)")
      ->delimiter(',');
  cmd->add_option("--bandwidth", opt->bandwidth,
                  "Bytes per second of a node's link to the others (default 1e10)")
      ->check(positive());
  cmd->add_flag(
      "--json", opt->json,
      "Print JSON (keys: found, block, cyclic with inter_node_bytes, max_node_load_seconds, "
      "most_loaded_node; assignment, hosts, hostfile)");
  return {cmd, [opt]() { return run_place(*opt); }};
}

}  // namespace pskel::cli

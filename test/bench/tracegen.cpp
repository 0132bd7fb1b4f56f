// tracegen: writes a synthetic trace of a large MPI job in pskel's own format (rank files and
// meta.json, docs/trace-format.md), one rank at a time, so that memory holds one rank whatever
// the job's size. The patterns are test/unit/synthetic_trace.h's. For test/bench/scale and for
// trying pskel on job sizes no machine here can run.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "meta_writer.h"
#include "synthetic_trace.h"
#include "trace/gaps.h"
#include "trace/reader.h"
#include "trace_fields.h"
#include "trace_writer.h"

namespace {

namespace tr = pskel::trace;
using pskel::test::GapSource;

constexpr int64_t kBaseRealtimeNs = 1'780'000'000'000'000'000;
constexpr double kWorkNsPerUnit = 2.0;

// The compute gaps of a real trace, all ranks together (zeros left out: a call right after
// another is not a compute).
GapSource gaps_from(const std::string& dir) {
  auto trace = tr::read_trace_dir(dir);
  if (!trace) {
    fmt::print(stderr, "tracegen: {}: {}\n", trace.error().file, trace.error().what);
    std::exit(1);
  }
  std::vector<int64_t> samples;
  for (const tr::RankTrace& rank : trace.value().ranks)
    for (int64_t gap : tr::compute_gaps(rank))
      if (gap > 0) samples.push_back(gap);
  if (samples.empty()) {
    fmt::print(stderr, "tracegen: {}: no compute gaps in the trace\n", dir);
    std::exit(1);
  }
  return GapSource(std::move(samples));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write a synthetic trace of an N-rank MPI job in pskel's format"};
  std::string pattern_name = "halo3d", out, gaps_dir;
  int32_t ranks = 16, ranks_per_node = 32;
  int64_t events = 1000;
  uint64_t seed = 1;
  app.add_option("--pattern", pattern_name, "halo3d, halo3d-skip, transpose, master-worker or wavefront")
      ->capture_default_str();
  app.add_option("--ranks", ranks, "Ranks (MPI_COMM_WORLD's size)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--events", events, "MPI calls per rank, about (a worker of master-worker: fewer)")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  app.add_option("--ranks-per-node", ranks_per_node, "Ranks given one host name")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", seed, "Seed of the gaps and of the masters' arrival orders")
      ->capture_default_str();
  app.add_option("--gaps-from", gaps_dir, "Draw compute gaps from this real trace's gaps");
  app.add_option("-o,--output", out, "Trace directory to create")->required();
  CLI11_PARSE(app, argc, argv);

  const auto pattern = pskel::test::pattern_named(pattern_name);
  if (!pattern) {
    fmt::print(stderr, "tracegen: unknown pattern '{}'\n", pattern_name);
    return 1;
  }
  const GapSource gaps = gaps_dir.empty() ? GapSource() : gaps_from(gaps_dir);
  if (::mkdir(out.c_str(), 0755) != 0) {
    fmt::print(stderr, "tracegen: {}: cannot create ({})\n", out, std::strerror(errno));
    return 1;
  }
  const auto started = std::chrono::steady_clock::now();
  const std::string run_id = fmt::format("synthetic-{}-{}", pattern_name, seed);
  pskel::tracer::MetaInfo meta;
  meta.dir = out;
  meta.run_id = run_id;
  meta.flavour = static_cast<uint32_t>(tr::Flavour::mpich);
  meta.ranks = ranks;
  meta.hosts.assign(static_cast<size_t>(ranks) * 64, '\0');
  meta.work_ns_per_unit.assign(static_cast<size_t>(ranks), kWorkNsPerUnit);
  meta.start_realtime_ns = kBaseRealtimeNs;
  meta.complete = true;
  uint64_t bytes = 0;
  int64_t end_ns = 0;
  for (int32_t r = 0; r < ranks; ++r) {
    const tr::RankTrace rank = pskel::test::synthetic_rank(*pattern, r, ranks, events, seed, gaps);
    const std::string host = fmt::format("node{:05}", r / ranks_per_node);
    pskel::test::HeaderFields fields;
    fields.rank = r;
    fields.world_size = ranks;
    fields.flavour = tr::Flavour::mpich;
    fields.base_realtime_ns = kBaseRealtimeNs;
    fields.work_ns_per_unit = kWorkNsPerUnit;
    fields.pid = static_cast<uint32_t>(1000 + r % ranks_per_node);
    fields.run_id = run_id;
    fields.hostname = host;
    const tr::FileHeader h = pskel::test::file_header(fields);
    std::memcpy(meta.hosts.data() + static_cast<size_t>(r) * 64, host.data(), host.size());

    pskel::tracer::TraceWriter writer;
    const std::string path = fmt::format("{}/{}{}{}", out, tr::kRankFilePrefix, r, tr::kRankFileSuffix);
    if (!writer.open(path, h, size_t{1} << 20)) {
      fmt::print(stderr, "tracegen: {}\n", writer.error());
      return 1;
    }
    for (size_t i = 0; i < rank.records.size(); ++i) {
      const auto aux = rank.aux_of(i);
      writer.append(rank.records[i], aux.data(), aux.size());
    }
    const int64_t rank_end = rank.records.empty() ? 0 : rank.records.back().t_start;
    end_ns = std::max(end_ns, rank_end);
    if (!writer.close(rank_end, 0, 0)) {
      fmt::print(stderr, "tracegen: {}\n", writer.error());
      return 1;
    }
    meta.total_records += rank.records.size();
    bytes += sizeof h + rank.records.size() * sizeof(tr::Record) + rank.aux.size() * 8;
  }
  meta.end_realtime_ns = kBaseRealtimeNs + end_ns;
  if (!pskel::tracer::write_meta(meta)) {
    fmt::print(stderr, "tracegen: {}/meta.json: cannot write\n", out);
    return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print("tracegen: {} ranks of {}, {} records ({:.1f} MB) in {} in {:.1f} s\n", ranks,
             pattern_name, meta.total_records, static_cast<double>(bytes) / 1e6, out, seconds);
  return 0;
}

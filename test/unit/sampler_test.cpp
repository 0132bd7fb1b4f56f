// The tracer's resource sampler (core/tracer/sampler.h) driven by hand-made trace-clock times:
// its calibration probes, the memory probes of a process whose data outgrew the caches, and
// what it writes (read back with the samples reader, trace/samples.h).
#include "sampler.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test_support.h"
#include "trace/samples.h"

using namespace pskel::test;
using pskel::tracer::Sampler;

namespace {

constexpr char kRunId[] = "0123456789abcdef-1";
constexpr int64_t kMs = 1000000;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// 20 samples 10 ms apart on the trace clock, each at a call's end, with the probes sized for a
// work unit of 200 ns (0.5 ms each), then the end of the run.
pskel::trace::SampleSeries sample_a_run(const std::string& path, Sampler& sampler, int calls) {
  REQUIRE(sampler.start(path.c_str(), 0, kRunId, 10, 0));
  sampler.size_probes(200.0);
  for (int i = 1; i <= calls; ++i) sampler.at_call_end(i * 10 * kMs);
  sampler.stop((calls + 1) * 10 * kMs);
  auto series = pskel::trace::parse_samples(read_text(path), path, 0, kRunId);
  REQUIRE_MESSAGE(series.ok(), series.error().line());
  return std::move(series).value();
}

}  // namespace

TEST_CASE("sampler: a process past 32 MB probes memory with every sample, its set left out") {
  // The test's own data: 48 MB, resident, so that the sampler takes the process for one whose
  // data outgrew the caches.
  std::vector<char> data(size_t{48} << 20);
  for (size_t i = 0; i < data.size(); i += 4096) data[i] = 1;
  TempDir dir;
  Sampler sampler;
  const auto series = sample_a_run(dir.path() + "/samples.0", sampler, 20);
  const int64_t resident_after = resident_bytes();  // the probe's set is freed by now

  CHECK(sampler.probe_ns_per_unit() > 0);
  const double ns_per_byte = sampler.probe_ns_per_byte();
  CHECK(ns_per_byte > 1e-4);
  CHECK(ns_per_byte < 10);
  // One p line per sample after the first: the pause of both probes.
  CHECK(series.probes.size() == 20);
  for (const auto& probe : series.probes) CHECK(probe.ns > 0);
  // The samples' resident memory is the program's: the 16 MB set is not in it (sampled while
  // the set existed, and compared with the process after it was freed).
  REQUIRE(series.samples.size() >= 2);
  const int64_t last_rss = series.samples.back().rss_bytes;
  CHECK(last_rss < resident_after + (int64_t{4} << 20));
  CHECK(last_rss > resident_after - (int64_t{4} << 20));
  CHECK(data[4096] == 1);
}

TEST_CASE("sampler: memory probes off, or too few samples, give no price of a byte") {
  std::vector<char> data(size_t{48} << 20);
  for (size_t i = 0; i < data.size(); i += 4096) data[i] = 1;
  TempDir dir;
  Sampler off;
  off.probe_memory(false);
  sample_a_run(dir.path() + "/samples.0", off, 20);
  CHECK(off.probe_ns_per_byte() == -1);
  CHECK(off.probe_ns_per_unit() > 0);

  Sampler short_run;
  sample_a_run(dir.path() + "/samples.1", short_run, pskel::tracer::kMinProbes - 1);
  CHECK(short_run.probe_ns_per_byte() == -1);
  CHECK(data[4096] == 1);
}

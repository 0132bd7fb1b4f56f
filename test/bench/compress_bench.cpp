// Loop-compression benchmark (docs/design.md: 324,355 events <= 0.05 s; 10^7 events <= 2 s in
// <= 1 GB). Synthetic traces with nested loops, noise and tails; each case runs in a forked
// child so that its peak RSS is its own, and the seed's quadratic loop finder runs on the same
// input in another child where it fits the time budget. Figures, not a pass/fail test.
//
// Usage: compress_bench [--smoke] [--baseline-budget SECONDS]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compress/compress.h"

namespace {

namespace cz = pskel::compress;
using Symbols = std::vector<cz::Symbol>;

// splitmix64: the same traces on every platform.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint32_t below(uint32_t bound) {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return static_cast<uint32_t>((z ^ (z >> 31)) % bound);
  }

 private:
  uint64_t state_;
};

void noise(Symbols& out, Random& rng, size_t count, uint32_t first, uint32_t kinds) {
  for (size_t i = 0; i < count; ++i) out.push_back(first + rng.below(kinds));
}

// A stencil-like code: a main loop whose iterations run four pipeline stages, each a loop
// over planes of a halo exchange ((Irecv Isend)^4 Waitall Send), then an Allreduce; every
// 10th iteration checks the residual, every 50th writes a checkpoint; a stray Iprobe now and
// then breaks the outer loops' regularity. About 250 iterations whatever the size; a noisy
// prologue and an epilogue fill up to exactly n events. With `noise_per_mille`, that many
// random events in a thousand are inserted everywhere (unmatched or reordered calls).
Symbols nested_trace(size_t n, uint64_t seed, uint32_t noise_per_mille = 0) {
  Random rng(seed);
  Symbols out;
  out.reserve(n + n / 8);
  noise(out, rng, std::min<size_t>(100, n / 4), 0, 40);
  const size_t planes = std::max<size_t>(2, n / 250 / 40);
  Symbols body;
  for (uint32_t stage = 0; stage < 4; ++stage) {
    const uint32_t s = 100 + 10 * stage;
    for (size_t plane = 0; plane < planes; ++plane) {
      for (int d = 0; d < 4; ++d) body.insert(body.end(), {s, s + 1});
      body.insert(body.end(), {s + 2, s + 3});
    }
  }
  body.push_back(200);
  const size_t epilogue = std::min<size_t>(60, n / 4);
  for (size_t iteration = 1; out.size() + body.size() + 4 + epilogue <= n; ++iteration) {
    for (const cz::Symbol x : body) {
      out.push_back(x);
      if (noise_per_mille && rng.below(1000) < noise_per_mille) out.push_back(rng.below(40));
    }
    if (iteration % 10 == 0) out.insert(out.end(), {201, 202});
    if (iteration % 50 == 0) out.insert(out.end(), {203, 204});
    if (rng.below(40) == 0) out.insert(out.end() - static_cast<long>(rng.below(body.size())), 205);
  }
  if (out.size() > n) out.resize(n - epilogue);
  noise(out, rng, n - out.size(), 0, 40);
  return out;
}

Symbols random_trace(size_t n, uint64_t seed) {
  Random rng(seed);
  Symbols out;
  noise(out, rng, n, 0, 1000);
  return out;
}

// One call repeated, another call, the same loop again: (Send)^k Barrier (Send)^k. Each position
// of the first loop matches the second for all but one symbol without being a run: the hostile
// case for direct comparison, which the run finder bounds (core/compress/README.md).
Symbols twin_loops(size_t n) {
  Symbols out(n / 2, 0);
  out.push_back(1);
  out.resize(n, 0);
  return out;
}

// Shaped like NPB LU class C's merged trace (324,355 events): 250 SSOR iterations, each an
// exchange of the right-hand side (17 calls) and the lower and upper triangular sweeps over 160
// planes (Recv Recv Send Send each, with other peers in each sweep); a prologue, a first
// iteration with a timer barrier, and a verification epilogue.
Symbols lu_trace() {
  Random rng(7);
  Symbols out;
  noise(out, rng, 60, 0, 30);
  for (int iteration = 0; iteration < 250; ++iteration) {
    for (uint32_t call = 0; call < 17; ++call) out.push_back(40 + call);
    for (int k = 0; k < 160; ++k) out.insert(out.end(), {60, 61, 62, 63});
    for (int k = 0; k < 160; ++k) out.insert(out.end(), {64, 65, 66, 67});
    if (iteration == 0) out.insert(out.end(), {68, 69});
  }
  noise(out, rng, 324355 - out.size(), 0, 30);
  return out;
}

// The seed's O(n^2) baseline, written the straightforward way: at each position try every
// period, fold the one covering the most symbols (its body folded the same way first), move
// past it; repeat passes until one folds nothing.
class QuadraticFolder {
 public:
  explicit QuadraticFolder(cz::Symbol first_fresh) : first_fresh_(first_fresh) {}

  Symbols fold(Symbols s) {
    for (bool changed = true; changed;) {
      changed = false;
      Symbols out;
      for (size_t i = 0; i < s.size();) {
        size_t best_period = 0, best_count = 0;
        for (size_t p = 1; i + 2 * p <= s.size(); ++p) {
          size_t count = 1;
          while (i + (count + 1) * p <= s.size() &&
                 std::equal(s.begin() + i, s.begin() + i + p, s.begin() + i + count * p))
            ++count;
          if (count >= 2 && count * p > best_count * best_period) {
            best_period = p;
            best_count = count;
          }
        }
        if (best_count == 0) {
          out.push_back(s[i++]);
          continue;
        }
        Symbols body = fold(Symbols(s.begin() + i, s.begin() + i + best_period));
        out.push_back(loop(std::move(body), best_count));
        i += best_period * best_count;
        changed = true;
      }
      s.swap(out);
    }
    return s;
  }

  uint64_t leaves(const Symbols& s) const {
    uint64_t total = 0;
    for (const cz::Symbol x : s) total += x < first_fresh_ ? 1 : leaves(bodies_[x - first_fresh_]);
    return total;
  }

 private:
  cz::Symbol loop(Symbols body, size_t count) {
    body.push_back(static_cast<cz::Symbol>(count));  // the key: body and count
    const auto [it, added] =
        ids_.try_emplace(body, first_fresh_ + static_cast<cz::Symbol>(bodies_.size()));
    if (added) {
      body.pop_back();
      bodies_.push_back(std::move(body));
    }
    return it->second;
  }

  cz::Symbol first_fresh_;
  std::map<Symbols, cz::Symbol> ids_;
  std::vector<Symbols> bodies_;
};

struct Measure {
  double seconds = 0;       // wall clock
  double cpu_seconds = 0;   // this process's CPU time: less disturbed by other load
  uint64_t compressed = 0;
  int rounds = 0;
  bool round_trip = false;
  long peak_kb = 0;
};

// Runs `work` in a child; what it returns comes back through a pipe, its peak RSS from wait4.
Measure in_child(const std::function<Measure()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const Measure m = work();
    const bool written = ::write(fds[1], &m, sizeof m) == static_cast<ssize_t>(sizeof m);
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  Measure m;
  const bool got = ::read(fds[0], &m, sizeof m) == static_cast<ssize_t>(sizeof m);
  ::close(fds[0]);
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "compress_bench: a measurement failed\n");
    std::exit(1);
  }
  m.peak_kb = usage.ru_maxrss;
  return m;
}

struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = cpu_now();

  static double cpu_now() {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  void stop(Measure& m) const {
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    m.cpu_seconds = cpu_now() - cpu;
  }
};

Measure measure_pskel(const std::function<Symbols()>& make) {
  return in_child([&] {
    const Symbols input = make();
    cz::CompressStats stats;
    const Clock clock;
    const cz::Sequence tree = cz::compress(input, &stats);
    Measure m;
    clock.stop(m);
    m.compressed = cz::compressed_length(tree);
    m.rounds = stats.rounds;
    m.round_trip = cz::expand(tree) == input;
    return m;
  });
}

Measure measure_quadratic(const std::function<Symbols()>& make) {
  return in_child([&] {
    const Symbols input = make();
    QuadraticFolder folder(*std::ranges::max_element(input) + 1);
    const Clock clock;
    const Symbols folded = folder.fold(input);
    Measure m;
    clock.stop(m);
    m.compressed = folder.leaves(folded);
    m.round_trip = true;
    return m;
  });
}

struct Case {
  std::string name;
  size_t n;
  std::function<Symbols()> make;
};

}  // namespace

int main(int argc, char** argv) {
  bool smoke = false;
  double budget = 30;
  std::string only;  // run the cases whose name starts with this (for profiling one)
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      smoke = true;
    } else if (std::strcmp(argv[i], "--baseline-budget") == 0 && i + 1 < argc) {
      budget = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--smoke] [--baseline-budget SECONDS] [--case NAME]\n",
                   argv[0]);
      return 2;
    }
  }
  std::vector<Case> cases;
  const std::vector<size_t> sizes =
      smoke ? std::vector<size_t>{1000, 10000} : std::vector<size_t>{10000, 100000, 1000000, 10000000};
  for (const size_t n : sizes) {
    cases.push_back({"nested loops", n, [n] { return nested_trace(n, n); }});
    if (!smoke && n == 100000) cases.push_back({"LU-shaped", 324355, lu_trace});
  }
  for (const size_t n : sizes) {
    if (n <= 1000000) cases.push_back({"noisy, 2%", n, [n] { return nested_trace(n, n, 20); }});
  }
  for (const size_t n : sizes) {
    if (n <= 1000000) cases.push_back({"no loops", n, [n] { return random_trace(n, n); }});
  }
  for (const size_t n : sizes) {
    if (n >= 10000) cases.push_back({"loop|call|loop", n, [n] { return twin_loops(n); }});
  }

  std::printf("loop compression: pskel::compress (probes, Lyndon roots, Algorithm 4) vs the "
              "quadratic loop finder\n%s; baseline where its predicted time <= %.0f s; "
              "speedup in CPU time\n\n",
              smoke ? "smoke run" : "one run per case", budget);
  std::printf("%-13s %9s %8s %8s %8s %10s %6s %3s %11s %9s %10s\n", "case", "events", "time s",
              "cpu s", "peak MB", "compressed", "rounds", "ok", "quadratic s", "speedup",
              "quad. len");
  std::map<std::string, double> quadratic_per_n2;  // per family, last measured: s / n^2
  for (const Case& c : cases) {
    if (!c.name.starts_with(only)) continue;
    const Measure ours = measure_pskel(c.make);
    std::printf("%-13s %9zu %8.3f %8.3f %8.1f %10llu %6d %3s", c.name.c_str(), c.n, ours.seconds,
                ours.cpu_seconds, static_cast<double>(ours.peak_kb) / 1024.0,
                static_cast<unsigned long long>(ours.compressed), ours.rounds,
                ours.round_trip ? "yes" : "NO");
    const double n2 = static_cast<double>(c.n) * static_cast<double>(c.n);
    double& per_n2 = quadratic_per_n2[c.name];
    if (per_n2 == 0 || per_n2 * n2 <= budget) {
      const Measure base = measure_quadratic(c.make);
      per_n2 = base.cpu_seconds / n2;
      std::printf(" %11.3f %8.1fx %10llu\n", base.cpu_seconds,
                  base.cpu_seconds / std::max(ours.cpu_seconds, 1e-9),
                  static_cast<unsigned long long>(base.compressed));
    } else {
      std::printf(" %11s %9s %10s\n", "-", "-", "-");
    }
    std::fflush(stdout);
    if (!ours.round_trip) return 1;
  }
  return 0;
}

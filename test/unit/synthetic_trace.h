// Synthetic traces of large jobs, one rank at a time: four communication patterns of real MPI
// programs (3-D halo exchange, all-to-all transpose, master/worker, wavefront) for any rank
// count, with compute gaps drawn from a distribution or from a real trace's gaps. For the scale
// benchmark (tracegen writes them as files) and for tests of the merge and the skeleton at sizes
// no machine here can run. A rank depends only on its arguments, so ranks can be made one at a
// time, in any order, by any process.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "trace_builder.h"

namespace pskel::test {

// halo3d: every rank exchanges with six neighbours, MPI_PROC_NULL past the domain's edge (what
// MPI_Cart_shift gives); halo3d-skip: ranks at an edge skip those calls instead, so ranks differ
// in their calls (27 kinds of rank: corners, edges, faces, interior).
enum class Pattern { halo3d, halo3d_skip, transpose, master_worker, wavefront };

inline constexpr std::array<std::string_view, 5> kPatternNames = {
    "halo3d", "halo3d-skip", "transpose", "master-worker", "wavefront"};

inline std::optional<Pattern> pattern_named(std::string_view name) {
  for (size_t i = 0; i < kPatternNames.size(); ++i)
    if (kPatternNames[i] == name) return static_cast<Pattern>(i);
  return std::nullopt;
}

// Compute gaps in ns. Without samples: log-normal around `median_ns` with sigma 0.3 (about the
// spread of the stencil test program's gaps on an idle machine), capped at 3x the median. With
// samples (a real trace's gaps): drawn uniformly from them.
class GapSource {
 public:
  explicit GapSource(int64_t median_ns = 200'000) : median_(median_ns) {}
  explicit GapSource(std::vector<int64_t> samples) : samples_(std::move(samples)) {
    std::sort(samples_.begin(), samples_.end());
    median_ = samples_.empty() ? 200'000 : samples_[samples_.size() / 2];
  }
  int64_t draw(std::mt19937_64& rng) const {
    if (!samples_.empty())
      return samples_[std::uniform_int_distribution<size_t>(0, samples_.size() - 1)(rng)];
    std::normal_distribution<double> normal(0.0, 0.3);
    const double g = static_cast<double>(median_) * std::exp(normal(rng));
    return std::min(static_cast<int64_t>(g), 3 * median_);
  }
  // What one compute of a step budgets: draw() stays below it but for a rare tail.
  int64_t budget() const {
    return samples_.empty() ? 3 * median_ : samples_[samples_.size() * 99 / 100];
  }

 private:
  int64_t median_;
  std::vector<int64_t> samples_;
};

// `n` split into `dims` factors as equal as possible, largest first (as MPI_Dims_create does).
inline std::vector<int> balanced_dims(int n, int dims) {
  std::vector<int> primes;
  for (int p = 2; n > 1; ++p)
    for (; n % p == 0; n /= p) primes.push_back(p);
  std::vector<int> out(static_cast<size_t>(dims), 1);
  for (auto p = primes.rbegin(); p != primes.rend(); ++p)
    *std::min_element(out.begin(), out.end()) *= *p;
  std::sort(out.rbegin(), out.rend());
  return out;
}

// Ranks per master in master/worker: a master serving every rank of a 16,384-rank job would be
// the whole trace; real codes split the work hierarchically.
inline constexpr int32_t kMasterGroup = 64;

// One rank of a synthetic run: MPI_Init, about `events` calls (a master/worker worker fewer:
// its master makes them), MPI_Finalize. Time advances in steps every rank shares, so a wait
// absorbs the imbalance of the computes before it, as in a real bulk-synchronous run.
inline tr::RankTrace synthetic_rank(Pattern pattern, int32_t rank, int32_t ranks, int64_t events,
                                    uint64_t seed, const GapSource& gaps) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(rank));
  constexpr int64_t kCall = 3'000;  // ns a call that does not wait takes
  const int64_t step = gaps.budget() + 8 * kCall;
  RankBuilder b(rank, ranks);
  b.timing(0, 20'000).add(Fn::MPI_Init);
  int64_t clock = b.now();  // the shared clock: the end of the current step
  auto computed = [&]() -> RankBuilder& { return b.timing(gaps.draw(rng), kCall); };
  auto at_once = [&]() -> RankBuilder& { return b.timing(0, kCall); };

  switch (pattern) {
    case Pattern::halo3d:
    case Pattern::halo3d_skip: {  // per iteration: compute, Irecv and Isend per face, Waitall
      const std::vector<int> d = balanced_dims(ranks, 3);
      const int x = rank % d[0], y = rank / d[0] % d[1], z = rank / (d[0] * d[1]);
      const int32_t strides[3] = {1, d[0], d[0] * d[1]};
      const int coords[3] = {x, y, z};
      std::vector<std::pair<int32_t, int32_t>> faces;  // (peer, direction 0..5)
      const bool skip = pattern == Pattern::halo3d_skip;
      for (int a = 0; a < 3; ++a) {
        const bool low = coords[a] > 0, high = coords[a] < d[static_cast<size_t>(a)] - 1;
        if (low || !skip) faces.push_back({low ? rank - strides[a] : tr::kProcNull, 2 * a});
        if (high || !skip) faces.push_back({high ? rank + strides[a] : tr::kProcNull, 2 * a + 1});
      }
      const int64_t per_iteration = 2 * 6 + 1;  // an interior rank's: all ranks iterate alike
      for (int64_t it = 0; (it + 1) * per_iteration <= std::max<int64_t>(events, per_iteration);
           ++it) {
        clock += step;
        std::vector<uint32_t> ids;
        for (size_t k = 0; k < faces.size(); ++k)  // a message sent towards d arrives tagged d
          ids.push_back((k == 0 ? computed() : at_once()).irecv(faces[k].first, faces[k].second ^ 1, 4096));
        for (const auto& [peer, direction] : faces)
          ids.push_back(at_once().isend(peer, direction, 4096));
        (faces.empty() ? computed() : at_once()).complete(Fn::MPI_Waitall, ids);
        b.last_until(clock);
        if (it % 10 == 9) {
          clock += 2 * kCall;
          at_once().collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
          b.last_until(clock);
        }
      }
      break;
    }
    case Pattern::transpose: {  // per iteration: compute, Alltoall, compute, Alltoall, Allreduce
      const int64_t count = std::max<int64_t>(1, (1 << 20) / ranks);
      for (int64_t it = 0; (it + 1) * 3 <= std::max<int64_t>(events, 3); ++it) {
        for (int half = 0; half < 2; ++half) {
          clock += step;
          computed().collective(Fn::MPI_Alltoall, count);
          b.last_until(clock);
        }
        clock += 2 * kCall;
        at_once().collective(Fn::MPI_Allreduce, 2, tr::kNoRank, tr::Op::max);
        b.last_until(clock);
      }
      break;
    }
    case Pattern::master_worker: {  // per group of kMasterGroup: rank 0 of it serves the rest
      const int32_t master = rank / kMasterGroup * kMasterGroup;
      const int32_t workers = std::min(kMasterGroup, ranks - master) - 1;
      if (workers == 0) break;
      const int64_t rounds = std::max<int64_t>(1, events / (2 * workers));
      std::vector<int32_t> order(static_cast<size_t>(workers));
      for (int64_t round = 0; round < rounds; ++round) {
        const int64_t round_start = clock;
        clock += step;
        if (rank == master) {  // results arrive in whatever order the workers finish
          std::iota(order.begin(), order.end(), master + 1);
          std::shuffle(order.begin(), order.end(), rng);
          for (size_t k = 0; k < order.size(); ++k) {
            at_once().recv_any(order[k], 2, 16);
            b.last_until(round_start + step * static_cast<int64_t>(k + 1) / workers);
            at_once().send(order[k], 1, 1024);
          }
        } else {
          computed().send(master, 2, 16);
          at_once().recv(master, 1, 1024);
          b.last_until(clock);
        }
      }
      break;
    }
    case Pattern::wavefront: {  // per iteration: a lower and an upper pipelined sweep, Allreduce
      const std::vector<int> d = balanced_dims(ranks, 2);
      const int px = d[1], py = d[0], row = rank / px, col = rank % px;
      constexpr int kPlanes = 8;
      const int32_t north = row > 0 ? rank - px : -1, south = row < py - 1 ? rank + px : -1;
      const int32_t west = col > 0 ? rank - 1 : -1, east = col < px - 1 ? rank + 1 : -1;
      const int64_t per_iteration = 2 * kPlanes * 4 + 1;  // an interior rank's
      const int64_t sweep = (px + py - 2 + kPlanes) * step;
      for (int64_t it = 0; (it + 1) * per_iteration <= std::max(events, per_iteration); ++it) {
        for (int upper = 0; upper < 2; ++upper) {
          const int32_t from[2] = {upper ? south : north, upper ? east : west};
          const int32_t to[2] = {upper ? north : south, upper ? west : east};
          const int distance = upper ? (py - 1 - row) + (px - 1 - col) : row + col;
          for (int k = 0; k < kPlanes; ++k) {
            const int plane = upper ? kPlanes - 1 - k : k;
            for (int32_t peer : from)
              if (peer >= 0) at_once().recv(peer, plane, 5 * (plane % 7 + 1));
            b.last_until(clock + (distance + k) * step);
            bool first = true;
            for (int32_t peer : to)
              if (peer >= 0) (first ? computed() : at_once()).send(peer, plane, 5 * (plane % 7 + 1)), first = false;
          }
          clock += sweep;
        }
        clock += 2 * kCall;
        at_once().collective(Fn::MPI_Allreduce, 5, tr::kNoRank, tr::Op::sum);
        b.last_until(clock);
      }
      break;
    }
  }
  clock += 2 * kCall;
  at_once().add(Fn::MPI_Finalize);
  b.last_until(clock);
  return b.take();
}

}  // namespace pskel::test

// The merge's entry point: checks sizes, computes the compute gaps, runs Algorithm 1 on every
// rank, groups the ranks that behave alike, runs Algorithm 2 over the groups and interns the
// events; and the per-rank view's helpers.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "merge/internal.h"
#include "merge/merge.h"
#include "trace/gaps.h"
#include "util/parallel.h"

namespace pskel::merge {

namespace detail {

std::span<const int64_t> RankView::aux(uint32_t index) const {
  if (index >= trace->aux_begin.size()) return {};
  const uint64_t begin = trace->aux_begin[index];
  const uint64_t words = trace->records[index].aux_words;
  if (begin > trace->aux.size() || words > trace->aux.size() - begin) return {};
  return {trace->aux.data() + begin, static_cast<size_t>(words)};
}

const trace::Record* RankView::creator_of(int64_t id) const {
  if (id <= 0 || static_cast<uint64_t>(id) >= creator.size()) return nullptr;
  const uint32_t c = creator[static_cast<size_t>(id)];
  return c ? &trace->records[c - 1] : nullptr;
}

}  // namespace detail

std::vector<Symbol> MergedTrace::symbols() const {
  std::vector<Symbol> out;
  out.reserve(events.size());
  for (const Event& e : events) out.push_back(e.symbol);
  return out;
}

std::vector<uint32_t> normalized_order(const trace::RankTrace& rank, uint64_t* moved) {
  const std::vector<uint32_t> replies = reply_records(rank);
  const std::vector<int64_t> gaps = trace::compute_gaps(rank);
  detail::RankView view;
  view.trace = &rank;
  view.replies = replies;
  view.gaps = gaps;
  const uint64_t m = detail::normalize(view);
  if (moved) *moved = m;
  return std::move(view.order);
}

MergedTrace merge(const trace::TraceSet& trace, const MergeOptions& options, MergeStats* stats) {
  uint64_t total = 0;
  for (const trace::RankTrace& r : trace.ranks) total += r.records.size();
  if (total >= std::numeric_limits<uint32_t>::max())
    throw std::length_error("merge: more than 2^32 records in all ranks together");

  MergedTrace out;
  MergeStats local;
  const size_t ranks = trace.ranks.size();
  out.world_size = static_cast<int>(ranks);
  std::vector<detail::RankView> views(ranks);
  detail::AlikeRanks alike(out.world_size);
  out.gap_ns.resize(ranks);
  out.replies.resize(ranks);
  std::vector<uint64_t> reordered(ranks, 0);
  // Each rank's own passes (its records alone) run on every CPU; grouping follows rank order,
  // a window of ranks at a time, so that a member's arrays are released before the next window
  // fills its own (peak memory is the window's, not the job's).
  const size_t window = std::max<size_t>(64, 4 * util::usable_cpus());
  for (size_t first = 0; first < ranks; first += window) {
    const size_t count = std::min(window, ranks - first);
    util::parallel_for(count, [&](size_t k) {
      const size_t r = first + k;
      detail::RankView& v = views[r];
      v.trace = &trace.ranks[r];
      v.rank = static_cast<int32_t>(r);
      out.replies[r] = reply_records(*v.trace);
      v.replies = out.replies[r];
      out.gap_ns[r] = trace::compute_gaps(*v.trace);
      v.gaps = out.gap_ns[r];
      reordered[r] = detail::normalize(v);
      v.shape.reserve(v.order.size());
      v.peers.reserve(v.order.size());
      v.part_key.assign(v.trace->records.size(), 0);
      for (uint32_t index : v.order) {
        v.shape.push_back(detail::shape_of(v.record(index)));
        v.peers.push_back(
            detail::wrapped_peers(v.record(index), v.rank, out.world_size, v.is_reply(index)));
        v.part_key[index] = v.part_keys.number(detail::part_key_of(v, index));
      }
      v.part_keys.seal();
    });
    for (size_t r = first; r < first + count; ++r) local.reordered += reordered[r];
    if (options.group_alike) {
      alike.add(views, first, count);
    } else {
      for (size_t r = first; r < first + count; ++r) {
        views[r].group = views[r].rank;
        views[r].members = {views[r].rank};
      }
    }
  }
  for (const detail::RankView& v : views) local.groups += v.group == v.rank;
  detail::SymbolInterner symbols(views, out.world_size);
  detail::align(views, std::max(options.lookahead, 0), out, local, symbols);
  symbols.finish(out);
  if (stats) *stats = local;
  return out;
}

}  // namespace pskel::merge

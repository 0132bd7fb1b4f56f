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

struct Merger::State {
  MergeOptions options;
  MergedTrace out;
  MergeStats stats;
  std::vector<detail::RankView> views;
  detail::AlikeRanks alike;
  std::vector<std::unique_ptr<trace::RankTrace>> given;  // by rank; a member's freed once grouped
  size_t added = 0;     // ranks handed in
  size_t merged = 0;    // ranks whose window is done
  size_t window = 0;
  uint64_t records = 0;

  State(int world_size, const MergeOptions& o)
      : options(o), views(static_cast<size_t>(std::max(world_size, 0))),
        alike(std::max(world_size, 0)), given(views.size()),
        // Each rank's own passes (its records alone) run on every CPU; grouping follows rank
        // order, a window of ranks at a time, so that a member's arrays, and its records when
        // given, are released before the next window fills its own (peak memory is the
        // window's, not the job's).
        window(std::max<size_t>(64, 4 * util::usable_cpus())) {
    out.world_size = static_cast<int>(views.size());
    out.replies.resize(views.size());
  }

  void merge_window() {
    const size_t first = merged, count = added - merged;
    std::vector<uint64_t> reordered(count, 0);
    util::parallel_for(count, [&](size_t k) {
      const size_t r = first + k;
      detail::RankView& v = views[r];
      v.rank = static_cast<int32_t>(r);
      out.replies[r] = reply_records(*v.trace);
      v.replies = out.replies[r];
      const std::vector<int64_t> gaps = trace::compute_gaps(*v.trace);
      v.gaps = gaps;
      reordered[k] = detail::normalize(v);
      v.gaps = {};
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
    for (uint64_t n : reordered) stats.reordered += n;
    if (options.group_alike) {
      alike.add(views, first, count);
    } else {
      for (size_t r = first; r < first + count; ++r) {
        views[r].group = views[r].rank;
        views[r].members = {views[r].rank};
      }
    }
    // From here on a member is read through its order and part keys alone (internal.h).
    for (size_t r = first; r < first + count; ++r) {
      if (views[r].group == views[r].rank) continue;
      views[r].trace = nullptr;
      given[r].reset();
    }
    merged = added;
  }
};

Merger::Merger(int world_size, const MergeOptions& options)
    : state_(std::make_unique<State>(world_size, options)) {}

Merger::~Merger() = default;

void Merger::add(const trace::RankTrace& rank) {
  State& s = *state_;
  if (s.added >= s.views.size()) throw std::logic_error("merge: more ranks than world_size");
  s.records += rank.records.size();
  if (s.records >= kMaxRecords)
    throw std::length_error("merge: more than 2^32 records in all ranks together");
  s.views[s.added++].trace = &rank;
  if (s.added - s.merged == s.window) s.merge_window();
}

void Merger::add(trace::RankTrace&& rank) {
  State& s = *state_;
  if (s.added >= s.views.size()) throw std::logic_error("merge: more ranks than world_size");
  const size_t r = s.added;
  s.given[r] = std::make_unique<trace::RankTrace>(std::move(rank));
  add(*s.given[r]);
}

MergedTrace Merger::finish(MergeStats* stats) {
  State& s = *state_;
  if (s.added != s.views.size()) throw std::logic_error("merge: fewer ranks than world_size");
  if (s.added > s.merged) s.merge_window();
  for (const detail::RankView& v : s.views) s.stats.groups += v.group == v.rank;
  detail::SymbolInterner symbols(s.views, s.out.world_size);
  detail::align(s.views, std::max(s.options.lookahead, 0), s.out, s.stats, symbols);
  symbols.finish(s.out);
  if (stats) *stats = s.stats;
  MergedTrace out = std::move(s.out);
  state_.reset();  // the leaders' records and every view, before the caller's next stage
  return out;
}

MergedTrace merge(const trace::TraceSet& trace, const MergeOptions& options, MergeStats* stats) {
  Merger merger(static_cast<int>(trace.ranks.size()), options);
  for (const trace::RankTrace& rank : trace.ranks) merger.add(rank);
  return merger.finish(stats);
}

}  // namespace pskel::merge

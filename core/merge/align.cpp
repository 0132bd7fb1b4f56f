// Algorithm 2 (seed 000 §2.2): merges the normalised ranks into one sequence of events with a
// pointer per rank. When the current calls of all unfinished ranks match (same function, same
// communicator id), they form one event. Otherwise each distinct current call is a candidate,
// and the look-ahead of m calls decides which goes first.
//
//   A candidate is *awaited* by a rank that is not at it but has the same call within its next
//   m calls; a collective of MPI_COMM_WORLD (or Init/Finalize) is awaited by every unfinished
//   rank not at it, however far, since every rank makes it; and so are the calls a rank has
//   left when they are the reference rank's last calls (ranks end together: a worker's final
//   Iprobe waits for the master's, made a hundred calls later). A rank that does not have a
//   call within m calls skips it and holds nothing back. An awaiting rank *pulls* the call
//   forward if that only undoes an order difference Algorithm 1 left (two ranks that cut their
//   rounds differently, or a round Algorithm 1 kept in call order): the call is in the rank's
//   current round, has the same relative peers (modulo the number of ranks) as the
//   candidate's first holder, passes no call on its own channel and no call that creates or
//   starts a request it completes, and every call it passes has the shape of a call in that
//   holder's round. Otherwise emitting the candidate now *splits* it from that rank.
//
//   The reference rank is the one with the most calls left (calls already pulled not
//   counted): the busiest rank carries the calls that others skip, so following it gives
//   exactly its length when its calls are a supersequence of every other rank's (the seed's
//   Table 2 property). On a tie the reference stays the rank it was.
//
//   The candidate emitted is the first by these rules:
//   1. It splits from nobody. A candidate nobody awaits is the seed's rule ("a call that the
//      other ranks cannot match at their position or m further down belongs earlier"): this
//      is how a rank's extra calls are emitted on their own while the others wait.
//   2. Among those, fewer ranks pulled: Algorithm 1's order is kept where it works.
//   3. Point-to-point calls before collectives: every member makes the same collectives in the
//      same order, so one is never split while a point-to-point call can go first.
//   4. Calls the reference rank does not have within m calls (extra calls of other ranks),
//      then the reference rank's own call, then calls it has further down.
//   5. More holders, then the farthest nearest claim (the seed's "largest distance first"),
//      then the lowest rank.
//   The event takes the ranks at the candidate plus the ranks that pull it, less the *strays*:
//   matching by shape alone, a rank whose call is another statement's can join an event
//   because the function is the same. So when the ranks at the emitted call do not all have
//   the same relative peers, and more than half of them agree (a marker such as
//   MPI_PROC_NULL agrees with anything) with the busiest of them, each other rank is held back
//   if that busiest rank has a call of this shape with the stray's peers within m calls; the
//   stray joins that later event. Without a clear majority (a butterfly's +d and -d, a master
//   and its workers) nobody is held. MergeStats::unmatched counts the mismatches and the
//   steps that held a stray, MergeStats::forced the choices that split a call,
//   MergeStats::pulled the calls pulled.
//
//   Wavefront (four ranks) whose blocks take no compute (made back to back: a block computed
//   between its receive and its send keeps call order, normalize.cpp's rule (e)): the middle
//   ranks, the reference, hold "Send(+1), Recv(-1)" per block of the forward sweep and
//   "Send(-1), Recv(+1)" per block of the backward one; rank 0 makes four Send(+1) then four
//   Recv(+1), the last rank four Recv(-1) then four Send(-1) (one round each, kept in call
//   order since the tags differ). At each mismatch the reference's call goes first, with every
//   rank that makes it; when the middle ranks reach the forward sweep's last Recv(-1), rank 0
//   is at the backward sweep's first Recv(+1): a stray, held back until the middle ranks make
//   theirs. With two ranks, +1 and -1 are the same neighbour: rank 1 pulls its backward sends
//   forward into rank 0's forward Send events, and the merge keeps the busiest rank's length.
//
// Ranks that behave alike (alike.cpp) are aligned as one group: its leader steps for all its
// members and counts for as many ranks in holders, pulls and majorities, so every event is
// the one the ranks aligned one by one would give (test/unit/merge_test.cpp checks it), and n
// below is the number of groups, except in emitting parts.
//
// Each step advances at least one rank, so every event record lands in exactly one event.
// Cost: O(n) per step when all ranks match; at a mismatch O(n·min(c, m)) for c candidates
// (each rank finds the next call of each shape through a chain of next occurrences built
// once, amortised O(1), or scans its window if there are more than m candidates), plus the
// pull checks, which pass at most m calls per rank and step (a call they cannot reach in
// that budget counts as not pullable), the stray checks, which follow at most m calls of the
// busiest rank per stray, and the end check, at most m + 1 calls of the reference per
// candidate of a rank that has that few left. So O(n·L) when ranks agree and O(m·n·L) at
// worst.
#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <utility>
#include <vector>

#include "merge/internal.h"
#include "util/prefault.h"

namespace pskel::merge::detail {

uint64_t pull_channel(const RankView& v, size_t p, int32_t world_size) {
  const uint32_t shape = v.shape[p];
  const uint64_t comm = shape & 0xFFFF;
  switch (role_of(static_cast<uint16_t>(shape >> 16))) {
    case Role::send:
    case Role::send_post:
    case Role::exchange:
      return (uint64_t{1} << 48) | (comm << 32) | (v.peers[p] >> 32);
    case Role::recv:
    case Role::recv_post:
      return (uint64_t{2} << 48) | (comm << 32) | (v.peers[p] & 0xFFFFFFFF);
    case Role::start: {
      uint64_t channel = 0;
      for_each_request(v, v.order[p], [&](int64_t id) {
        if (channel != 0) return;
        const trace::Record* c = v.creator_of(id);
        if (!c) {
          channel = (uint64_t{3} << 48) | static_cast<uint32_t>(id);
          return;
        }
        const uint64_t peers = wrapped_peers(*c, v.rank, world_size, false);  // creators: no replies
        channel = c->source != trace::kNoRank
                      ? (uint64_t{2} << 48) | (uint64_t{c->comm} << 32) | (peers & 0xFFFFFFFF)
                      : (uint64_t{1} << 48) | (uint64_t{c->comm} << 32) | (peers >> 32);
      });
      return channel;
    }
    default:
      return 0;
  }
}

namespace {

inline constexpr uint32_t kNone = UINT32_MAX;

// Shape -> position, or candidate. A leader has a handful of shapes (function and
// communicator), a step a handful of candidates: the first kInline are found by a scan,
// without hashing (the look-ups, per group and candidate at every step, were the alignment's
// most frequent), the rest through a StampedMap. Not thread-safe.
class ShapeMap {
 public:
  uint32_t* find(uint32_t shape) {
    for (uint32_t i = 0; i < inline_size_; ++i)
      if (shapes_[i] == shape) return &values_[i];
    return inline_size_ < kInline ? nullptr : overflow_.find(shape);
  }
  // REQUIRES: find(shape) == nullptr.
  void add(uint32_t shape, uint32_t value) {
    if (inline_size_ < kInline) {
      shapes_[inline_size_] = shape;
      values_[inline_size_++] = value;
    } else {
      overflow_.set(shape, value);
    }
  }
  void clear() {
    inline_size_ = 0;
    overflow_.clear();
  }

 private:
  static constexpr uint32_t kInline = 8;
  uint32_t inline_size_ = 0;
  std::array<uint32_t, kInline> shapes_{}, values_{};
  StampedMap overflow_;
};

class Aligner {
 public:
  Aligner(const std::vector<RankView>& views, int lookahead, MergedTrace& out,
          MergeStats& stats, SymbolInterner& symbols)
      : views_(views), lookahead_(static_cast<size_t>(lookahead)), out_(out), stats_(stats),
        symbols_(symbols), ranks_(views.size()), now_(views.size()),
        candidate_of_(views.size(), 0) {}

  void run() {
    size_t longest = 0, total = 0;
    for (const RankView& v : views_) {
      const size_t calls = holder_of(views_, v).order.size();
      longest = std::max(longest, calls);
      total += calls;
      if (v.group != v.rank) continue;  // a member moves with its group's leader
      index_occurrences(v);
      if (v.order.empty()) continue;
      now_[static_cast<size_t>(v.rank)].weight = static_cast<uint32_t>(v.members.size());
      refresh(v.rank);
      active_.push_back(v.rank);
      active_weight_ += weight(v.rank);
    }
    out_.events.reserve(longest);
    // Exactly one part per event record: the parts never move, and the interner reads them
    // where they are (hand_to_symbols()).
    out_.parts.reserve(total);
    // Written once, in order, by this thread alone; its pages are faulted in beside it.
    const util::Prefault prefault(out_.parts.data(), total * sizeof(Part));
    while (!active_.empty()) {
      const int32_t lead = active_.front();
      const uint32_t first = current(lead);
      const uint64_t first_peers = peers(lead);
      bool all_match = true, same_peers = true;
      for (int32_t r : active_) {
        all_match = all_match && current(r) == first;
        same_peers = same_peers && peers(r) == first_peers;
      }
      if (all_match) {
        if (!same_peers && hold_strays(first)) ++stats_.unmatched;
        emit(first);
      } else {
        ++stats_.unmatched;
        const Candidate& chosen = candidates_[choose()];
        if (chosen.peers_differ) hold_strays(chosen.shape);
        emit(chosen.shape);
      }
      if (out_.events.size() - handed_ >= kSliceEvents ||
          out_.parts.size() - handed_parts_ >= kSliceParts)
        hand_to_symbols();
    }
    hand_to_symbols();
  }

 private:
  struct Candidate {
    uint32_t shape;
    bool collective;   // made by every member of its communicator
    bool splits;       // a rank that awaits it cannot pull it
    uint32_t holders;  // ranks at it now (a group's leader counts for its members)
    uint32_t pulls;    // ranks that would pull it
    size_t awaited;    // smallest distance at which a rank not at it has it; 0: none
    uint8_t in_ref;    // 0: the reference rank does not have it within m calls, 1: the
                       // reference rank is at it, 2: has it further down
    int32_t first_holder;        // the lowest rank at it
    int32_t seen_by;             // last rank whose window scan found it (look_ahead())
    bool round_known;            // round_shapes_ holds the shapes of first_holder's round
    bool peers_differ;           // its holders' calls do not all have the same peers
  };
  struct Found {       // a candidate that rank `rank` can pull from position `at`
    int32_t rank;
    uint32_t candidate;
    uint32_t at;
  };
  // A rank's progress. Pulled calls are marked taken rather than moved, so that the chains of
  // next occurrences stay valid.
  struct Cursor {
    size_t pos = 0;                  // current call: the first one not taken
    std::vector<uint32_t> next_same; // per position: the next one with the same shape
    std::vector<char> taken;         // per position: pulled into an earlier event
    ShapeMap next_of;                // shape -> its first occurrence not before pos (lazily)
    size_t taken_ahead = 0;          // positions after pos that are taken
    uint32_t pull_at = kNone;        // position to pull into the event being emitted
    bool held = false;               // at the shape being emitted, but held back (hold_strays)
    // A leader's: per member, its order (the leader's own for members that share it), so that
    // emitting reads no member's view.
    std::vector<const uint32_t*> member_orders;
  };

  // What a step's loops over the groups read of an unfinished leader, in one array by rank:
  // 24 bytes a group instead of its view and its cursor, three dependent loads a read, in
  // every loop of every step (LU-like traces mismatch at every step). Kept by refresh().
  struct Now {
    uint32_t shape = 0;   // of the current call
    uint32_t weight = 0;  // the ranks the leader stands for
    uint64_t peers = 0;   // of the current call
    size_t left = 0;      // calls left: not before the current one, not pulled
  };

  const RankView& view(int32_t r) const { return views_[static_cast<size_t>(r)]; }
  Cursor& cursor(int32_t r) { return ranks_[static_cast<size_t>(r)]; }
  size_t pos(int32_t r) { return cursor(r).pos; }
  const Now& now(int32_t r) const { return now_[static_cast<size_t>(r)]; }
  // The ranks a leader stands for: what it counts for in holders, pulls and majorities.
  uint32_t weight(int32_t r) const { return now(r).weight; }
  uint32_t current(int32_t r) const { return now(r).shape; }
  uint64_t peers(int32_t r) const { return now(r).peers; }
  // Calls rank r has left: not before its current one, not pulled.
  size_t left(int32_t r) const { return now(r).left; }
  // After leader r's position or pulled calls changed.
  void refresh(int32_t r) {
    const Cursor& c = cursor(r);
    const RankView& v = view(r);
    Now& n = now_[static_cast<size_t>(r)];
    n.left = v.shape.size() - c.pos - c.taken_ahead;
    if (c.pos < v.shape.size()) {
      n.shape = v.shape[c.pos];
      n.peers = v.peers[c.pos];
    }
  }

  // Chains each position of leader v to the next one of the same shape, and each shape to its
  // first position: O(calls) once, so that a look-ahead for a shape costs O(1) amortised. And
  // notes where its members' orders are.
  void index_occurrences(const RankView& v) {
    Cursor& c = cursor(v.rank);
    for (int32_t m : v.members) c.member_orders.push_back(holder_of(views_, view(m)).order.data());
    const size_t n = v.shape.size();
    c.next_same.assign(n, kNone);
    c.taken.assign(n, 0);
    for (size_t i = n; i-- > 0;) {
      if (uint32_t* later = c.next_of.find(v.shape[i])) {
        c.next_same[i] = *later;
        *later = static_cast<uint32_t>(i);
      } else {
        c.next_of.add(v.shape[i], static_cast<uint32_t>(i));
      }
    }
  }

  // Rank r's first call of this shape not before its current one and not taken; kNone if none.
  uint32_t next_of(int32_t r, uint32_t shape) {
    Cursor& c = cursor(r);
    uint32_t* at = c.next_of.find(shape);
    if (!at) return kNone;
    while (*at != kNone && (*at < c.pos || c.taken[*at])) *at = c.next_same[*at];
    return *at;
  }

  // One event of every active rank at `shape`, and of the ranks that pull a call of that
  // shape (Cursor::pull_at, set by choose()); drops finished ranks.
  void emit(uint32_t shape) {
    Event e{};
    e.function = static_cast<uint16_t>(shape >> 16);
    e.first_part = static_cast<uint32_t>(out_.parts.size());
    bool finished = false;
    size_t groups = 0;
    for (int32_t r : active_) {
      Cursor& c = cursor(r);
      const RankView& v = view(r);
      if (c.held) {
        c.held = false;
      } else if (c.pull_at != kNone) {
        add_parts(r, c.pull_at);
        ++groups;
        c.taken[c.pull_at] = 1;
        ++c.taken_ahead;
        c.pull_at = kNone;
        stats_.pulled += weight(r);
        refresh(r);
      } else if (current(r) == shape) {
        add_parts(r, c.pos);
        ++groups;
        for (++c.pos; c.pos < c.taken.size() && c.taken[c.pos]; ++c.pos) --c.taken_ahead;
        finished = finished || c.pos == v.order.size();
        refresh(r);
      }
    }
    e.part_count = static_cast<uint32_t>(out_.parts.size()) - e.first_part;
    if (groups > 1 && e.part_count > groups) order_by_rank(e.first_part);
    out_.events.push_back(e);
    if (finished)
      std::erase_if(active_, [&](int32_t r) {
        if (pos(r) != view(r).order.size()) return false;
        active_weight_ -= weight(r);
        return true;
      });
  }

  // Hands the events emitted since the last call to the interner: a copy of the events (the
  // vector may grow), their parts in place (it may not: run() reserves them all).
  void hand_to_symbols() {
    if (handed_ == out_.events.size()) return;
    const uint32_t first_part = out_.events[handed_].first_part;
    std::vector<Event> events(out_.events.begin() + static_cast<std::ptrdiff_t>(handed_),
                              out_.events.end());
    for (Event& e : events) e.first_part -= first_part;
    symbols_.add(std::move(events), std::span<const Part>(out_.parts).subspan(first_part));
    handed_ = out_.events.size();
    handed_parts_ = out_.parts.size();
  }

  // The parts of every member of leader r's group at position `at` (the same for all).
  void add_parts(int32_t r, size_t at) {
    const std::vector<int32_t>& members = view(r).members;
    const std::vector<const uint32_t*>& orders = cursor(r).member_orders;
    for (size_t i = 0; i < members.size(); ++i) {
      assert(out_.parts.size() < out_.parts.capacity());  // the interner's view stays valid
      out_.parts.push_back({members[i], orders[i][at]});
    }
  }

  // Puts the parts from `first` on in ascending rank: each group's are, but groups interleave
  // (a stencil's interior ranks and its edges). By a pass over the ranks when the event holds
  // an eighth of them or more, else by sorting: O(parts) either way but for the log factor of
  // a small sort.
  void order_by_rank(size_t first) {
    const auto begin = out_.parts.begin() + static_cast<std::ptrdiff_t>(first);
    const auto end = out_.parts.end();
    const size_t count = static_cast<size_t>(end - begin);
    if (8 * count < views_.size()) {
      std::sort(begin, end, [](const Part& a, const Part& b) { return a.rank < b.rank; });
      return;
    }
    if (slot_.empty()) slot_.assign(views_.size(), kNone);
    for (auto it = begin; it != end; ++it) slot_[static_cast<size_t>(it->rank)] = it->record;
    auto out = begin;
    for (size_t r = 0; r < slot_.size(); ++r)
      if (slot_[r] != kNone) {
        *out++ = {static_cast<int32_t>(r), slot_[r]};
        slot_[r] = kNone;
      }
  }

  // Whether two calls of one shape can be one statement's: each of their peer codes (wrapped
  // relative peers) is equal, or a marker (MPI_PROC_NULL, MPI_ANY_SOURCE, reply, unknown) on one
  // side.
  static bool peers_agree(uint64_t a, uint64_t b) {
    const auto half_agrees = [](uint32_t x, uint32_t y) {
      const auto marker = [](uint32_t c) {
        return c == static_cast<uint32_t>(kCodeProcNull) || c == static_cast<uint32_t>(kCodeAny) ||
               c == static_cast<uint32_t>(kCodeUnknown) || c == static_cast<uint32_t>(kCodeReply);
      };
      return x == y || marker(x) || marker(y);
    };
    return half_agrees(static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b >> 32)) &&
           half_agrees(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
  }

  // Among the ranks about to join an event of `shape` at their current call (not pulling): if
  // most of them agree on the peers with the busiest of them, the others are strays, and a
  // stray is held back when that busiest rank has a call of this shape with the stray's peers
  // within m calls: the stray's call is that later statement's (the first rank of a pipeline,
  // at the backward sweep's Recv(+1) while the others make the forward sweep's Recv(-1)).
  // Holds nobody when there is no clear majority (a butterfly, a master and its workers).
  // Returns whether it held a rank. O(n) when all agree, O(n·m) at worst.
  bool hold_strays(uint32_t shape) {
    holders_.clear();
    size_t busiest = 0, most = 0, holding = 0;
    for (int32_t r : active_) {
      if (cursor(r).pull_at != kNone || current(r) != shape) continue;
      const size_t calls = left(r);
      if (holders_.empty() || calls > most) busiest = holders_.size(), most = calls;
      holders_.push_back({r, peers(r)});
      holding += weight(r);
    }
    if (holding < 3) return false;
    const uint64_t majority = holders_[busiest].second;
    size_t strays = 0;
    for (const auto& [r, own] : holders_) strays += peers_agree(own, majority) ? 0 : weight(r);
    if (strays == 0 || 2 * strays >= holding) return false;
    bool held = false;
    for (const auto& [r, own] : holders_)
      if (!peers_agree(own, majority) && later_with_peers(holders_[busiest].first, own))
        cursor(r).held = held = true;
    return held;
  }

  // Whether rank r has a call of its current call's shape whose peers agree with `peers` after
  // its current call and within m calls of it.
  bool later_with_peers(int32_t r, uint64_t peers) {
    const Cursor& c = cursor(r);
    const RankView& v = view(r);
    for (uint32_t at = c.next_same[c.pos]; at != kNone && at - c.pos <= lookahead_;
         at = c.next_same[at])
      if (!c.taken[at] && peers_agree(v.peers[at], peers)) return true;
    return false;
  }

  // Whether rank r has at most m + 1 calls left, fewer than the reference rank, and they are the
  // reference's last calls (shapes, calls already pulled skipped). O(m).
  bool ends_like_reference(int32_t r) {
    const RankView& v = view(r);
    const RankView& ref = view(ref_);
    const Cursor& c = cursor(r);
    const Cursor& rc = cursor(ref_);
    if (v.shape.size() - c.pos > lookahead_ + 1) return false;
    size_t a = v.shape.size(), b = ref.shape.size();
    for (;;) {
      while (a > c.pos && c.taken[a - 1]) --a;
      while (b > rc.pos && rc.taken[b - 1]) --b;
      if (a == c.pos) return b > rc.pos;  // all of r's calls matched, the reference has more
      if (b == rc.pos || v.shape[a - 1] != ref.shape[b - 1]) return false;
      --a;
      --b;
    }
  }

  // Index of the candidate to emit at a mismatch (see the file comment); sets the pulls.
  uint32_t choose() {
    candidates_.clear();
    index_.clear();
    found_.clear();
    round_shapes_.clear();
    // The reference stays while no rank has more calls left: on a tie between a master and its
    // worker (one call apart, each ahead in turn) a flipping reference would emit their calls
    // alternately, one rank at a time, and never pair them again.
    if (!std::binary_search(active_.begin(), active_.end(), ref_)) ref_ = active_.front();
    for (int32_t r : active_)
      if (left(r) > left(ref_)) ref_ = r;
    for (int32_t r : active_) {
      const uint32_t s = current(r);
      const uint32_t* known = index_.find(s);
      const uint32_t c = known ? *known : static_cast<uint32_t>(candidates_.size());
      if (!known) {
        index_.add(s, c);
        candidates_.push_back({s, is_collective(static_cast<uint16_t>(s >> 16)), false, 0, 0, 0,
                               0, r, -1, false, false});
      }
      Candidate& cand = candidates_[c];
      cand.holders += weight(r);
      cand.peers_differ = cand.peers_differ || peers(r) != peers(cand.first_holder);
      if (r == ref_) cand.in_ref = 1;
      candidate_of_[static_cast<size_t>(r)] = c;
    }
    for (int32_t r : active_) look_ahead(r);
    // Ranks end together: the calls a rank has left, when the reference rank ends with the same
    // calls, are awaited by the reference however far (a worker's last Iprobe waits for the
    // master's, made after the master's last task).
    for (Candidate& c : candidates_)
      if (c.in_ref == 0 && ends_like_reference(c.first_holder)) {
        c.splits = true;
        if (c.awaited == 0) c.awaited = lookahead_ + 1;
        c.in_ref = 2;
      }
    // Every rank makes the collectives of MPI_COMM_WORLD (and Init/Finalize), however far
    // away: one that not all unfinished ranks are at is awaited beyond the look-ahead too.
    for (Candidate& c : candidates_) {
      const uint32_t comm = c.shape & 0xFFFF;
      if (c.collective && (comm == trace::kCommWorld || comm == trace::kNoComm) &&
          c.holders < active_weight_) {
        c.splits = true;
        if (c.awaited == 0) c.awaited = lookahead_ + 1;
      }
    }
    uint32_t best = 0;
    for (uint32_t c = 1; c < candidates_.size(); ++c)
      if (better(candidates_[c], candidates_[best])) best = c;
    if (candidates_[best].splits) ++stats_.forced;
    for (const Found& f : found_)
      if (f.candidate == best) cursor(f.rank).pull_at = f.at;
    return best;
  }

  // Where rank r has each other candidate within its next m calls, and whether it could
  // pull it. With no more candidates than m, each is found through its chain of occurrences
  // (O(candidates) amortised); else the window is scanned once (O(m)).
  void look_ahead(int32_t r) {
    const RankView& v = view(r);
    const Cursor& c = cursor(r);
    const size_t here = c.pos;
    pull_budget_ = lookahead_;
    const uint32_t own = candidate_of_[static_cast<size_t>(r)];
    if (candidates_.size() <= lookahead_) {
      for (uint32_t ci = 0; ci < candidates_.size(); ++ci) {
        const uint32_t at = ci == own ? kNone : next_of(r, candidates_[ci].shape);
        if (at != kNone && at - here <= lookahead_) consider(r, ci, at);
      }
      return;
    }
    const size_t end = std::min(v.shape.size(), here + 1 + lookahead_);
    for (size_t at = here + 1; at < end; ++at) {
      const uint32_t* ci = c.taken[at] ? nullptr : index_.find(v.shape[at]);
      if (!ci || *ci == own || candidates_[*ci].seen_by == r) continue;
      candidates_[*ci].seen_by = r;  // only its first occurrence counts
      consider(r, *ci, static_cast<uint32_t>(at));
    }
  }

  // Rank r, not at candidate ci, has it at position `at` within the look-ahead.
  void consider(int32_t r, uint32_t ci, uint32_t at) {
    const RankView& v = view(r);
    const size_t here = pos(r);
    Candidate& cand = candidates_[ci];
    const size_t distance = at - here;
    if (cand.awaited == 0 || distance < cand.awaited) cand.awaited = distance;
    if (r == ref_) cand.in_ref = 2;
    if (v.round[at] == v.round[here] &&
        v.peers[at] == peers(cand.first_holder) &&
        can_pull(r, here, at, ci)) {
      cand.pulls += weight(r);
      found_.push_back({r, ci, at});
    } else {
      cand.splits = true;
    }
  }

  // Whether rank r's call at `at` may join an event at `here` (same round, checked by the
  // caller): it passes no call on its own channel, no call that creates or starts a request it
  // completes, and only calls whose shapes the candidate's first holder has in its round too
  // (then the two ranks make one exchange in different orders; otherwise r's call belongs to
  // a later exchange and r skips the holder's). Calls already taken are not passed.
  bool can_pull(int32_t r, size_t here, size_t at, uint32_t ci) {
    const RankView& v = view(r);
    const Cursor& c = cursor(r);
    const uint32_t index = v.order[at];
    const uint64_t channel = pull_channel(v, at, out_.world_size);
    completes_.clear();
    if (role_of(static_cast<uint16_t>(v.shape[at] >> 16)) == Role::completion)  // not the record: a miss
      for_each_request(v, index, [&](int64_t id) { completes_.push_back(id); });
    if (!candidates_[ci].round_known) holder_round(ci);
    for (size_t p = here; p < at; ++p) {
      if (c.taken[p]) continue;
      if (pull_budget_ == 0) return false;
      --pull_budget_;
      const uint32_t passed = v.order[p];
      if (channel != 0 && pull_channel(v, p, out_.world_size) == channel) return false;
      if (!round_shapes_.find((uint64_t{ci} << 32) | v.shape[p])) return false;
      bool posts_completed = false;
      if (!completes_.empty())
        for_each_request(v, passed, [&](int64_t id) {
          posts_completed = posts_completed ||
                            std::find(completes_.begin(), completes_.end(), id) != completes_.end();
        });
      if (posts_completed) return false;
    }
    return true;
  }

  // Notes the shapes of the round candidate ci's first holder is in (at most m calls either
  // side of its current one) in round_shapes_.
  void holder_round(uint32_t ci) {
    const int32_t h = candidates_[ci].first_holder;
    const std::vector<uint32_t>& round = view(h).round;
    const std::vector<uint32_t>& shape = view(h).shape;
    const size_t at = pos(h);
    size_t lo = at, hi = at + 1;
    while (lo > 0 && at - lo < lookahead_ && round[lo - 1] == round[at]) --lo;
    while (hi < round.size() && hi - at <= lookahead_ && round[hi] == round[at]) ++hi;
    for (size_t p = lo; p < hi; ++p) round_shapes_.set((uint64_t{ci} << 32) | shape[p], 1);
    candidates_[ci].round_known = true;
  }

  static bool better(const Candidate& a, const Candidate& b) {
    if (a.splits != b.splits) return !a.splits;
    if (!a.splits && a.pulls != b.pulls) return a.pulls < b.pulls;
    if (a.collective != b.collective) return !a.collective;
    if (a.in_ref != b.in_ref) return a.in_ref < b.in_ref;
    if (a.holders != b.holders) return a.holders > b.holders;
    return a.awaited > b.awaited;  // equal: the earlier candidate (lower rank) stays
  }

  // Events, or parts, handed to the interner at a time: enough that a hand-over (and the copy
  // of the events) is cheap beside interning them; few enough that the interner keeps pace
  // (an event of a 16,384-rank job can have 16,384 parts).
  static constexpr size_t kSliceEvents = 16384, kSliceParts = size_t{1} << 20;

  const std::vector<RankView>& views_;
  const size_t lookahead_;
  MergedTrace& out_;
  MergeStats& stats_;
  SymbolInterner& symbols_;
  size_t handed_ = 0, handed_parts_ = 0;  // events and parts handed to symbols_
  std::vector<Cursor> ranks_;          // per rank
  std::vector<Now> now_;               // per rank: a leader's current call (refresh())
  std::vector<int32_t> active_;        // unfinished groups' leaders, ascending
  size_t active_weight_ = 0;           // ranks they stand for
  std::vector<uint32_t> slot_;         // per rank: a part's record, or kNone (order_by_rank)
  std::vector<uint32_t> candidate_of_; // per rank: its current candidate (scratch)
  std::vector<Candidate> candidates_;  // scratch of choose()
  std::vector<std::pair<int32_t, uint64_t>> holders_;  // (rank, peers): scratch of hold_strays()
  std::vector<Found> found_;           // pullable calls found by choose() (scratch)
  StampedMap round_shapes_;            // (candidate, shape) in its first holder's round
  size_t pull_budget_ = 0;             // calls a rank's pull checks may still pass (m a step)
  std::vector<int64_t> completes_;     // requests the call can_pull() checks completes
  int32_t ref_ = 0;                    // the rank with the most calls left (choose()): on a
                                       // tie the previous reference, else the lowest rank
  ShapeMap index_;                     // shape -> candidate (scratch of choose())
};

}  // namespace

void align(const std::vector<RankView>& views, int lookahead, MergedTrace& out,
           MergeStats& stats, SymbolInterner& symbols) {
  Aligner(views, lookahead, out, stats, symbols).run();
}

}  // namespace pskel::merge::detail

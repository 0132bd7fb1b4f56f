// The discrete-event replay of a graph under a model, and its critical path (simulate.h,
// replay). Times are double ns from t = 0 (the end of the barrier in MPI_Init).
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "simulate/simulate.h"
#include "util/flat_map.h"

namespace pskel::simulate {
namespace {

using Kind = Endpoint::Kind;
inline constexpr double kUnposted = std::numeric_limits<double>::quiet_NaN();

// Where one rank is in the replay: all that resuming it reads first, in 48 bytes. The replay
// resumes every rank at each collective; with this state in five arrays (and each rank's times
// in a vector of its own) that was a cache miss per array per rank once 16,384 ranks' state
// outgrew the cache.
struct RankState {
  const Op* ops = nullptr;
  double* ends = nullptr;    // of its ops, in Replay::ends_ (an op's start is the end before it
                             // plus its gap)
  uint32_t count = 0;        // its ops
  uint32_t next = 0;         // the op it is at
  double clock = 0;          // the end of its last op
  double end = -1;           // where it ended (MPI_Finalize's start), once it did
  uint32_t missing = 0;      // posts `next` waits for that have not come (it is on their lists)
  bool started = false;      // `next` has started: its posts are made
};

// When an endpoint completes: the time, and the endpoint whose post decided it.
struct Completion {
  double time;
  uint32_t bind;
};

// Ranks waiting for a post, per endpoint or collective: lists threaded through one pool of
// nodes, first in first out, their heads in a hash of the lists that have waiters, and a bit
// per list that says whether it has, so that a post nobody waits for looks no further. A vector
// of ranks per endpoint cost 24 bytes for each of the job's endpoints and an allocation for
// each that was ever waited on; a head per endpoint, 8 bytes for each (112 MB at 16,384 ranks
// of halo3d), and a rank that waited wrote into its peer's part of that array, a cache miss,
// where at most a few lists per rank have waiters at any time (the bits: 1.7 MB).
class WaitLists {
 public:
  explicit WaitLists(size_t lists) : waited_((lists + 63) / 64) {}
  void add(uint32_t list, int32_t rank) {
    uint32_t node = free_;
    if (node != kNone) {
      free_ = nodes_[node].next;
      nodes_[node] = {rank, kNone};
    } else {
      node = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back({rank, kNone});
    }
    if (List* l = lists_.find(list)) {
      nodes_[l->tail].next = node;
      l->tail = node;
      return;
    }
    if (lists_.full()) lists_.grow();
    lists_.insert(list, {node, node});
    waited_[list / 64] |= uint64_t{1} << (list % 64);
  }
  // Calls f(rank) for each rank on `list`, in the order added, and empties it. f must not add.
  template <class F>
  void drain(uint32_t list, F&& f) {
    uint64_t& bits = waited_[list / 64];
    const uint64_t bit = uint64_t{1} << (list % 64);
    if ((bits & bit) == 0) return;
    bits &= ~bit;
    const List l = *lists_.find(list);
    lists_.erase(list);
    for (uint32_t node = l.head;; node = nodes_[node].next) {
      f(nodes_[node].rank);
      if (node == l.tail) break;
    }
    nodes_[l.tail].next = free_;   // the list's nodes go back to the pool
    free_ = l.head;
  }

 private:
  struct List {
    uint32_t head = kNone, tail = kNone;
  };
  struct Node {
    int32_t rank;
    uint32_t next;
  };
  util::FlatMap<List> lists_{1024};
  std::vector<uint64_t> waited_;   // bit `list`: it has waiters
  std::vector<Node> nodes_;
  uint32_t free_ = kNone;
};

class Replay {
 public:
  Replay(const Graph& graph, const Model& model, const WhatIf& what_if)
      : g_(graph), m_(model), w_(what_if),
        posted_at_(graph.endpoints.size(), kUnposted),
        waiters_(graph.endpoints.size()),
        collective_posted_(graph.collectives.size(), 0),
        collective_waiters_(graph.collectives.size()),
        collective_latest_(graph.collectives.size()),
        root_of_(graph.collectives.size(), kUnknownRoot),
        ranks_(graph.ops.size()) {
    size_t ops = 0;
    for (const auto& rank_ops : graph.ops) ops += rank_ops.size();
    ends_.resize(ops);
    ops = 0;
    for (size_t r = 0; r < graph.ops.size(); ++r) {
      ranks_[r].ops = graph.ops[r].data();
      ranks_[r].count = static_cast<uint32_t>(graph.ops[r].size());
      ranks_[r].ends = ends_.data() + ops;
      ops += graph.ops[r].size();
    }
  }

  Prediction run() {
    const auto ranks = static_cast<int32_t>(g_.ops.size());
    // Last in, first out: a rank woken by a post goes on while the post's endpoint, message
    // and the rank's next ops are still in cache. The times do not depend on the order (each
    // op's end is a function of posts alone); first in, first out visited the whole job
    // between two steps of a rank: master-worker at 16,384 ranks spent 4x as long here.
    for (int32_t r = ranks - 1; r >= 0; --r) ready_.push_back(r);
    Prediction p;
    for (;;) {
      while (!ready_.empty()) {
        const int32_t r = ready_.back();
        ready_.pop_back();
        advance(r, false);
      }
      // Everybody unfinished waits for a post that no rank will make (only in a trace that is
      // inconsistent or cut short): the earliest of them goes on as if its peer were ready.
      int32_t earliest = -1;
      for (int32_t r = 0; r < ranks; ++r)
        if (ranks_[r].next < ranks_[r].count &&
            (earliest < 0 || current_start(r) < current_start(earliest)))
          earliest = r;
      if (earliest < 0) break;
      ++p.forced;
      advance(earliest, true);
    }
    finish(p);
    return p;
  }

 private:
  double scaled_gap(const Op& op) const { return static_cast<double>(op.gap_ns) * w_.cpu_scale * w_.grow; }
  double op_start(int32_t r, int64_t i) const {
    const RankState& s = ranks_[static_cast<size_t>(r)];
    return (i > 0 ? s.ends[i - 1] : 0) + scaled_gap(s.ops[i]);
  }
  double current_start(int32_t r) const {
    const RankState& s = ranks_[r];
    return s.clock + scaled_gap(s.ops[s.next]);
  }
  double own_cost(const Op& op) const {
    if (op.measured) return g_.measured_busy_ns(op);
    if (op.finalize) return 0;
    // A call that receives costs at least what taking a message that is there costs.
    double received = -1;
    for (uint32_t e : g_.waits_of(op)) {
      const Endpoint& ep = g_.endpoints[e];
      if (ep.kind == Kind::recv && ep.link != kNone)
        received = std::max(received, static_cast<double>(g_.messages[ep.link].bytes) * w_.grow);
    }
    const double post = m_[Family::post].t0_ns;
    return received < 0 ? post : std::max(post, m_[Family::p2p_recv].cost_ns(received));
  }
  bool posted(uint32_t e) const { return !std::isnan(posted_at_[e]); }

  void post(uint32_t e, double t) {
    posted_at_[e] = t;
    waiters_.drain(e, [this](int32_t r) { one_post_came(r); });
    const Endpoint& ep = g_.endpoints[e];
    if (ep.kind == Kind::member) {
      const Collective& c = g_.collectives[ep.link];
      if (++collective_posted_[ep.link] == c.members.size()) {
        // The last member to post, found once: each member's completion needs it, and
        // searching per member would be quadratic in the communicator's size.
        Completion& latest = collective_latest_[ep.link];
        latest = {-std::numeric_limits<double>::infinity(), kNone};
        // Each member's post time lies in its rank's part of the array: fetched ahead.
        constexpr size_t kAhead = 16;
        for (size_t k = 0; k < c.members.size(); ++k) {
          if (k + kAhead < c.members.size()) __builtin_prefetch(&posted_at_[c.members[k + kAhead]]);
          const uint32_t member = c.members[k];
          if (posted_at_[member] > latest.time) latest = {posted_at_[member], member};
        }
        collective_waiters_.drain(ep.link, [this](int32_t r) { one_post_came(r); });
      }
    }
  }

  // A post that rank `r` waited for came: it goes on once all it waited for did. (A rank the
  // deadlock breaker forced on may still be on lists it waited on before; a post from one of
  // those wakes it early, and it looks again, as it does when it wakes on time.)
  void one_post_came(int32_t r) {
    uint32_t& missing = ranks_[static_cast<size_t>(r)].missing;
    if (missing == 0) return;
    if (--missing == 0) ready_.push_back(r);
  }

  // The completion of `e`, or false after registering rank `r` to wait for the post it needs.
  // With `force`, posts that are missing are left out instead.
  bool completion(uint32_t e, int32_t r, bool force, Completion* out) {
    const Endpoint& ep = g_.endpoints[e];
    const Fit& p2p = m_[Family::p2p];
    if (ep.kind == Kind::member) return member_completion(e, r, force, out);
    if (ep.link == kNone) {   // unmatched: as if the peer were ready
      if (ep.kind == Kind::arrival) {
        *out = {-std::numeric_limits<double>::infinity(), kNone};
      } else {
        const double sent = static_cast<double>(g_.ops[ep.rank][ep.op].bytes) * w_.grow;
        *out = {posted_at_[e] + (ep.kind == Kind::send ? m_[Family::p2p_send].cost_ns(sent)
                                                       : p2p.t0_ns),
                e};
      }
      return true;
    }
    const Message& msg = g_.messages[ep.link];
    const double bytes = static_cast<double>(msg.bytes) * w_.grow;
    const bool synchronous = msg.mode == SendMode::synchronous ||
                             (msg.mode == SendMode::standard && bytes >= m_.rendezvous_bytes);
    const bool sender_posted = posted(msg.send), receiver_posted = posted(msg.recv);
    auto need = [&](uint32_t other) {
      if (force) return true;
      waiters_.add(other, r);
      return false;
    };
    switch (ep.kind) {
      case Kind::send:
        if (!synchronous) {
          *out = {posted_at_[e] + m_[Family::p2p_send].cost_ns(bytes), e};
          return true;
        }
        if (!receiver_posted) {
          if (!need(msg.recv)) return false;
          *out = {posted_at_[e] + p2p.cost_ns(bytes), e};
          return true;
        }
        *out = posted_at_[msg.recv] > posted_at_[e]
                   ? Completion{posted_at_[msg.recv] + p2p.cost_ns(bytes), msg.recv}
                   : Completion{posted_at_[e] + p2p.cost_ns(bytes), e};
        return true;
      case Kind::recv:
      case Kind::arrival: {
        const double own = ep.kind == Kind::recv ? posted_at_[e]
                                                 : -std::numeric_limits<double>::infinity();
        if (!sender_posted) {
          if (!need(msg.send)) return false;
          *out = {ep.kind == Kind::recv ? own + p2p.t0_ns : own, ep.kind == Kind::recv ? e : kNone};
          return true;
        }
        const double from = synchronous && ep.kind == Kind::recv
                                 ? std::max(posted_at_[msg.send], own)
                                 : posted_at_[msg.send];
        const double arrival = from + p2p.cost_ns(bytes);
        *out = arrival >= own ? Completion{arrival, synchronous && own > posted_at_[msg.send] ? e : msg.send}
                              : Completion{own, e};
        return true;
      }
      case Kind::member:
        break;
    }
    return false;
  }

  // The endpoint of collective `k`'s root, kNone if it has none or the root never got there.
  uint32_t root_member(uint32_t k) {
    if (root_of_[k] == kUnknownRoot) {
      root_of_[k] = kNone;
      for (uint32_t member : g_.collectives[k].members)
        if (g_.endpoints[member].rank == g_.collectives[k].root) root_of_[k] = member;
    }
    return root_of_[k];
  }

  bool member_completion(uint32_t e, int32_t r, bool force, Completion* out) {
    const Endpoint& ep = g_.endpoints[e];
    const Collective& c = g_.collectives[ep.link];
    const double cost = m_[c.family].cost_ns(static_cast<double>(c.bytes) * w_.grow);
    const uint32_t root = root_member(ep.link);
    Sync sync = c.sync;
    if (sync != Sync::all && root == kNone) sync = Sync::all;   // root never got there
    Completion best{posted_at_[e], e};
    auto consider = [&](uint32_t member) {
      if (posted(member) && posted_at_[member] > best.time) best = {posted_at_[member], member};
    };
    if (sync == Sync::all || (sync == Sync::to_root && e == root)) {
      if (collective_posted_[ep.link] == c.members.size()) {
        const Completion& latest = collective_latest_[ep.link];
        if (latest.time > best.time) best = latest;
      } else if (!force) {
        collective_waiters_.add(ep.link, r);
        return false;
      } else {
        for (uint32_t member : c.members) consider(member);
      }
    } else if (sync == Sync::from_root) {
      if (!posted(root) && !force) {
        waiters_.add(root, r);
        return false;
      }
      consider(root);
    }
    *out = {best.time + cost, best.bind};
    return true;
  }

  // When `op` of rank `r`, started at `start`, ends, and the endpoint whose post decided it
  // (kNone: its own cost); returns the number of posts it misses, each with `r` put on its wait
  // list. Every wait is looked at, so that the rank is resumed once, when the last comes, not
  // once per post (halo3d's Waitall of 12 requests was resumed three times an iteration, each
  // time reading its rank's state from memory). With `force`, what is missing is left out.
  uint32_t evaluate(int32_t r, const Op& op, double start, bool force, Completion* done) {
    *done = {start + own_cost(op), kNone};
    uint32_t missing = 0;
    for (uint32_t e : g_.waits_of(op)) {
      Completion c{};
      if (!completion(e, r, force, &c)) {
        ++missing;
        continue;
      }
      if (c.time > done->time) *done = c;
    }
    return missing;
  }

  void advance(int32_t r, bool force) {
    RankState& s = ranks_[static_cast<size_t>(r)];
    while (s.next < s.count) {
      const Op& op = s.ops[s.next];
      const double start = s.clock + scaled_gap(op);
      if (!s.started) {
        s.started = true;
        for (uint32_t e : g_.posts_of(op)) post(e, start);
      }
      Completion done{};
      if (const uint32_t missing = evaluate(r, op, start, force, &done); missing > 0) {
        s.missing = missing;
        return;
      }
      if (force) forced_binds_.emplace(op_index(s, s.next), done.bind);
      force = false;
      s.ends[s.next] = done.time;
      if (op.finalize) s.end = start;
      s.clock = done.time;
      s.started = false;
      ++s.next;
    }
    if (s.end < 0) s.end = s.clock;   // no MPI_Finalize: the rank ends with its last call
  }

  size_t op_index(const RankState& s, int64_t i) const { return static_cast<size_t>(&s.ends[i] - ends_.data()); }

  // The endpoint whose post decided when op `i` of rank `r` ended, once the replay is over. Not
  // kept for every op (8 bytes with its padding and a write each, 130 MB at 16,384 ranks x
  // 1,000 calls, for a question asked only along the critical path): an op that was not forced
  // saw every post it needed, and those posts' times are final, so evaluating it again gives
  // what the replay got. A forced op's, which a later post could change, is kept.
  uint32_t bind_of(int32_t r, int64_t i) {
    const RankState& s = ranks_[static_cast<size_t>(r)];
    if (auto it = forced_binds_.find(op_index(s, i)); it != forced_binds_.end()) return it->second;
    Completion done{};
    evaluate(r, s.ops[i], op_start(r, i), true, &done);
    return done.bind;
  }

  // The prediction and the critical path, walked back from the rank that ends last.
  void finish(Prediction& p) {
    const auto ranks = static_cast<int32_t>(g_.ops.size());
    int32_t last = 0;
    for (int32_t r = 0; r < ranks; ++r) {
      p.rank_end_seconds.push_back(std::max(0.0, ranks_[r].end) * 1e-9);
      if (ranks_[r].end > ranks_[last].end) last = r;
    }
    if (ranks == 0) return;
    p.predicted_seconds = std::max(0.0, ranks_[last].end) * 1e-9;
    p.critical_rank = last;
    double compute = 0, communication = 0;
    int32_t r = last;
    int64_t i = static_cast<int64_t>(g_.ops[r].size()) - 1;
    if (i >= 0 && g_.ops[r][static_cast<size_t>(i)].finalize) {
      compute += scaled_gap(g_.ops[r][static_cast<size_t>(i)]);
      --i;
    }
    // Each step goes back to an op that started no later, on the rank that posted what the
    // last one waited for; the bound only keeps a graph that broke that from walking forever.
    for (size_t steps = 0; i >= 0 && steps < ends_.size(); ++steps) {
      const uint32_t bind = bind_of(r, i);
      int32_t s = r;
      int64_t j = i;
      if (bind != kNone && g_.endpoints[bind].op != kNone) {
        s = g_.endpoints[bind].rank;
        j = g_.endpoints[bind].op;
      }
      communication += ranks_[r].ends[i] - op_start(s, j);
      compute += scaled_gap(g_.ops[s][static_cast<size_t>(j)]);
      if (s != r) ++p.rank_switches;
      r = s;
      i = j - 1;
    }
    p.compute_seconds = compute * 1e-9;
    p.communication_seconds = communication * 1e-9;
  }

  const Graph& g_;
  const Model& m_;
  const WhatIf w_;
  std::vector<double> posted_at_;
  WaitLists waiters_;                                  // per endpoint: ranks waiting for its post
  std::vector<size_t> collective_posted_;
  WaitLists collective_waiters_;                       // per collective: for its last post
  std::vector<Completion> collective_latest_;  // per collective, once all members posted
  static constexpr uint32_t kUnknownRoot = kNone - 1;
  std::vector<uint32_t> root_of_;
  std::vector<RankState> ranks_;
  std::vector<double> ends_;   // every rank's ops' ends, rank after rank
  std::unordered_map<size_t, uint32_t> forced_binds_;   // op (its index in ends_) -> bind
  std::vector<int32_t> ready_;
};

}  // namespace

Prediction replay(const Graph& graph, const Model& model, const WhatIf& what_if) {
  return Replay(graph, model, what_if).run();
}

}  // namespace pskel::simulate

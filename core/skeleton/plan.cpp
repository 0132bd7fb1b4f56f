// Call orders and deadlock-free communication plans for runs of point-to-point calls.
//
// Order. The merge (core/merge/normalize.cpp) puts each rank's point-to-point calls into a
// canonical order so that ranks line up; replayed literally that order can lose the original's
// pipelining (a rank that received and then sent back to back now sends first; one that
// computed between keeps its order, the merge's rule (e)) and can need eager buffering
// the original did not. So within a run of point-to-point items (a Group) each rank runs its
// items in its own original order, read from its first execution of the run. Where a rank's
// records of different items interleave (no order of whole items reproduces it), that rank
// keeps the merged order.
//
// Planning (seed 002's communication planning, reduced to what a skeleton needs). The whole
// skeleton is simulated on all ranks under rendezvous semantics: every blocking send (Send,
// Ssend, Rsend) waits until its receive is posted, Bsend never waits, receives and probes wait
// for a send, collectives for every member; matching follows MPI (communicator, source, tag,
// posting order). Loops run in full unless the simulation would get too long, then the big
// ones run a few iterations (their bodies repeat). If ranks end blocked on each other, the
// order only worked through eager buffering: the innermost group (not yet rewritten) of each
// blocked call is rewritten - every receive of the group posted first (Irecv), every send
// non-blocking (Isend/Issend), one Waitall at its end - and the simulation runs again. A group
// that is a single loop is never rewritten itself: its body is (per iteration).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "skeleton/model.h"

namespace pskel::skeleton::detail {

using tr::FunctionId;

namespace {

constexpr size_t kMaxSimOps = 4000000;  // all ranks together, per simulation
constexpr uint64_t kCappedIterations = 3; // iterations of a big loop when the budget is short
constexpr int kMaxRounds = 16;            // simulations (each may rewrite more groups)
constexpr int64_t kAny = INT64_MIN;      // a tag that matches every tag

bool tags_match(int64_t a, int64_t b) { return a == kAny || b == kAny || a == b; }

// A tag rule as one value for matching: its constant, or kAny if it varies or is a wildcard.
int64_t tag_of(const lt::Rule& rule) {
  return rule.kind == lt::Rule::Kind::constant && rule.base >= 0 ? rule.base : kAny;
}

// Whether `pred` holds for an event of the item (itself, or one in the loop's body).
template <class Pred>
bool any_event(const lt::Item& item, Pred&& pred) {
  if (!item.is_loop()) return pred(item.event());
  return std::ranges::any_of(item.loop().body, [&](const lt::Item& i) { return any_event(i, pred); });
}

bool participates(const lt::Item& item, int32_t rank) {
  return item.is_loop() ? item.loop().timing_of(rank) != nullptr
                        : item.event().call_of(rank) != nullptr;
}

size_t participant_index(const lt::Event& event, int32_t rank) {
  const lt::RankCall* c = event.call_of(rank);
  return c ? static_cast<size_t>(c - event.ranks.data()) : SIZE_MAX;
}

void events_in(const lt::Item& item, std::vector<const lt::Event*>& out) {
  if (!item.is_loop()) {
    out.push_back(&item.event());
    return;
  }
  for (const lt::Item& inner : item.loop().body) events_in(inner, out);
}

// ---- simulation ------------------------------------------------------------------------------

struct SimOp {
  enum class Kind : uint8_t { send, recv, sendrecv, start, complete, group_wait, collective, probe } kind;
  bool blocking = false;
  bool buffered = false;      // Bsend
  bool group_request = false; // rewritten: a request completed by the group's Waitall
  int32_t peer = tr::kNoRank, source = tr::kNoRank;
  int64_t tag = kAny, rtag = kAny;  // kAny: varies, or MPI_ANY_TAG
  int comm = 0;
  uint32_t event = kNoEvent;  // request-creating event (non-blocking), or completion event
  FunctionId fn{};
  std::vector<uint32_t> list; // start: init events; complete: covered events
  std::vector<uint32_t> nth;  // start: which live request of each init event
  Group* group = nullptr;     // innermost group the op comes from (null: none)
};

struct Message {
  int32_t from, to;
  int comm;
  int64_t tag;   // kAny matches every tag
  bool matched = false;
};

class Simulator {
 public:
  Simulator(const Analysis& a, std::vector<std::vector<SimOp>>& ops)
      : a_(a), ops_(ops), state_(ops_.size()), group_(ops_.size()), changed_(ops_.size(), true) {}

  // Returns the ranks left blocked on each other (empty: the program completes).
  std::vector<int32_t> run() {
    // Sweeps in rank order until one makes no progress. A rank is stepped only if what its
    // blocked op waits for may have changed since it last failed (changed_): a failed step has
    // no effect, so skipping one that would fail again leaves every post in the same order.
    // master-worker at 16,384 ranks took 443 sweeps, and 94 % of 7.7 million tries had failed.
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t r = 0; r < ops_.size(); ++r) {
        if (!changed_[r]) continue;
        changed_[r] = false;
        while (step(static_cast<int32_t>(r))) progress = true;
      }
    }
    // Blocked ranks that no unfinished rank will release wait on something outside what was
    // simulated (a capped loop's later iterations); what remains waits in a cycle.
    std::set<int32_t> blocked;
    for (size_t r = 0; r < ops_.size(); ++r)
      if (state_[r].pc < ops_[r].size()) blocked.insert(static_cast<int32_t>(r));
    bool removed = true;
    while (removed) {
      removed = false;
      for (auto it = blocked.begin(); it != blocked.end();) {
        bool waits_on_blocked = false;
        for (int32_t p : partners(*it))
          if (blocked.count(p) != 0 && p != *it) waits_on_blocked = true;
        if (!waits_on_blocked) {
          it = blocked.erase(it);
          removed = true;
        } else {
          ++it;
        }
      }
    }
    return {blocked.begin(), blocked.end()};
  }

  const SimOp* current(int32_t rank) const {
    const State& s = state_[static_cast<size_t>(rank)];
    const auto& ops = ops_[static_cast<size_t>(rank)];
    return s.pc < ops.size() ? &ops[s.pc] : nullptr;
  }

 private:
  struct State {
    size_t pc = 0;
    bool posted = false;
    std::vector<size_t> pending;  // messages the current op waits on
    std::vector<size_t> taken;    // requests a completion took
    std::map<int, uint64_t> collectives;  // per communicator: collectives entered
    std::pair<int, uint64_t> in_collective{-1, 0};
    int32_t last_source = tr::kProcNull;  // of the last wildcard blocking receive (replies)
  };

  bool matched(size_t m) const { return m == SIZE_MAX || messages_[m].matched; }

  size_t post(int32_t from, int32_t to, int comm, int64_t tag, bool is_send) {
    if (to == tr::kProcNull || from == tr::kProcNull || to < 0 || comm < 0) return SIZE_MAX;
    messages_.push_back(Message{from, to, comm, tag});
    const size_t m = messages_.size() - 1;
    if (is_send) mark_changed(to);   // a probe there may find it
    auto& mine = (is_send ? sends_ : recvs_)[{comm, to}];
    auto& theirs = (is_send ? recvs_ : sends_)[{comm, to}];
    for (auto it = theirs.begin(); it != theirs.end(); ++it) {
      const Message& other = messages_[*it];
      const int32_t want = is_send ? other.from : from;   // the receive's source
      const int32_t sender = is_send ? from : other.from;
      if (want != tr::kAnySource && want != sender) continue;
      if (!tags_match(other.tag, tag)) continue;
      messages_[m].matched = messages_[*it].matched = true;
      mark_changed(is_send ? other.to : other.from);   // its poster
      messages_[is_send ? *it : m].from = sender;  // a wildcard receive's source, resolved
      theirs.erase(it);
      return m;
    }
    mine.push_back(m);
    return m;
  }

  bool probe_finds(int32_t rank, const SimOp& op) const {
    const auto it = sends_.find({op.comm, rank});
    if (it == sends_.end()) return false;
    for (size_t m : it->second) {
      const Message& msg = messages_[m];
      if ((op.source == tr::kAnySource || op.source == msg.from) && tags_match(op.rtag, msg.tag))
        return true;
    }
    return false;
  }

  // The members of `comm`; nullptr for self (comm 1) and unknown communicators, whose one
  // member is the rank that calls.
  const std::vector<int32_t>* members_of(int comm) const {
    if (comm == 1 || comm < 0 || static_cast<size_t>(comm) >= a_.comms.size()) return nullptr;
    return &a_.comms[static_cast<size_t>(comm)].members;
  }
  int comm_size(int comm) const {
    const std::vector<int32_t>* members = members_of(comm);
    return members ? static_cast<int>(members->size()) : 1;
  }

  std::deque<size_t>& live(int32_t rank, uint32_t event) {
    return requests_[(uint64_t{static_cast<uint32_t>(rank)} << 32) | event];
  }

  bool persistent(uint32_t e) const {
    return a_.events[e].fn == FunctionId::MPI_Send_init ||
           a_.events[e].fn == FunctionId::MPI_Recv_init;
  }

  bool step(int32_t rank) {
    State& s = state_[static_cast<size_t>(rank)];
    const auto& ops = ops_[static_cast<size_t>(rank)];
    if (s.pc >= ops.size()) return false;
    const SimOp& op = ops[s.pc];
    if (!s.posted) {
      s.posted = true;
      s.pending.clear();
      switch (op.kind) {
        case SimOp::Kind::send: {
          const int32_t to = op.peer == lt::kLastWildcardSource ? s.last_source : op.peer;
          const size_t m = post(rank, to, op.comm, op.tag, true);
          if (op.group_request) group_[static_cast<size_t>(rank)].push_back(m);
          else if (!op.blocking && op.event != kNoEvent) live(rank, op.event).push_back(m);
          else if (op.blocking && !op.buffered) s.pending.push_back(m);
          break;
        }
        case SimOp::Kind::recv: {
          const size_t m = post(op.source, rank, op.comm, op.rtag, false);
          if (op.group_request) group_[static_cast<size_t>(rank)].push_back(m);
          else if (!op.blocking && op.event != kNoEvent) live(rank, op.event).push_back(m);
          else s.pending.push_back(m);
          break;
        }
        case SimOp::Kind::sendrecv:
          s.pending.push_back(post(rank, op.peer, op.comm, op.tag, true));
          s.pending.push_back(post(op.source, rank, op.comm, op.rtag, false));
          break;
        case SimOp::Kind::start:
          for (size_t k = 0; k < op.list.size(); ++k) {
            const uint32_t init = op.list[k];
            const EventInfo& info = a_.events[init];
            const lt::RankCall* c = info.event->call_of(rank);
            if (c == nullptr) continue;
            const size_t j = participant_index(*info.event, rank);
            const int comm = info.comm[j];
            const size_t m = info.fn == FunctionId::MPI_Send_init
                                 ? post(rank, c->peer, comm, tag_of(c->tag), true)
                                 : post(c->source, rank, comm, tag_of(c->recv_tag), false);
            auto& q = live(rank, init);
            const size_t nth = k < op.nth.size() ? op.nth[k] : 0;
            if (q.size() <= nth) q.resize(nth + 1, SIZE_MAX);
            q[nth] = m;
          }
          break;
        case SimOp::Kind::complete: {
          s.taken.clear();
          std::map<uint32_t, size_t> used;
          for (uint32_t e : op.list) {
            auto& q = live(rank, e);
            const size_t k = used[e]++;
            if (k < q.size()) s.taken.push_back(q[k]);
          }
          break;
        }
        case SimOp::Kind::group_wait:
          s.pending = group_[static_cast<size_t>(rank)];
          group_[static_cast<size_t>(rank)].clear();
          break;
        case SimOp::Kind::collective: {
          const uint64_t seq = s.collectives[op.comm]++;
          s.in_collective = {op.comm, seq};
          if (++arrived_[{op.comm, seq}] == comm_size(op.comm)) changed_members(op.comm);
          break;
        }
        case SimOp::Kind::probe: break;
      }
    }
    bool done = true;
    switch (op.kind) {
      case SimOp::Kind::complete: {
        size_t complete = 0;
        for (size_t m : s.taken) complete += matched(m) ? 1 : 0;
        const bool any = op.fn == FunctionId::MPI_Waitany || op.fn == FunctionId::MPI_Waitsome;
        const bool test = op.fn == FunctionId::MPI_Test || op.fn == FunctionId::MPI_Testall ||
                          op.fn == FunctionId::MPI_Testany || op.fn == FunctionId::MPI_Testsome;
        if (!test) done = any ? (complete > 0 || s.taken.empty()) : complete == s.taken.size();
        if (done) {  // drop what completed (Waitany: one of them)
          const bool one = op.fn == FunctionId::MPI_Waitany || op.fn == FunctionId::MPI_Testany;
          bool dropped = false;
          for (size_t m : s.taken) {
            if (!matched(m) || (one && dropped)) continue;
            if (op.fn == FunctionId::MPI_Testall && complete != s.taken.size()) continue;
            for (uint32_t e : op.list) {
              if (persistent(e)) continue;
              auto& q = live(rank, e);
              const auto it = std::find(q.begin(), q.end(), m);
              if (it != q.end()) q.erase(it);
            }
            dropped = true;
          }
        }
        break;
      }
      case SimOp::Kind::collective:
        done = arrived_[s.in_collective] >= comm_size(op.comm);
        break;
      case SimOp::Kind::probe:
        done = probe_finds(rank, op);
        break;
      default:
        for (size_t m : s.pending) done = done && matched(m);
        if (done && op.kind == SimOp::Kind::recv && op.source == tr::kAnySource && !s.pending.empty() &&
            s.pending[0] != SIZE_MAX)
          s.last_source = messages_[s.pending[0]].from;
        break;
    }
    if (!done) return false;
    ++s.pc;
    s.posted = false;
    return true;
  }

  // Whether `rank`'s ops still to come post a message that matches `m`.
  bool will_match(int32_t rank, const Message& m) const {
    const State& s = state_[static_cast<size_t>(rank)];
    const auto& ops = ops_[static_cast<size_t>(rank)];
    const bool need_recv = m.to == rank;  // m is a send to `rank`
    for (size_t i = s.pc + (s.posted ? 1 : 0); i < ops.size(); ++i) {
      const SimOp& op = ops[i];
      if (op.kind == SimOp::Kind::start) {
        for (uint32_t init : op.list) {
          const EventInfo& info = a_.events[init];
          const lt::RankCall* c = info.event->call_of(rank);
          if (c == nullptr) continue;
          const bool is_send = info.fn == FunctionId::MPI_Send_init;
          if (need_recv && !is_send && (c->source == m.from || c->source == tr::kAnySource) &&
              tags_match(tag_of(c->recv_tag), m.tag))
            return true;
          if (!need_recv && is_send && c->peer == m.to && tags_match(tag_of(c->tag), m.tag)) return true;
        }
        continue;
      }
      if (op.comm != m.comm) continue;
      const bool sends = op.kind == SimOp::Kind::send || op.kind == SimOp::Kind::sendrecv;
      const bool recvs = op.kind == SimOp::Kind::recv || op.kind == SimOp::Kind::sendrecv;
      if (need_recv && recvs && (op.source == m.from || op.source == tr::kAnySource) &&
          tags_match(op.rtag, m.tag))
        return true;
      if (!need_recv && sends && (op.peer == m.to || op.peer == lt::kLastWildcardSource) &&
          tags_match(op.tag, m.tag))
        return true;
    }
    return false;
  }

  // The ranks `rank` waits on: those that will post a match for one of its unmatched messages,
  // or the members of its collective that have not arrived.
  std::vector<int32_t> partners(int32_t rank) const {
    const State& s = state_[static_cast<size_t>(rank)];
    std::vector<int32_t> out;
    const SimOp& op = ops_[static_cast<size_t>(rank)][s.pc];
    if (op.kind == SimOp::Kind::collective) {
      const auto& members = op.comm == 1 ? std::vector<int32_t>{rank}
                                         : a_.comms[static_cast<size_t>(std::max(op.comm, 0))].members;
      for (int32_t m : members) {
        const State& other = state_[static_cast<size_t>(m)];
        const auto it = other.collectives.find(op.comm);
        const uint64_t entered = it == other.collectives.end() ? 0 : it->second;
        if (entered <= s.in_collective.second) out.push_back(m);
      }
      return out;
    }
    if (op.kind == SimOp::Kind::probe) {
      for (size_t r = 0; r < ops_.size(); ++r)
        if (op.source == tr::kAnySource || op.source == static_cast<int32_t>(r)) out.push_back(static_cast<int32_t>(r));
      return out;
    }
    auto add = [&](size_t m) {
      if (m == SIZE_MAX || messages_[m].matched) return;
      const Message& msg = messages_[m];
      const int32_t other = msg.from == rank ? msg.to : msg.from;
      for (size_t r = 0; r < ops_.size(); ++r) {
        const auto b = static_cast<int32_t>(r);
        if (other != tr::kAnySource && other != b) continue;
        if (will_match(b, msg)) out.push_back(b);
      }
    };
    for (size_t m : s.pending) add(m);
    for (size_t m : s.taken) add(m);
    return out;
  }

  void mark_changed(int32_t rank) {
    if (rank >= 0 && static_cast<size_t>(rank) < changed_.size())
      changed_[static_cast<size_t>(rank)] = true;
  }
  // The members of `comm` may go on: its collective has everybody (of self or an unknown
  // communicator, the rank that arrived, which goes on anyway).
  void changed_members(int comm) {
    if (const std::vector<int32_t>* members = members_of(comm))
      for (int32_t member : *members) mark_changed(member);
  }

  const Analysis& a_;
  std::vector<std::vector<SimOp>>& ops_;
  std::vector<State> state_;
  std::vector<Message> messages_;
  // Unmatched messages by (communicator, destination), in posting order.
  std::map<std::pair<int, int32_t>, std::deque<size_t>> sends_, recvs_;
  // Live requests per (rank, creating event): hashed, looked up at every non-blocking op (a
  // tree of 16,384 ranks' pairs was 7 % of the skeleton stage).
  std::unordered_map<uint64_t, std::deque<size_t>> requests_;
  std::vector<std::vector<size_t>> group_;  // per rank: the group's requests posted so far
  std::map<std::pair<int, uint64_t>, int> arrived_;
  std::vector<bool> changed_;   // per rank: whether to step it in the next sweep
};

// ---- planning ------------------------------------------------------------------------------

class Planner {
 public:
  explicit Planner(Analysis& a) : a_(a) {}

  void plan(const std::vector<lt::Item>& body) {
    for (const lt::Item& item : body)
      if (item.is_loop()) plan(item.loop().body);
    std::vector<Group> groups;
    for (size_t i = 0; i < body.size();) {
      if (!groupable(body[i])) {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < body.size() && groupable(body[end])) ++end;
      Group g;
      g.first = i;
      g.last = end;
      // A reply, or a wildcard receive that a reply may answer (the two can be in groups of
      // their own where a call of another kind stands between them).
      for (size_t k = i; k < end; ++k)
        g.replies = g.replies || any_event(body[k], [&](const lt::Event& e) {
                      return has_reply(e) || (a_.replies && is_wildcard_receive(e));
                    });
      orders(body, g);
      groups.push_back(std::move(g));
      i = end;
    }
    a_.groups[&body] = groups;
  }

  // Simulates the whole program; rewrites the groups of calls that block each other.
  void check(const std::vector<lt::Item>& top) {
    uint64_t full = 0;
    for (int32_t r = 0; r < a_.world_size; ++r) full += count_ops(top, r, 0);
    capped_ = full > kMaxSimOps;
    for (int round = 0; round < kMaxRounds; ++round) {
      std::vector<std::vector<SimOp>> ops(static_cast<size_t>(a_.world_size));
      for (int32_t r = 0; r < a_.world_size; ++r) {
        chain_.clear();
        instance_.clear();
        body_ops(top, r, ops[static_cast<size_t>(r)], false);
      }
      Simulator sim(a_, ops);
      const std::vector<int32_t> stuck = sim.run();
      if (stuck.empty()) return;
      bool changed = false;
      std::string ranks;
      for (size_t i = 0; i < stuck.size() && i < 8; ++i) ranks += fmt::format("{}{}", i ? ", " : "", stuck[i]);
      if (stuck.size() > 8) ranks += ", ...";
      if (std::getenv("PSKEL_DEBUG_PLAN") != nullptr)
        for (int32_t r : stuck) {
          const SimOp* op = sim.current(r);
          std::fprintf(stderr, "plan round %d: rank %d blocked in %s (event %u, peer %d, source %d)\n",
                       round, r, op ? std::string(function_name(op->fn)).c_str() : "-",
                       op ? op->event : 0, op ? op->peer : 0, op ? op->source : 0);
        }
      std::set<Group*> blamed;
      for (int32_t r : stuck) {
        const SimOp* op = sim.current(r);
        Group* g = op ? op->group : nullptr;
        // The innermost group of the blocked call not planned to the end yet: first its
        // receives go first, then its sends are deferred, then the group around it.
        while (g != nullptr && g->defer) g = parent_.count(g) ? parent_[g] : nullptr;
        if (g != nullptr) blamed.insert(g);
      }
      for (Group* g : blamed) {
        if (!g->rewrite && g->replies) {  // receives first would post a reply before its source
          g->rewrite = g->defer = true;
          g->reason = fmt::format(
              "blocking calls of ranks {} wait on each other unless messages are buffered (eager); "
              "sends deferred (a reply's destination is known only once its receive completed)",
              ranks);
        } else if (g->rewrite) {
          g->defer = true;
          g->reason += "; receives first was not enough: sends deferred";
        } else {
          g->rewrite = true;
          g->reason = fmt::format(
              "blocking calls of ranks {} wait on each other unless messages are buffered (eager)", ranks);
        }
        changed = true;
      }
      if (!changed) {
        a_.warnings.push_back(fmt::format(
            "ranks {} may wait on each other in calls that cannot be rewritten (collectives or "
            "probes in a cycle with blocking sends); the skeleton keeps the traced order",
            ranks));
        return;
      }
    }
    a_.warnings.push_back("deadlock planning stopped after too many rounds");
  }

 private:
  // The receive tag the skeleton posts (emit.cpp: wildcards, and any tag on communicators
  // whose tags vary).
  int64_t recv_tag(const EventInfo& info, size_t j) const {
    if ((info.flags[j] & tr::kFlagAnyTag) != 0) return kAny;
    if (info.comm[j] >= 0 && a_.comm_tags_vary[static_cast<size_t>(info.comm[j])]) return kAny;
    return tag_of(info.event->ranks[j].recv_tag);
  }

  bool groupable(const lt::Item& item) {
    if (!item.is_loop()) return is_groupable(a_.events[item.event().id]);
    const auto it = loop_groupable_.find(&item.loop());
    if (it != loop_groupable_.end()) return it->second;
    bool all = true;
    for (const lt::Item& inner : item.loop().body) all = all && groupable(inner);
    loop_groupable_[&item.loop()] = all;
    return all;
  }

  // Each rank's order of the group's items, from its first execution of the group.
  void orders(const std::vector<lt::Item>& body, Group& g) {
    std::unordered_map<uint32_t, size_t> item_of;  // event id -> item index
    for (size_t k = g.first; k < g.last; ++k) {
      std::vector<const lt::Event*> evs;
      events_in(body[k], evs);
      for (const lt::Event* e : evs) item_of[e->id] = k;
    }
    g.order.assign(static_cast<size_t>(a_.world_size), {});
    for (int32_t r = 0; r < a_.world_size; ++r) {
      std::vector<size_t> merged_order;
      uint32_t start = UINT32_MAX;
      for (size_t k = g.first; k < g.last; ++k) {
        if (!participates(body[k], r)) continue;
        merged_order.push_back(k);
        std::vector<const lt::Event*> evs;
        events_in(body[k], evs);
        for (const lt::Event* e : evs)
          if (const lt::RankCall* c = e->call_of(r)) start = std::min(start, c->sample.record);
      }
      auto& order = g.order[static_cast<size_t>(r)];
      order = merged_order;
      if (merged_order.size() < 2 || start == UINT32_MAX) continue;
      std::vector<size_t> seen_order;
      std::set<size_t> seen;
      bool blocky = true;
      size_t current = SIZE_MAX;
      const auto& of = a_.event_of[static_cast<size_t>(r)];
      for (size_t i = start; i < of.size(); ++i) {
        if (of[i] == kNoEvent) continue;
        const auto it = item_of.find(of[i]);
        if (it == item_of.end()) break;
        const size_t k = it->second;
        if (k == current) continue;
        if (seen.count(k) != 0) {
          // The next execution starts again with the first item; coming back to another one
          // means the items' calls interleave.
          if (seen.size() < merged_order.size() || k != seen_order.front()) blocky = false;
          break;
        }
        seen.insert(k);
        seen_order.push_back(k);
        current = k;
      }
      if (blocky && seen.size() == merged_order.size()) order = seen_order;
      if (order != merged_order) g.reordered = true;
    }
  }

  uint64_t iterations(const lt::Loop& loop) const {
    return capped_ ? std::min<uint64_t>(loop.iterations, kCappedIterations) : loop.iterations;
  }

  uint64_t count_ops(const std::vector<lt::Item>& items, int32_t rank, int depth) {
    uint64_t n = 0;
    for (const lt::Item& item : items) {
      if (item.is_loop()) {
        n += item.loop().iterations * count_ops(item.loop().body, rank, depth + 1);
      } else if (participates(item, rank)) {
        ++n;
      }
      if (n > kMaxSimOps) return n;
    }
    return n;
  }

  // Ops of one execution of body[k] on `rank`, following the plans of inner groups.
  void item_ops(const std::vector<lt::Item>& body, size_t k, int32_t rank, std::vector<SimOp>& out,
                bool rewrite, bool defer = false) {
    const lt::Item& item = body[k];
    if (item.is_loop()) {
      const uint64_t n = iterations(item.loop());
      for (uint64_t it = 0; it < n; ++it) body_ops(item.loop().body, rank, out, rewrite, defer);
      return;
    }
    const lt::Event& ev = item.event();
    const size_t j = participant_index(ev, rank);
    if (j == SIZE_MAX) return;
    const EventInfo& info = a_.events[ev.id];
    if (!info.skip.empty()) return;
    const lt::RankCall& c = ev.ranks[j];
    SimOp op;
    op.comm = info.comm[j];
    op.fn = info.fn;
    op.peer = c.peer;
    op.source = c.source;
    op.tag = tag_of(c.tag);
    op.rtag = recv_tag(info, j);
    op.event = ev.id;
    op.group = chain_.empty() ? nullptr : chain_.back();
    switch (info.fn) {
      case FunctionId::MPI_Send:
      case FunctionId::MPI_Ssend:
      case FunctionId::MPI_Rsend:
      case FunctionId::MPI_Bsend:
        op.kind = SimOp::Kind::send;
        op.blocking = !rewrite && !defer;
        op.group_request = rewrite && !defer;
        op.buffered = info.fn == FunctionId::MPI_Bsend;
        if (defer) op.event = kNoEvent;  // completed at the end of the run
        break;
      case FunctionId::MPI_Isend:
      case FunctionId::MPI_Issend: op.kind = SimOp::Kind::send; break;
      case FunctionId::MPI_Irecv: op.kind = SimOp::Kind::recv; break;
      case FunctionId::MPI_Recv:
        if (rewrite && !defer) return;  // posted at the start of the group
        op.kind = SimOp::Kind::recv;
        op.blocking = true;
        break;
      case FunctionId::MPI_Sendrecv:
      case FunctionId::MPI_Sendrecv_replace:
        if (rewrite && !defer) {
          op.kind = SimOp::Kind::send;
          op.group_request = true;
        } else {
          op.kind = SimOp::Kind::sendrecv;
          op.blocking = true;
        }
        break;
      case FunctionId::MPI_Start:
      case FunctionId::MPI_Startall:
        op.kind = SimOp::Kind::start;
        op.list = info.starts[j];
        op.nth = info.start_nth[j];
        break;
      case FunctionId::MPI_Probe: op.kind = SimOp::Kind::probe; break;
      default:
        if (info.kind == tr::FunctionKind::completion) {
          op.kind = SimOp::Kind::complete;
          const uint64_t instance = instance_[ev.id]++;
          op.list = info.period > 1 ? info.phase_covers[j][instance % info.period] : info.covers[j];
          break;
        }
        if (info.kind == tr::FunctionKind::collective ||
            (info.kind == tr::FunctionKind::comm && info.fn != FunctionId::MPI_Comm_free)) {
          op.kind = SimOp::Kind::collective;
          break;
        }
        return;  // non-blocking collectives, Iprobe, inits, frees, Init, Finalize
    }
    out.push_back(std::move(op));
  }

  // The receives a rewritten group posts first, in the rank's order.
  void prepost_ops(const std::vector<lt::Item>& body, size_t k, int32_t rank, std::vector<SimOp>& out) {
    const lt::Item& item = body[k];
    if (item.is_loop()) {
      const uint64_t n = iterations(item.loop());
      for (uint64_t it = 0; it < n; ++it)
        for (size_t i = 0; i < item.loop().body.size(); ++i) prepost_ops(item.loop().body, i, rank, out);
      return;
    }
    const lt::Event& ev = item.event();
    const size_t j = participant_index(ev, rank);
    if (j == SIZE_MAX) return;
    const EventInfo& info = a_.events[ev.id];
    if (info.fn != FunctionId::MPI_Recv && info.fn != FunctionId::MPI_Sendrecv &&
        info.fn != FunctionId::MPI_Sendrecv_replace)
      return;
    SimOp op;
    op.kind = SimOp::Kind::recv;
    op.group_request = true;
    op.comm = info.comm[j];
    op.source = ev.ranks[j].source;
    op.rtag = recv_tag(info, j);
    op.fn = info.fn;
    op.group = chain_.empty() ? nullptr : chain_.back();
    out.push_back(std::move(op));
  }

  void group_ops(const std::vector<lt::Item>& body, Group& g, int32_t rank, std::vector<SimOp>& out,
                 bool inside_rewrite, bool inside_defer) {
    const bool defer = inside_defer || (g.defer && !inside_rewrite);
    const bool rewrite = g.rewrite && !inside_rewrite && !defer;
    if (!chain_.empty()) parent_[&g] = chain_.back();
    chain_.push_back(&g);
    const auto& order = g.order[static_cast<size_t>(rank)];
    if (rewrite)
      for (size_t k : order) prepost_ops(body, k, rank, out);
    for (size_t k : order) item_ops(body, k, rank, out, rewrite || inside_rewrite, defer);
    if (rewrite) {
      SimOp wait;
      wait.kind = SimOp::Kind::group_wait;
      wait.group = &g;
      out.push_back(std::move(wait));
    }
    chain_.pop_back();
  }

  void body_ops(const std::vector<lt::Item>& body, int32_t rank, std::vector<SimOp>& out,
                bool inside_rewrite, bool inside_defer = false) {
    const auto it = a_.groups.find(&body);
    std::vector<Group>* groups = it == a_.groups.end() ? nullptr : &it->second;
    size_t next = 0;
    for (size_t i = 0; i < body.size();) {
      if (groups && next < groups->size() && (*groups)[next].first == i) {
        Group& g = (*groups)[next++];
        // A group that is one loop is planned inside: do not blame it.
        const bool single_loop = g.last - g.first == 1 && body[g.first].is_loop();
        if (single_loop) item_ops(body, i, rank, out, inside_rewrite, inside_defer);
        else group_ops(body, g, rank, out, inside_rewrite, inside_defer);
        i = g.last;
        continue;
      }
      item_ops(body, i, rank, out, inside_rewrite, inside_defer);
      ++i;
    }
  }

  Analysis& a_;
  std::map<const lt::Loop*, bool> loop_groupable_;
  std::vector<Group*> chain_;              // groups around the op being generated
  std::map<uint32_t, uint64_t> instance_;  // per event: instances generated so far (this rank)
  std::map<Group*, Group*> parent_;        // group -> the group around it
  bool capped_ = false;
};

}  // namespace

void plan_groups(const lt::LoopTree& tree, Analysis& analysis) {
  Planner planner(analysis);
  planner.plan(tree.items);
  planner.check(tree.items);
}

}  // namespace pskel::skeleton::detail

// Algorithm 1 (seed 000 §2.2): puts the point-to-point calls of one rank into a canonical order,
// so that ranks that make the same exchange in different orders produce the same sequence.
// Per rank, in O(records), no knowledge of the other ranks.
//
// The canonical order.
//
// 1. Runs. A run is a maximal stretch of consecutive point-to-point calls: MPI_Isend/Issend,
//    Irecv, Send/Ssend/Rsend/Bsend, Sendrecv(_replace), Recv, Start/Startall and the
//    completions Wait*/Test*. Every other call (collectives, probes, persistent-request setup,
//    Request_free, communicator calls, Init/Finalize) ends the run: no call ever moves across
//    it. Pseudo-records are not events and are left out before anything else.
//
// 2. Rounds. Sorting a whole run would turn a pipelined sweep (Recv, Send, Recv, Send, ...,
//    hundreds of calls without a collective) into all sends followed by all receives, which
//    destroys the loop the next stage must find and the pipeline the skeleton must replay. So
//    a run is cut into rounds, each meant to be one exchange. Every posting call (all but the
//    completions) has a channel: (to or from, communicator, peer as recorded), where
//    MPI_ANY_SOURCE and MPI_PROC_NULL count as peers; a Start uses the channel of the call that
//    created its first request. A call starts a new round when
//    (a) its channel was used in the round, and that use had another role (Send, then Isend
//        to the same peer), or since that use there was a posting call on another channel, or
//        a completion of a request posted on this channel. So "S S R R" (two messages to one
//        neighbour) stays one round, "S R S R" is two, "Irecv Wait Irecv Wait" from one
//        neighbour is two, "R S Isend" is two; completions of other channels do not count, so
//        "Irecv(l) Wait Send(r)" and "Irecv(l) Send(r) Wait" cut at the same places.
//    (b) it starts a persistent request that the round already started or completed.
//
// 3. Order within a round (stable: calls of one role keep their call order):
//      Irecv (and Starts of receive requests)  <  Isend/Issend (Starts of send requests)
//      <  blocking sends  <  Sendrecv  <  blocking Recv  <  Wait*/Test*
//    - Sends before blocking receives is the seed's rule: a ring in which rank 0 sends then
//      receives while the others receive then send becomes "Send, Recv" everywhere. (Replayed
//      literally on every rank, that needs the sends to be buffered; the skeleton stage must
//      not rely on the merged order of blocking calls being deadlock-free.)
//    - Non-blocking receives are posted first, then sends, then completions. The seed orders
//      "Irecv, Wait, Send"; we put the Wait after the Send. Both are canonical (every rank
//      ends the same), but ours is the order of a deadlock-free exchange (receives posted
//      before anything blocks), while "Irecv, Wait, Send" on every rank of a ring waits
//      forever.
//    - Request safety holds by construction: a completion only ever moves later relative to
//      the posting calls of its round and never relative to other completions, and a posting
//      call only moves earlier; so a Wait stays after the Isend/Irecv/Start it completes, and
//      rule 2(b) keeps a restarted persistent request after its previous completion.
//
// Limits: rounds are a local guess. Two statements in a row that end and begin with a call of
// one role on one channel ("... Send(r)" then "Send(r) Recv(l)") look like one exchange with
// two sends, and a rank that makes the first statement in another order cuts elsewhere.
// Algorithm 2 pulls calls forward within a round to absorb some of that.
#include <array>
#include <cstdint>

#include "merge/internal.h"

namespace pskel::merge::detail {

namespace {

namespace tr = trace;

// Channel keys: direction (2 bits) << 48 | communicator (16) << 32 | peer (32, as recorded).
// A request whose creator is unknown is a channel of its own: kOwnRequest << 48 | id.
enum Direction : uint64_t { kToPeer = 1, kFromPeer = 2, kOwnRequest = 3 };

uint64_t channel_key(Direction d, const tr::Record& r, int32_t peer) {
  const bool any = d == kFromPeer && (r.flags & tr::kFlagAnySource) != 0;
  return (uint64_t{d} << 48) | (uint64_t{r.comm} << 32) |
         static_cast<uint32_t>(any ? tr::kAnySource : peer);
}

// A request is a receive request if the call that created it had a source (Irecv, Recv_init).
bool is_receive(const tr::Record& creator) { return creator.source != tr::kNoRank; }

uint64_t request_channel(const RankView& v, int64_t id) {
  const tr::Record* c = v.creator_of(id);
  if (!c) return (uint64_t{kOwnRequest} << 48) | static_cast<uint32_t>(id);
  return is_receive(*c) ? channel_key(kFromPeer, *c, c->source)
                        : channel_key(kToPeer, *c, c->peer);
}

// Per-call facts the round builder needs.
struct Call {
  Role raw;          // role_of(function)
  Role role;         // raw, with `start` resolved to recv_post / send_post
  uint64_t channel;  // 0 for completions
};

// A Start takes the role of what it starts (a receive if any of its requests is one) and the
// channel of its first request.
Call resolve(const RankView& v, uint32_t index) {
  const tr::Record& r = v.record(index);
  const Role raw = role_of(r.function);
  switch (raw) {
    case Role::send_post:
    case Role::send:
    case Role::exchange:
      return {raw, raw, channel_key(kToPeer, r, r.peer)};
    case Role::recv_post:
    case Role::recv:
      return {raw, raw, channel_key(kFromPeer, r, r.source)};
    case Role::start: {
      Call call{raw, Role::send_post, 0};
      for_each_request(v, index, [&](int64_t id) {
        const tr::Record* c = v.creator_of(id);
        if (c && is_receive(*c)) call.role = Role::recv_post;
        if (call.channel == 0) call.channel = request_channel(v, id);
      });
      return call;
    }
    default:
      return {raw, raw, 0};
  }
}

// Cuts one run into rounds and sorts each round; see the file comment.
class RoundSorter {
 public:
  explicit RoundSorter(RankView& v) : v_(v) {}

  // Sorts order[begin, end), a whole run. Returns the number of records moved.
  uint64_t sort_run(size_t begin, size_t end) {
    uint64_t moved = 0;
    start_round(begin);
    for (size_t pos = begin; pos < end; ++pos) {
      const uint32_t index = v_.order[pos];
      const Call call = resolve(v_, index);
      if (pos != round_begin_ && starts_new_round(call, index)) {
        moved += sort_round(round_begin_, pos);
        start_round(pos);
      }
      note(call, index, pos);
    }
    return moved + sort_round(round_begin_, end);
  }

 private:
  void start_round(size_t pos) {
    round_begin_ = pos;
    ++v_.rounds;
    roles_.clear();
    used_.clear();
    completed_.clear();
    requests_.clear();
    last_post_ = other_post_ = -1;
    last_channel_ = 0;
  }

  // Whether a posting call on a channel other than `channel` came after position `pos`.
  bool other_post_after(uint64_t channel, int64_t pos) const {
    return (last_channel_ != channel ? last_post_ : other_post_) > pos;
  }

  bool starts_new_round(const Call& call, uint32_t index) {
    if (call.channel != 0) {
      if (const uint32_t* used = used_.find(call.channel)) {
        if (roles_[*used - round_begin_] != call.role) return true;
        if (other_post_after(call.channel, *used)) return true;
        const uint32_t* done = completed_.find(call.channel);
        if (done && *done > *used) return true;
      }
    }
    bool restarted = false;
    if (call.raw == Role::start)
      for_each_request(v_, index, [&](int64_t id) {
        restarted = restarted || (id != 0 && requests_.find(static_cast<uint64_t>(id)));
      });
    return restarted;
  }

  void note(const Call& call, uint32_t index, size_t pos) {
    roles_.push_back(call.role);
    v_.round[pos] = v_.rounds;
    const auto p = static_cast<uint32_t>(pos);
    if (call.channel != 0) {
      used_.set(call.channel, p);
      if (call.channel != last_channel_) other_post_ = last_post_;
      last_channel_ = call.channel;
      last_post_ = p;
    }
    for_each_request(v_, index, [&](int64_t id) {
      if (id == 0) return;
      requests_.set(static_cast<uint64_t>(id), 1);
      if (call.raw == Role::completion) completed_.set(request_channel(v_, id), p);
    });
  }

  // Stable counting sort of order[begin, end) by role; roles_ holds their roles in order.
  uint64_t sort_round(size_t begin, size_t end) {
    std::array<size_t, kReorderableRoles + 1> at{};
    for (Role r : roles_) ++at[static_cast<size_t>(r) + 1];
    for (size_t r = 1; r < at.size(); ++r) at[r] += at[r - 1];
    sorted_.resize(end - begin);
    for (size_t i = 0; i < roles_.size(); ++i)
      sorted_[at[static_cast<size_t>(roles_[i])]++] = v_.order[begin + i];
    uint64_t moved = 0;
    for (size_t i = 0; i < sorted_.size(); ++i) {
      moved += sorted_[i] != v_.order[begin + i];
      v_.order[begin + i] = sorted_[i];
    }
    return moved;
  }

  RankView& v_;
  size_t round_begin_ = 0;
  std::vector<Role> roles_;       // of order[round_begin_, ...)
  std::vector<uint32_t> sorted_;  // scratch of sort_round
  StampedMap used_;               // channel -> position of its last use in the round
  StampedMap completed_;          // channel -> position of the last completion of its requests
  StampedMap requests_;           // request ids started or completed in the round
  int64_t last_post_ = -1;        // position of the last posting call
  uint64_t last_channel_ = 0;     // and its channel
  int64_t other_post_ = -1;       // position of the last posting call on another channel
};

bool reorderable(Role role) {
  return static_cast<int>(role) < kReorderableRoles || role == Role::start;
}

}  // namespace

uint64_t channel_of_call(const RankView& v, uint32_t index) { return resolve(v, index).channel; }

uint64_t normalize(RankView& v) {
  const tr::RankTrace& t = *v.trace;
  v.order.clear();
  v.creator.assign(1, 0);
  for (uint32_t i = 0; i < t.records.size(); ++i) {
    const tr::Record& r = t.records[i];
    if (role_of(r.function) == Role::pseudo) continue;
    v.order.push_back(i);
    // Request ids count up from 1 per rank, so they index a vector; a hostile id past the
    // number of records is not followed.
    if (creates_request(r.function) && r.request != 0 && r.request <= t.records.size()) {
      if (v.creator.size() <= r.request) v.creator.resize(r.request + 1, 0);
      v.creator[r.request] = i + 1;
    }
  }
  uint64_t moved = 0;
  v.round.assign(v.order.size(), 0);
  v.rounds = 0;
  RoundSorter sorter(v);
  for (size_t pos = 0; pos < v.order.size();) {
    size_t end = pos;
    while (end < v.order.size() && reorderable(role_of(v.record(v.order[end]).function))) ++end;
    if (end == pos) {
      v.round[pos++] = ++v.rounds;  // a call outside runs is a round of its own
      continue;
    }
    moved += sorter.sort_run(pos, end);
    pos = end;
  }
  return moved;
}

}  // namespace pskel::merge::detail

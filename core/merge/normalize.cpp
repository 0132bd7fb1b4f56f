// Algorithm 1 (seed 000 §2.2): puts the point-to-point calls of one rank into a canonical order,
// so that ranks that make the same exchange in different orders produce the same sequence.
// Per rank, a pass over its sends (rule 2(e)'s statements) and one over its calls,
// O(records + aux words), no knowledge of the other ranks.
//
// The canonical order.
//
// 1. Runs. A run is a maximal stretch of consecutive point-to-point calls: MPI_Isend/Issend,
//    Irecv, Send/Ssend/Rsend/Bsend, Sendrecv(_replace), Recv, Probe, Start/Startall and the
//    completions Wait*/Test* of the run's own requests. Every other call ends the run, and no
//    call ever moves across it: collectives (blocking or not), Iprobe (a poll, made as often as
//    timing wants), persistent-request setup, Request_free, communicator calls, Init/Finalize,
//    and every completion made while no request posted in the run is pending. That last kind
//    completes the requests of a non-blocking collective, or of an exchange that a collective
//    or a probe already ended (ring: "Irecv, Barrier, Rsend, Wait"), or polls nothing: it ends
//    the exchange it belongs to, so moving it after later posts would rotate the loop (a
//    persistent exchange "Startall ... Waitall" after "Testany ... Waitall" of Iallreduce
//    requests would come out "Startall ... Testany ... Waitall Waitall"). Pseudo-records are
//    not events and are left out before anything else.
//
// 2. Rounds. Sorting a whole run would turn a pipelined sweep (Recv, Send, Recv, Send, ...,
//    hundreds of calls without a collective) into all sends followed by all receives, which
//    destroys the loop the next stage must find and the pipeline the skeleton must replay. So
//    a run is cut into rounds, each meant to be one exchange. Every posting call has channels:
//    (to or from, communicator, peer as recorded), where MPI_ANY_SOURCE and MPI_PROC_NULL
//    count as peers; a Sendrecv has both of its channels, a Start those of the calls that
//    created its requests, a Probe the one of the receive it announces; completions have none.
//    A call starts a new round when
//    (a) one of its channels was used in the round, and that use had another role (Send, then
//        Isend to the same peer), or since that use there was a posting call on another
//        channel, or a completion of a request posted on this channel, or the call is a
//        blocking send or receive and the round already holds as many blocking receives as
//        blocking sends (at least one of each). So "S S R R" (two messages to one neighbour)
//        stays one round, "S R S R" is two, "Irecv Wait Irecv Wait" from one neighbour is two,
//        "R S Isend" is two, and "Bsend(l) Recv(l) Recv(l) Send(l)" (a two-rank ring: one
//        statement ends with a receive, the next starts with one) is two;
//    (b) it is a blocking send or receive (or a Probe: a receive) and the round's blocking
//        calls already changed between sending and receiving once: "R S" or "S S R R" is one
//        exchange, "R(l) S(r) R(r) S(l)" two (a forward then a backward pipeline step;
//        sorted together, the backward send would go before the forward receive);
//    (c) it is a non-blocking post (Isend, Irecv, Start) and a completion since the round's
//        last post left none of the round's requests pending: the exchange is over, and its
//        completions must not move after the next exchange's posts. Blocking calls still join
//        ("Irecv(l) Wait Send(r)" and "Irecv(l) Send(r) Wait" are one exchange, the seed's
//        example);
//    (d) it starts a persistent request that the round already started or completed;
//    (e) it sends (a blocking or non-blocking send, a Sendrecv, a Start of a send) after a
//        blocking receive, probe, Sendrecv or completion of the round, and the rank computes
//        for at least kDependentComputeNs before most calls of that send's statement (below):
//        it computed on what it received, and the send carries the result (a worker's "Recv
//        task, compute, Send result", a pipeline's "Recv, compute block, Send"). Sorted, the
//        send would go before the receive it depends on, and the skeleton would lose the
//        wait: its master-worker ran 16-20 % fast beside other processes, where the master's
//        answer takes a time slice to come.
//    A Probe is checked against (a) as a receive on its channel but does not use the channel:
//    the receive it announces follows it.
//
// 3. Order within a round (stable: calls of one role keep their call order):
//      Irecv (and Starts of receive requests)  <  Isend/Issend (Starts of send requests)
//      <  blocking sends  <  Sendrecv  <  Probe, blocking Recv  <  Wait*/Test*
//    - Sends before blocking receives is the seed's rule: a ring in which rank 0 sends then
//      receives while the others receive then send becomes "Send, Recv" everywhere. (Replayed
//      literally on every rank, that needs the sends to be buffered; the skeleton stage must
//      not rely on the merged order of blocking calls being deadlock-free.) It applies to the
//      blocking sends and receives of a round only if one of the sends and one of the receives
//      can carry the same tag (equal tags, or a receive with MPI_ANY_TAG or from
//      MPI_PROC_NULL): in SPMD code the message a rank receives in an exchange was sent by
//      the same statement on its neighbour, with the tag it sends with itself. A round whose
//      blocking sends and receives share no tag is two phases of a pipeline (the last rank of
//      a wavefront: the forward sweep's receives, tag 1, then the backward sweep's sends, tag
//      2); sorted, its backward sends would come first and pair with the other ranks' forward
//      sends. Such a round keeps its blocking calls in call order (one role for the sort) and
//      stays one round, so that Algorithm 2 can still pull a call across it where another
//      rank makes the two phases in the other order (unless the rank computed between them:
//      rule (e) cuts the round there). (Programs whose tags depend on the rank lose the sort
//      and rely on those pulls.)
//    - A round that holds a reply (a send to the source of the rank's last wildcard receive:
//      merge.h, reply_records) keeps its call order: sorted, the reply would come before the
//      receive whose source it goes to, and the skeleton would send it to the source before.
//    - Non-blocking receives are posted first, then sends, then completions. The seed orders
//      "Irecv, Wait, Send"; we put the Wait after the Send. Both are canonical (every rank
//      ends the same), but ours is the order of a deadlock-free exchange (receives posted
//      before anything blocks), while "Irecv, Wait, Send" on every rank of a ring waits
//      forever.
//    - Request safety holds by construction: a completion only ever moves later relative to
//      the posting calls of its round and never relative to other completions, and a posting
//      call only moves earlier; so a Wait stays after the Isend/Irecv/Start it completes, and
//      rule 2(d) keeps a restarted persistent request after its previous completion. Rule 2(c)
//      keeps a completion before every non-blocking post that follows the end of its exchange.
//
// A compute gap is trace::compute_gaps' (the rank's waits for a CPU taken out). Calls made back
// to back, an exchange, are well under a microsecond apart, far below kDependentComputeNs.
// Rule (e) decides per send statement (function, communicator, peer, tag; a Start's are those
// of the call that made its first send request), by most of its calls: a gap that an
// interrupt made long does not cut one iteration's round, and a statement whose gaps lie near
// the threshold does not cut some iterations and not others (the merge would align them
// differently, and the loop would not fold).
//
// Cost: O(1) per call and per request id it names (the maps are cleared in O(1) per round;
// at most kTags tags per side are compared, a round with more is sorted as sharing one).
//
// Limits: rounds are a local guess. A rank that both ends one statement and starts the next
// with a call on one channel, in one direction, ("... Send(r)" then "Send(r) Recv(l)") looks
// like one exchange with two sends, and a rank that makes the first statement in another order
// cuts elsewhere. A rank that only sends in one phase and only receives in the next (the first
// and last ranks of a pipeline) makes both phases one round, sorted if their tags agree, when
// it does not compute between them (rule (e)). A statement whose tag changes with every call
// (a tag that counts iterations) is a statement of one call: rule (e) decides it by its own
// gap, without the majority's protection from noise. Which requests a Test*, Waitany or
// Waitsome completes depends on timing, so whether it closes an exchange (rule 2(c)) can too:
// "Irecv, Test, Isend, Wait, Wait" is one round or two. Algorithm 2 pulls calls forward within
// a round to absorb some of that.
#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "merge/internal.h"

namespace pskel::merge::detail {

namespace {

namespace tr = trace;

inline constexpr int64_t kDependentComputeNs = 20'000;

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

bool is_probe(const tr::Record& r) {
  return r.function == static_cast<uint16_t>(tr::FunctionId::MPI_Probe);
}

// Which way a blocking call moves data, for rules 2(a) and 2(b). Sendrecv does both and takes
// part in neither.
enum class Flow : uint8_t { none, send, recv };

bool sends(Role role) {
  return role == Role::send || role == Role::send_post || role == Role::exchange;
}

// The record that names a send's statement: the call itself, or for a Start the call that made
// its first send request (a Start names no peer); nullptr for a Start of receives only.
const tr::Record* statement_of(const RankView& v, uint32_t index) {
  const tr::Record& r = v.record(index);
  if (role_of(r.function) != Role::start) return &r;
  const tr::Record* statement = nullptr;
  for_each_request(v, index, [&](int64_t id) {
    const tr::Record* c = v.creator_of(id);
    if (!statement && c && !is_receive(*c)) statement = c;
  });
  return statement;
}

// Rule (e)'s statements: whether most calls of a send's statement come after a computation.
class ComputedSends {
 public:
  // Counts the call at record `index`, of role `raw`, if it sends. Called in call order, in
  // the same pass that fills v.creator (a Start's statement is its requests' creator, made
  // before it), so that the records are read once for both.
  void add(const RankView& v, uint32_t index, Role raw) {
    if (!sends(raw) && raw != Role::start) return;
    const tr::Record* statement = statement_of(v, index);
    if (!statement) return;
    Count& c = counts_[key(*statement)];
    ++c.calls;
    c.computed += v.gap(index) >= kDependentComputeNs;
  }
  // Whether most calls of the statement of the send at record `index` follow a computation.
  bool after_compute(const RankView& v, uint32_t index) const {
    const tr::Record* statement = statement_of(v, index);
    if (!statement) return false;
    const auto it = counts_.find(key(*statement));
    return it != counts_.end() && 2 * it->second.computed > it->second.calls;
  }

 private:
  // (function, communicator and peer; tag)
  using Key = std::pair<uint64_t, uint32_t>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return static_cast<size_t>((k.first ^ (uint64_t{k.second} << 16)) * 0x9E3779B97F4A7C15ULL);
    }
  };
  static Key key(const tr::Record& r) {
    return {(uint64_t{r.function} << 48) | (uint64_t{r.comm} << 32) | static_cast<uint32_t>(r.peer),
            static_cast<uint32_t>(r.tag)};
  }
  struct Count {
    uint64_t calls = 0;
    uint64_t computed = 0;
  };
  std::unordered_map<Key, Count, KeyHash> counts_;
};

// Per-call facts the round builder needs; the channels go to a scratch vector.
struct Call {
  Role raw;       // role_of(function), `completion` also when it is outside the run
  Role role;      // raw, with `start` resolved to recv_post / send_post
  Flow flow;      // blocking send / blocking receive or probe / neither
  bool probe;     // MPI_Probe: checks its channel, does not use it
};

// The role, flow and channels of the call at record `index` (see the file comment). A Start
// takes the role of what it starts (a receive if any of its requests is one).
Call resolve(const RankView& v, uint32_t index, std::vector<uint64_t>& channels) {
  const tr::Record& r = v.record(index);
  const Role raw = role_of(r.function);
  channels.clear();
  switch (raw) {
    case Role::send:
      channels.push_back(channel_key(kToPeer, r, r.peer));
      return {raw, raw, Flow::send, false};
    case Role::send_post:
      channels.push_back(channel_key(kToPeer, r, r.peer));
      return {raw, raw, Flow::none, false};
    case Role::exchange:
      channels.push_back(channel_key(kToPeer, r, r.peer));
      channels.push_back(channel_key(kFromPeer, r, r.source));
      return {raw, raw, Flow::none, false};
    case Role::recv:
      channels.push_back(channel_key(kFromPeer, r, r.source));
      return {raw, raw, Flow::recv, is_probe(r)};
    case Role::recv_post:
      channels.push_back(channel_key(kFromPeer, r, r.source));
      return {raw, raw, Flow::none, false};
    case Role::start: {
      Call call{raw, Role::send_post, Flow::none, false};
      for_each_request(v, index, [&](int64_t id) {
        const tr::Record* c = v.creator_of(id);
        if (c && is_receive(*c)) call.role = Role::recv_post;
        channels.push_back(request_channel(v, id));
      });
      return call;
    }
    default:
      return {raw, raw, Flow::none, false};
  }
}

bool non_blocking_post(Role raw) {
  return raw == Role::recv_post || raw == Role::send_post || raw == Role::start;
}

// One pass over a rank's calls: cuts runs into rounds and sorts each round; see the file
// comment.
class Normalizer {
 public:
  Normalizer(RankView& v, ComputedSends&& computed)
      : v_(v), computed_(std::move(computed)), posted_round_(v.creator.size(), 0) {}

  // Sorts v.order in place and numbers the rounds. Returns the number of records moved.
  uint64_t run() {
    uint64_t moved = 0;
    bool in_run = false;
    for (size_t pos = 0; pos < v_.order.size(); ++pos) {
      const uint32_t index = v_.order[pos];
      const Call call = resolve(v_, index, channels_);
      const bool outside = call.raw == Role::fixed || call.raw == Role::pseudo ||
                           (call.raw == Role::completion && pending_run_ == 0);
      if (outside) {
        if (in_run) moved += sort_round(round_begin_, pos);
        in_run = false;
        pending_run_ = 0;
        run_first_ = kNoRun;
        v_.round[pos] = ++v_.rounds;  // a call outside runs is a round of its own
        if (call.raw == Role::completion) complete(index, static_cast<uint32_t>(pos), false);
        continue;
      }
      if (!in_run) {
        in_run = true;
        start_round(pos);
        run_first_ = v_.rounds;
      } else if (starts_new_round(call, index)) {
        moved += sort_round(round_begin_, pos);
        start_round(pos);
      }
      note(call, index, pos);
    }
    if (in_run) moved += sort_round(round_begin_, v_.order.size());
    return moved;
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
    sends_ = receives_ = changes_ = 0;
    last_flow_ = Flow::none;
    send_tags_.size = receive_tags_.size = 0;
    any_tag_ = shared_tag_ = false;
    reply_ = false;
    received_ = false;
    pending_round_ = 0;
    closed_ = false;
  }

  // Whether a posting call on a channel other than `channel` came after position `pos`.
  bool other_post_after(uint64_t channel, int64_t pos) const {
    return (last_channel_ != channel ? last_post_ : other_post_) > pos;
  }

  bool starts_new_round(const Call& call, uint32_t index) {
    for (uint64_t channel : channels_) {  // rule (a)
      const uint32_t* used = used_.find(channel);
      if (!used) continue;
      if (roles_[*used - round_begin_] != call.role) return true;
      if (other_post_after(channel, *used)) return true;
      const uint32_t* done = completed_.find(channel);
      if (done && *done > *used) return true;
      if (call.flow != Flow::none && !call.probe && sends_ > 0 && sends_ == receives_)
        return true;
    }
    if (call.flow != Flow::none && changes_ > 0 && call.flow != last_flow_)  // rule (b)
      return true;
    if (closed_ && non_blocking_post(call.raw)) return true;  // rule (c)
    if (received_ && sends(call.role) && computed_.after_compute(v_, index))  // rule (e)
      return true;
    bool restarted = false;                                  // rule (d)
    if (call.raw == Role::start)
      for_each_request(v_, index, [&](int64_t id) {
        restarted = restarted || (id != 0 && requests_.find(static_cast<uint64_t>(id)));
      });
    return restarted;
  }

  void note(const Call& call, uint32_t index, size_t pos) {
    roles_.push_back(call.role);
    received_ = received_ || call.flow == Flow::recv || call.raw == Role::exchange ||
                call.raw == Role::completion;
    reply_ = reply_ || v_.is_reply(index);
    v_.round[pos] = v_.rounds;
    const auto p = static_cast<uint32_t>(pos);
    if (call.flow != Flow::none) {
      if (last_flow_ != Flow::none && call.flow != last_flow_) ++changes_;
      last_flow_ = call.flow;
      if (!call.probe) ++(call.flow == Flow::send ? sends_ : receives_);
      note_tag(call.flow, v_.record(index));
    }
    if (!call.probe)
      for (uint64_t channel : channels_) {
        used_.set(channel, p);
        if (channel != last_channel_) other_post_ = last_post_;
        last_channel_ = channel;
        last_post_ = p;
      }
    if (call.raw == Role::completion) {
      complete(index, p, true);
      closed_ = pending_round_ == 0;
      return;
    }
    if (!non_blocking_post(call.raw)) return;  // blocking calls have no requests
    for_each_request(v_, index, [&](int64_t id) {
      if (id == 0) return;
      requests_.set(static_cast<uint64_t>(id), 1);
      if (id < 0 || static_cast<uint64_t>(id) >= posted_round_.size()) return;
      uint32_t& round = posted_round_[static_cast<size_t>(id)];
      if (round < run_first_) ++pending_run_;
      if (round != v_.rounds) ++pending_round_;
      round = v_.rounds;
    });
  }

  // Notes the tag of a blocking send or receive (or probe); shared_tag_ is set once a send and
  // a receive of the round can carry the same message tag (a receive with MPI_ANY_TAG, or from
  // MPI_PROC_NULL, can carry any).
  // A round with more distinct tags on one side than kTags is taken as sharing one (sorted
  // as any round), so that the check stays O(1) per call.
  void note_tag(Flow flow, const tr::Record& r) {
    if (shared_tag_) return;
    if (flow == Flow::send) {
      shared_tag_ = any_tag_ || holds(receive_tags_, r.tag) || !add(send_tags_, r.tag);
      return;
    }
    if ((r.flags & tr::kFlagAnyTag) || r.recv_tag == tr::kAnyTag) {
      any_tag_ = true;
      shared_tag_ = sends_ > 0;
      return;
    }
    shared_tag_ = holds(send_tags_, r.recv_tag) || !add(receive_tags_, r.recv_tag);
  }
  static constexpr size_t kTags = 8;
  struct Tags {
    std::array<int32_t, kTags> tag;
    size_t size = 0;
  };
  static bool holds(const Tags& t, int32_t tag) {
    for (size_t i = 0; i < t.size; ++i)
      if (t.tag[i] == tag) return true;
    return false;
  }
  // Adds `tag` unless present; false if there was no room.
  static bool add(Tags& t, int32_t tag) {
    if (holds(t, tag)) return true;
    if (t.size == kTags) return false;
    t.tag[t.size++] = tag;
    return true;
  }

  // The requests completed by the completion at record `index`, position `pos`: no longer
  // pending; in a run, noted for rules (a) and (d) of the current round.
  void complete(uint32_t index, uint32_t pos, bool in_run) {
    for_each_request(v_, index, [&](int64_t id) {
      if (id == 0) return;
      if (in_run) {
        requests_.set(static_cast<uint64_t>(id), 1);
        completed_.set(request_channel(v_, id), pos);
      }
      if (id < 0 || static_cast<uint64_t>(id) >= posted_round_.size()) return;
      uint32_t& round = posted_round_[static_cast<size_t>(id)];
      if (round != 0 && round >= run_first_) {
        --pending_run_;
        if (round == v_.rounds) --pending_round_;
      }
      round = 0;
    });
  }

  // Stable counting sort of order[begin, end) by role; roles_ holds their roles in order. If
  // the round's blocking sends and receives share no tag, they keep their order (section 3). A
  // round with a reply (merge.h: reply_records) keeps its call order: a reply goes where the
  // receive before it says, and sorted it would come before that receive.
  uint64_t sort_round(size_t begin, size_t end) {
    if (reply_) return 0;
    if (sends_ > 0 && receives_ > 0 && !shared_tag_)
      for (Role& r : roles_)
        if (r == Role::send || r == Role::exchange || r == Role::recv) r = Role::send;
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
  const ComputedSends computed_;
  size_t round_begin_ = 0;
  static constexpr uint32_t kNoRun = UINT32_MAX;
  uint32_t run_first_ = kNoRun;     // the first round of the current run
  std::vector<Role> roles_;         // of order[round_begin_, ...)
  std::vector<uint32_t> sorted_;    // scratch of sort_round
  std::vector<uint64_t> channels_;  // of the call being placed (resolve())
  StampedMap used_;                 // channel -> position of its last use in the round
  StampedMap completed_;            // channel -> position of the last completion of its requests
  StampedMap requests_;             // request ids started or completed in the round
  int64_t last_post_ = -1;          // position of the last posting call
  uint64_t last_channel_ = 0;       // and its (last) channel
  int64_t other_post_ = -1;         // position of the last posting call on another channel
  uint32_t sends_ = 0;              // blocking sends in the round
  uint32_t receives_ = 0;           // blocking receives in the round (probes not counted)
  uint32_t changes_ = 0;            // changes between sending and receiving among them
  Flow last_flow_ = Flow::none;     // of the round's last blocking call
  Tags send_tags_;                  // tags of the round's blocking sends
  Tags receive_tags_;               // tags of its blocking receives and probes (not wildcards)
  bool any_tag_ = false;            // one of those took any tag (or was from MPI_PROC_NULL)
  bool shared_tag_ = false;         // a blocking send and receive of the round share a tag
  bool reply_ = false;              // the round holds a reply
  bool received_ = false;           // it holds a blocking receive, probe, Sendrecv or
                                    // completion
  // Per request id: the round that posted (created or started) it while it is pending, else 0.
  std::vector<uint32_t> posted_round_;
  uint32_t pending_run_ = 0;        // requests posted in the run and pending
  uint32_t pending_round_ = 0;      // of those, the ones posted in the current round
  bool closed_ = false;             // a completion left none of the round's requests pending
};

}  // namespace

uint64_t normalize(RankView& v) {
  const tr::RankTrace& t = *v.trace;
  v.order.clear();
  v.creator.assign(1, 0);
  ComputedSends computed;
  for (uint32_t i = 0; i < t.records.size(); ++i) {
    const tr::Record& r = t.records[i];
    const Role raw = role_of(r.function);
    if (raw == Role::pseudo) continue;
    v.order.push_back(i);
    // Request ids count up from 1 per rank, so they index a vector; a hostile id past the
    // number of records is not followed.
    if (creates_request(r.function) && r.request != 0 && r.request <= t.records.size()) {
      if (v.creator.size() <= r.request) v.creator.resize(r.request + 1, 0);
      v.creator[r.request] = i + 1;
    }
    computed.add(v, i, raw);
  }
  v.round.assign(v.order.size(), 0);
  v.rounds = 0;
  return Normalizer(v, std::move(computed)).run();
}

}  // namespace pskel::merge::detail

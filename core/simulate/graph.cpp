// The dependency graph of a trace: ops per rank, messages matched send to receive, collectives
// matched across the members of a communicator (simulate.h, build_graph).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "simulate/simulate.h"
#include "trace/functions.h"
#include "trace/gaps.h"

namespace pskel::simulate {
namespace {

namespace tr = pskel::trace;
using Fn = tr::FunctionId;
using Kind = Endpoint::Kind;

struct CollectiveShape {
  Family family;
  Sync sync;
};

// Which collective family a function belongs to; false for non-collectives.
bool collective_shape(uint16_t function, CollectiveShape* shape) {
  switch (static_cast<Fn>(function)) {
    case Fn::MPI_Barrier: case Fn::MPI_Ibarrier: *shape = {Family::barrier, Sync::all}; return true;
    case Fn::MPI_Bcast: case Fn::MPI_Ibcast: *shape = {Family::bcast, Sync::from_root}; return true;
    case Fn::MPI_Reduce: case Fn::MPI_Ireduce: *shape = {Family::reduce, Sync::to_root}; return true;
    case Fn::MPI_Allreduce: case Fn::MPI_Iallreduce:
      *shape = {Family::allreduce, Sync::all}; return true;
    case Fn::MPI_Alltoall: case Fn::MPI_Alltoallv: case Fn::MPI_Ialltoall:
      *shape = {Family::alltoall, Sync::all}; return true;
    case Fn::MPI_Allgather: case Fn::MPI_Allgatherv: case Fn::MPI_Iallgather:
      *shape = {Family::allgather, Sync::all}; return true;
    case Fn::MPI_Gather: case Fn::MPI_Gatherv: *shape = {Family::gather, Sync::to_root}; return true;
    case Fn::MPI_Scatter: case Fn::MPI_Scatterv:
      *shape = {Family::scatter, Sync::from_root}; return true;
    case Fn::MPI_Reduce_scatter: case Fn::MPI_Reduce_scatter_block:
      *shape = {Family::reduce_scatter, Sync::all}; return true;
    case Fn::MPI_Scan: case Fn::MPI_Exscan: *shape = {Family::scan, Sync::all}; return true;
    case Fn::MPI_Comm_split: case Fn::MPI_Comm_dup: case Fn::MPI_Comm_create:
    case Fn::MPI_Cart_create: case Fn::MPI_Cart_sub:
      *shape = {Family::comm_create, Sync::all}; return true;
    default: return false;
  }
}

bool is_blocking_send(Fn f) {
  return f == Fn::MPI_Send || f == Fn::MPI_Ssend || f == Fn::MPI_Rsend || f == Fn::MPI_Bsend;
}
SendMode send_mode(Fn f) {
  if (f == Fn::MPI_Ssend || f == Fn::MPI_Issend) return SendMode::synchronous;
  // Ready mode is standard mode with a promise; MPIs send it by the same protocol.
  if (f == Fn::MPI_Send || f == Fn::MPI_Isend || f == Fn::MPI_Rsend || f == Fn::MPI_Sendrecv ||
      f == Fn::MPI_Sendrecv_replace || f == Fn::MPI_Send_init)
    return SendMode::standard;
  return SendMode::eager;   // buffered: copied out, never waits for the receiver
}

// A communicator as every rank can name it: its members (world ranks, in comm rank order) and
// how many communicators with the same members this rank had defined before it. MPI creates
// communicators collectively and in the same order on every member, so equal keys on two ranks
// are the same communicator.
using CommKey = int32_t;            // interned
inline constexpr CommKey kUnknownComm = -1;

struct CommInfo {
  std::vector<int32_t> members;     // empty: not an intracommunicator we can match
};

// What a receive matched, once known: (comm, source, tag).
struct Envelope {
  CommKey comm = kUnknownComm;
  int32_t peer = tr::kNoRank;
  int32_t tag = tr::kNoTag;
  bool known() const { return comm != kUnknownComm && peer >= 0 && tag >= 0; }
};

// A persistent request's template, copied into an endpoint at each Start.
struct PersistentTemplate {
  bool send = true;
  Envelope envelope;
  int64_t bytes = 0;
  SendMode mode = SendMode::standard;
};

// A point-to-point channel: (communicator, first rank, second rank, tag). Messages are keyed
// (comm, sender, receiver, tag), a rank's receives for its probes (comm, receiver, source, tag).
struct Channel {
  CommKey comm;
  int32_t from, to, tag;
  bool operator==(const Channel&) const = default;
};
struct ChannelHash {
  size_t operator()(const Channel& c) const {
    uint64_t h = (uint64_t{static_cast<uint32_t>(c.comm)} << 32) | static_cast<uint32_t>(c.from);
    h = (h ^ (h >> 31)) * 0x9E3779B97F4A7C15ULL;
    h ^= (uint64_t{static_cast<uint32_t>(c.to)} << 32) | static_cast<uint32_t>(c.tag);
    h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ULL;
    return static_cast<size_t>(h ^ (h >> 32));
  }
};

// What one channel has posted that the other side has not matched yet: sends whose receiving
// rank was not added yet, or receives whose sending rank was not (at most one of the two is
// non-empty). Matched first in, first out (MPI's non-overtaking rule), so the k-th send of a
// channel gets its k-th receive in whichever order the ranks come.
struct ChannelQueue {
  struct Send {
    uint32_t endpoint;
    SendMode mode;
    int64_t bytes;
  };
  struct Recv {
    uint32_t endpoint;
    uint32_t message;   // reserved in Graph::messages, in the receiver's post order
  };
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  size_t send_head = 0, recv_head = 0;   // the first not matched
  bool has_send() const { return send_head < sends.size(); }
  bool has_recv() const { return recv_head < recvs.size(); }
};

// Request id -> the endpoint it posted, for one rank. The tracer numbers a rank's requests from
// 1 without reuse, so ids up to the rank's record count index an array (a hashed map's node per
// request was an allocation per call); any other id, only in a hand-made or hostile trace, goes
// to a map.
class RequestTable {
 public:
  explicit RequestTable(size_t records) : dense_(records + 1, kNone) {}
  // The endpoint of `id`, or kNone.
  uint32_t find(uint32_t id) const {
    if (id < dense_.size()) return dense_[id];
    auto it = sparse_.find(id);
    return it == sparse_.end() ? kNone : it->second;
  }
  void set(uint32_t id, uint32_t endpoint) {
    if (id < dense_.size())
      dense_[id] = endpoint;
    else
      sparse_[id] = endpoint;
  }
  void erase(uint32_t id) {
    if (id < dense_.size())
      dense_[id] = kNone;
    else
      sparse_.erase(id);
  }

 private:
  std::vector<uint32_t> dense_;
  std::unordered_map<uint32_t, uint32_t> sparse_;
};

struct PendingProbe {
  // The arrival endpoint to link. A rank's endpoints are numbered in its post order, so the
  // receives on the probe's channel posted before it are those of lower ids.
  uint32_t endpoint;
  Envelope envelope;     // source = the probed sender (resolved)
};

// A receive of the rank being added, until its walk ends (a wildcard's envelope is its
// completion's status).
struct RankRecv {
  uint32_t endpoint;
  Envelope envelope;
};

class Builder {
 public:
  Builder(int world_size, size_t expected_records) {
    g_.world_size = world_size;
    g_.ops.resize(static_cast<size_t>(world_size));
    op_ranges_.resize(static_cast<size_t>(world_size));
    g_.lost_time.reserve(static_cast<size_t>(world_size));
    if (expected_records > 0) reserve(expected_records);
  }

  void add_rank(const tr::RankTrace& t) {
    if (ranks_added_ >= g_.world_size)
      throw std::logic_error("build_graph: more ranks added than the job has");
    make_room(t.records.size());
    g_.lost_time.emplace_back(t);
    walk_rank(ranks_added_, t);
    match_receives(ranks_added_);
    link_probes(ranks_added_);
    rank_recvs_.clear();
    probes_.clear();
    ++ranks_added_;
  }

  Graph finish() {
    while (ranks_added_ < g_.world_size) add_rank(tr::RankTrace{});
    Op end;   // reserve() left room for it: the push never moves the ops the spans name
    end.first_post = static_cast<uint32_t>(g_.posts.size());
    end.first_wait = static_cast<uint32_t>(g_.waits.size());
    g_.op_storage.push_back(end);
    for (size_t r = 0; r < op_ranges_.size(); ++r)
      g_.ops[r] = std::span<const Op>(g_.op_storage).subspan(op_ranges_[r].first, op_ranges_[r].second);
    drop_unmatched();
    finish_collectives();
    summarize_warnings();
    return std::move(g_);
  }

 private:
  // ----- sizing

  // The arrays hold about an endpoint and a post or wait per record, and a message per
  // receive. Grown by doubling, they were copied a few times over and every copy's fresh pages
  // zeroed by the kernel, which at 16,384 ranks took a third of the run on this VM: they are
  // sized for the expected records once, or, when ranks come one at a time, for the ranks seen
  // so far projected to the job once 64 have come (at most 64 times what was seen, against a
  // skewed first few).
  void reserve(size_t records) {
    room_ = records;
    g_.op_storage.reserve(records + 1);   // and the op that ends the last one's posts
    g_.traced.reserve(records);
    g_.endpoints.reserve(records);
    g_.messages.reserve(records);   // pages are resident only as messages are written
    g_.posts.reserve(records);
    g_.waits.reserve(records);
  }
  void make_room(size_t records) {
    records_seen_ += records;
    if (records_seen_ <= room_) return;
    const auto seen = static_cast<size_t>(ranks_added_) + 1;
    const auto world = static_cast<size_t>(g_.world_size);
    size_t want = records_seen_ + records_seen_ / 2;
    if (seen >= std::min<size_t>(64, world))
      want = std::max(want, std::min(records_seen_ / seen * world + records_seen_ / 8,
                                     64 * records_seen_));
    reserve(want);
  }

  // ----- communicators

  CommKey intern(const std::vector<int32_t>& members, int occurrence) {
    std::string key = fmt::format("{}#{}", fmt::join(members, ","), occurrence);
    auto [it, inserted] = comm_ids_.try_emplace(key, static_cast<CommKey>(comms_.size()));
    if (inserted) comms_.push_back({members});
    return it->second;
  }

  // ----- per rank

  struct RankState {
    RankState(int32_t r, size_t records) : rank(r), request(records) {}
    int32_t rank = 0;
    std::unordered_map<uint16_t, CommKey> comm_of;          // local id -> key
    std::map<std::vector<int32_t>, int> member_list_seen;   // for occurrence numbers
    RequestTable request;                                   // request id -> endpoint
    std::unordered_map<uint32_t, PersistentTemplate> persistent;
    std::map<CommKey, uint64_t> collectives_on;              // calls so far per comm
  };

  CommKey comm_key(RankState& s, uint16_t local) {
    if (local == tr::kCommWorld) {
      if (world_ == kUnknownComm) {
        std::vector<int32_t> all(static_cast<size_t>(g_.world_size));
        for (int32_t r = 0; r < g_.world_size; ++r) all[static_cast<size_t>(r)] = r;
        world_ = intern(all, 0);
      }
      return world_;
    }
    if (local == tr::kCommSelf) return intern({s.rank}, -1);
    auto it = s.comm_of.find(local);
    return it == s.comm_of.end() ? kUnknownComm : it->second;
  }

  void define_comm(RankState& s, const tr::RankTrace& t, size_t index) {
    const tr::Record& r = t.records[index];
    const auto aux = t.aux_of(index);
    if (r.recv_count != 0 || r.count <= 0 || static_cast<int64_t>(aux.size()) < r.count) {
      s.comm_of[r.comm] = kUnknownComm;   // intercommunicator or cut short: not matched
      return;
    }
    std::vector<int32_t> members;
    for (int64_t w : aux.first(static_cast<size_t>(r.count))) {
      if (w < 0 || w >= g_.world_size) {
        s.comm_of[r.comm] = kUnknownComm;
        return;
      }
      members.push_back(static_cast<int32_t>(w));
    }
    // World's own member list counts as its first occurrence (a dup of world is the second).
    std::vector<int32_t> all(static_cast<size_t>(g_.world_size));
    for (int32_t k = 0; k < g_.world_size; ++k) all[static_cast<size_t>(k)] = k;
    if (members == all) s.member_list_seen[all] = std::max(s.member_list_seen[all], 1);
    const int occurrence = s.member_list_seen[members]++;
    s.comm_of[r.comm] = intern(members, occurrence);
  }

  // ----- endpoints

  uint32_t new_endpoint(Kind kind, int32_t rank, uint32_t op) {
    g_.endpoints.push_back({kind, rank, op, kNone});
    return static_cast<uint32_t>(g_.endpoints.size() - 1);
  }

  // A send is matched as it is posted when its receiving rank was added before and left a
  // receive waiting; else it waits in its channel for that rank.
  uint32_t post_send(RankState& s, uint32_t op, const Envelope& env, int64_t bytes,
                     SendMode mode) {
    const uint32_t e = new_endpoint(Kind::send, s.rank, op);
    posts_.push_back(e);
    if (env.peer == tr::kProcNull) return e;     // no message, completes at once
    if (!env.known() || env.peer >= g_.world_size) {
      ++g_.unmatched_sends;
      return e;
    }
    const auto it = channels_.try_emplace({env.comm, s.rank, env.peer, env.tag}).first;
    if (it->second.has_recv()) {
      const ChannelQueue::Recv recv = it->second.recvs[it->second.recv_head++];
      Message& m = g_.messages[recv.message];
      m.send = e;
      m.bytes = bytes;
      m.mode = mode;
      g_.endpoints[e].link = recv.message;
      if (!it->second.has_recv()) channels_.erase(it);
      return e;
    }
    it->second.sends.push_back({e, mode, bytes});
    return e;
  }

  uint32_t post_recv(RankState& s, uint32_t op, const Envelope& env) {
    const uint32_t e = new_endpoint(Kind::recv, s.rank, op);
    posts_.push_back(e);
    rank_recvs_.push_back({e, env});
    return e;
  }

  // The receive endpoint e of the rank being added.
  Envelope& envelope_of(uint32_t e) {
    const auto it = std::lower_bound(rank_recvs_.begin(), rank_recvs_.end(), e,
                                     [](const RankRecv& r, uint32_t id) { return r.endpoint < id; });
    return it->envelope;
  }

  // A completion record: the requests it finished, with the statuses of receives.
  void complete_requests(RankState& s, const tr::RankTrace& t, size_t index) {
    const auto aux = t.aux_of(index);
    for (size_t k = 0; k + tr::kCompletionWords <= aux.size(); k += tr::kCompletionWords) {
      const auto id = static_cast<uint32_t>(aux[k]);
      const uint32_t e = s.request.find(id);
      if (id == 0 || e == kNone) continue;
      waits_.push_back(e);
      if (!s.persistent.count(id)) s.request.erase(id);
      if (g_.endpoints[e].kind != Kind::recv) continue;
      Envelope& env = envelope_of(e);
      // Only a wildcard takes the status's values: a receive posted for one source keeps it
      // (statuses of MPI_PROC_NULL requests are not reliable in every MPI).
      const bool wildcard = env.peer == tr::kAnySource || env.tag == tr::kAnyTag;
      if (wildcard && aux[k + 1] >= 0) {
        if (env.peer == tr::kAnySource) env.peer = static_cast<int32_t>(aux[k + 1]);
        if (env.tag == tr::kAnyTag) env.tag = static_cast<int32_t>(aux[k + 2]);
      }
    }
  }

  void walk_rank(int32_t rank, const tr::RankTrace& t) {
    RankState s(rank, t.records.size());
    std::vector<Op>& ops = g_.op_storage;
    const size_t first_op = ops.size();
    const std::vector<int64_t> gaps = tr::compute_gaps(t, g_.lost_time[static_cast<size_t>(rank)]);
    bool first = true;
    for (size_t i = 0; i < t.records.size(); ++i) {
      const tr::Record& r = t.records[i];
      const tr::FunctionInfo* info = tr::find_function(r.function);
      if (info == nullptr) {
        ++unknown_functions_;
        continue;
      }
      if (info->kind == tr::FunctionKind::meta) {
        if (static_cast<Fn>(r.function) == Fn::pskel_comm_define) define_comm(s, t, i);
        continue;
      }
      Op op;
      op.function = r.function;
      TracedSpan traced{r.t_start, std::max(r.t_start, r.t_end)};
      op.gap_ns = first ? 0 : gaps[i];
      const auto op_index = static_cast<uint32_t>(ops.size() - first_op);
      op.first_post = static_cast<uint32_t>(g_.posts.size());
      op.first_wait = static_cast<uint32_t>(g_.waits.size());
      posts_.clear();
      waits_.clear();
      add_call(s, t, i, info->kind, op_index, op, traced, first);
      first = false;
      g_.posts.insert(g_.posts.end(), posts_.begin(), posts_.end());
      g_.waits.insert(g_.waits.end(), waits_.begin(), waits_.end());
      if (op.measured)
        g_.measured_ns.emplace_back(static_cast<uint32_t>(ops.size()),
                                    g_.busy_ns(rank, traced.start, traced.end));
      ops.push_back(op);
      g_.traced.push_back(traced);
    }
    op_ranges_[static_cast<size_t>(rank)] = {first_op, ops.size() - first_op};
  }

  Envelope send_envelope(RankState& s, const tr::Record& r) {
    return {comm_key(s, r.comm), r.peer, r.tag};
  }
  Envelope recv_envelope(RankState& s, const tr::Record& r) {
    return {comm_key(s, r.comm), r.source, r.recv_tag};
  }

  void add_call(RankState& s, const tr::RankTrace& t, size_t index, tr::FunctionKind kind,
                uint32_t op_index, Op& op, TracedSpan& traced, bool first) {
    const tr::Record& r = t.records[index];
    const auto f = static_cast<Fn>(r.function);
    const int64_t sent = r.count * static_cast<int64_t>(r.type_size);
    switch (kind) {
      case tr::FunctionKind::env:
        if (f == Fn::MPI_Finalize) {
          op.finalize = true;
        } else {
          // MPI_Init: the rank's start-up, from t = 0 to the end of the tracer's setup.
          op.measured = true;
          if (first) traced.start = 0;
        }
        return;
      case tr::FunctionKind::p2p: {
        if (f == Fn::MPI_Irecv) {
          s.request.set(r.request, post_recv(s, op_index, recv_envelope(s, r)));
          op.bytes = 0;
          return;
        }
        if (f == Fn::MPI_Recv) {
          waits_.push_back(post_recv(s, op_index, recv_envelope(s, r)));
          return;
        }
        if (f == Fn::MPI_Sendrecv || f == Fn::MPI_Sendrecv_replace) {
          waits_.push_back(post_send(s, op_index, send_envelope(s, r), sent, SendMode::standard));
          waits_.push_back(post_recv(s, op_index, recv_envelope(s, r)));
          return;
        }
        const uint32_t e = post_send(s, op_index, send_envelope(s, r), sent, send_mode(f));
        if (is_blocking_send(f))
          waits_.push_back(e);
        else
          s.request.set(r.request, e);
        op.bytes = sent;
        return;
      }
      case tr::FunctionKind::p2p_init: {
        PersistentTemplate p;
        p.send = f == Fn::MPI_Send_init;
        p.mode = SendMode::standard;
        p.envelope = p.send ? send_envelope(s, r) : recv_envelope(s, r);
        p.bytes = sent;
        if (r.request != 0) s.persistent[r.request] = p;
        return;
      }
      case tr::FunctionKind::start:
        for (int64_t word : t.aux_of(index)) {
          const auto id = static_cast<uint32_t>(word);
          auto it = s.persistent.find(id);
          if (id == 0 || it == s.persistent.end()) continue;
          const PersistentTemplate& p = it->second;
          s.request.set(id, p.send ? post_send(s, op_index, p.envelope, p.bytes, p.mode)
                                   : post_recv(s, op_index, p.envelope));
        }
        return;
      case tr::FunctionKind::completion:
        complete_requests(s, t, index);
        return;
      case tr::FunctionKind::probe:
        if (f == Fn::MPI_Probe) {
          const uint32_t e = new_endpoint(Kind::arrival, s.rank, kNone);
          probes_.push_back({e, recv_envelope(s, r)});
          waits_.push_back(e);
        }
        return;
      case tr::FunctionKind::request:
        if (!s.persistent.count(r.request)) s.request.erase(r.request);
        s.persistent.erase(r.request);
        return;
      case tr::FunctionKind::collective:
      case tr::FunctionKind::icollective:
      case tr::FunctionKind::comm: {
        CollectiveShape shape{};
        if (!collective_shape(r.function, &shape)) return;   // Comm_free: local
        const CommKey comm = comm_key(s, r.comm);
        if (comm == kUnknownComm || comms_[static_cast<size_t>(comm)].members.empty()) {
          op.measured = true;
          ++g_.unmodelled_calls;
          return;
        }
        const uint64_t k = s.collectives_on[comm]++;
        auto [it, inserted] = collective_index_.try_emplace({comm, k}, g_.collectives.size());
        if (inserted) {
          Collective c;
          c.family = shape.family;
          c.sync = shape.sync;
          c.ranks = static_cast<int>(comms_[static_cast<size_t>(comm)].members.size());
          c.root = r.root;
          g_.collectives.push_back(c);
        }
        Collective& c = g_.collectives[it->second];
        if (c.family != shape.family) mismatched_collectives_ = true;
        if (c.root < 0 && r.root >= 0) c.root = r.root;
        c.bytes = std::max(c.bytes, std::max<int64_t>(0, r.bytes));
        const uint32_t e = new_endpoint(Kind::member, s.rank, op_index);
        g_.endpoints[e].link = static_cast<uint32_t>(it->second);
        c.members.push_back(e);
        posts_.push_back(e);
        if (kind == tr::FunctionKind::icollective)
          s.request.set(r.request, e);
        else
          waits_.push_back(e);
        return;
      }
      case tr::FunctionKind::meta:
        return;
    }
  }

  // ----- matching

  // The receives of `rank`, just added, in post order (their envelopes final: wildcards took
  // their statuses): each gets the first unmatched send of its channel if its sender was added
  // before (or is itself), else a message reserved in that order, which the sender's send fills
  // when it is posted. Messages so come receiver after receiver, each receiver's in post order,
  // as clock_offsets reads them. Nothing but the ranks' open channels is kept across ranks:
  // holding every endpoint's envelope and every channel's sends until all ranks were added
  // was 30 bytes a call at the graph's peak.
  void match_receives(int32_t rank) {
    for (const RankRecv& r : rank_recvs_) {
      const Envelope& env = r.envelope;
      if (env.peer == tr::kProcNull) continue;
      if (!env.known() || env.peer >= g_.world_size) {
        ++g_.unmatched_receives;
        continue;
      }
      const auto it = channels_.try_emplace({env.comm, env.peer, rank, env.tag}).first;
      ChannelQueue& queue = it->second;
      const auto id = static_cast<uint32_t>(g_.messages.size());
      if (queue.has_send()) {
        const ChannelQueue::Send send = queue.sends[queue.send_head++];
        g_.messages.push_back({send.endpoint, r.endpoint, send.bytes, send.mode});
        g_.endpoints[send.endpoint].link = g_.endpoints[r.endpoint].link = id;
      } else if (env.peer > rank) {   // its sender comes later
        g_.messages.push_back({kNone, r.endpoint, 0, SendMode::standard});
        g_.endpoints[r.endpoint].link = id;
        queue.recvs.push_back({r.endpoint, id});
      } else {
        ++g_.unmatched_receives;
      }
      if (!queue.has_send() && !queue.has_recv()) channels_.erase(it);
    }
  }

  // A probe of `rank` waits for the message that the next receive on its channel gets: the
  // first posted after it, with the envelope the receive matched (a wildcard's, resolved from
  // its status). Counted per rank as it is added: a count per channel kept for every receive of
  // the job, for the few programs that probe, was a hashed update per receive.
  void link_probes(int32_t rank) {
    if (probes_.empty()) return;
    std::unordered_map<Channel, std::vector<uint32_t>, ChannelHash> receives;
    for (const RankRecv& r : rank_recvs_)
      receives[{r.envelope.comm, rank, r.envelope.peer, r.envelope.tag}].push_back(r.endpoint);
    for (const PendingProbe& p : probes_) {
      const Envelope& env = p.envelope;
      auto it = receives.find({env.comm, rank, env.peer, env.tag});
      if (it == receives.end()) continue;
      const std::vector<uint32_t>& on_channel = it->second;   // in post order
      const auto next = std::lower_bound(on_channel.begin(), on_channel.end(), p.endpoint);
      if (next != on_channel.end()) g_.endpoints[p.endpoint].link = g_.endpoints[*next].link;
    }
  }

  // What is still open once every rank was added is unmatched: sends nobody received, and
  // receives whose sender never sent; their reserved messages are taken out (the others keep
  // their order) and the links renumbered.
  void drop_unmatched() {
    std::vector<bool> dropped;
    for (const auto& [channel, queue] : channels_) {
      g_.unmatched_sends += queue.sends.size() - queue.send_head;
      g_.unmatched_receives += queue.recvs.size() - queue.recv_head;
      for (size_t k = queue.recv_head; k < queue.recvs.size(); ++k) {
        if (dropped.empty()) dropped.assign(g_.messages.size(), false);
        dropped[queue.recvs[k].message] = true;
      }
    }
    channels_.clear();
    if (dropped.empty()) return;
    std::vector<uint32_t> renumbered(g_.messages.size(), kNone);
    uint32_t kept = 0;
    for (size_t m = 0; m < g_.messages.size(); ++m) {
      if (dropped[m]) continue;
      renumbered[m] = kept;
      g_.messages[kept++] = g_.messages[m];
    }
    g_.messages.resize(kept);
    for (Endpoint& e : g_.endpoints)
      if (e.kind != Kind::member && e.link != kNone) e.link = renumbered[e.link];
  }

  void finish_collectives() {
    for (Collective& c : g_.collectives)
      if (static_cast<int>(c.members.size()) < c.ranks) ++g_.incomplete_collectives;
  }

  void summarize_warnings() {
    if (g_.unmatched_sends > 0)
      g_.warnings.push_back(fmt::format(
          "{} send(s) have no matching receive in the trace: replayed as if received", g_.unmatched_sends));
    if (g_.unmatched_receives > 0)
      g_.warnings.push_back(fmt::format(
          "{} receive(s) have no matching send in the trace: replayed as if the message were there",
          g_.unmatched_receives));
    if (g_.incomplete_collectives > 0)
      g_.warnings.push_back(fmt::format(
          "{} collective(s) miss members' calls (truncated trace?): replayed with the members present",
          g_.incomplete_collectives));
    if (g_.unmodelled_calls > 0)
      g_.warnings.push_back(fmt::format(
          "{} collective call(s) on communicators the trace does not define (intercommunicators?): "
          "replayed with their traced durations",
          g_.unmodelled_calls));
    if (unknown_functions_ > 0)
      g_.warnings.push_back(fmt::format("{} record(s) of unknown functions ignored", unknown_functions_));
    if (mismatched_collectives_)
      g_.warnings.push_back("members of one collective called different functions: the trace's "
                            "collective order is inconsistent");
  }

  Graph g_;
  std::vector<std::pair<size_t, size_t>> op_ranges_;   // per rank: first op, count
  int32_t ranks_added_ = 0;
  size_t records_seen_ = 0;   // in the ranks added
  size_t room_ = 0;           // records the arrays are sized for
  std::vector<uint32_t> posts_, waits_;   // of the op being built
  std::vector<RankRecv> rank_recvs_;      // of the rank being added, in post order
  std::vector<PendingProbe> probes_;      // of the rank being added
  // Channels with something unmatched, (comm, sender, receiver, tag); a channel leaves once
  // matched. Hashed: ordered maps of every channel of the job cost a cache miss per level per
  // call, a cost that grew with the rank count.
  std::unordered_map<Channel, ChannelQueue, ChannelHash> channels_;
  std::unordered_map<std::string, CommKey> comm_ids_;
  std::vector<CommInfo> comms_;
  CommKey world_ = kUnknownComm;
  std::map<std::pair<CommKey, uint64_t>, size_t> collective_index_;
  uint64_t unknown_functions_ = 0;
  bool mismatched_collectives_ = false;
};

}  // namespace

std::string_view family_name(Family f) {
  static constexpr std::string_view kNames[kFamilyCount] = {
      "post", "p2p_send", "p2p", "p2p_recv", "barrier", "bcast", "reduce", "allreduce", "alltoall",
      "allgather", "gather", "scatter", "reduce_scatter", "scan", "comm_create"};
  return kNames[static_cast<size_t>(f)];
}

double family_factor(Family f, int ranks) {
  const int p = std::max(ranks, 1);
  switch (f) {
    case Family::alltoall: case Family::allgather: case Family::gather: case Family::scatter:
    case Family::reduce_scatter:
      return std::max(1, p - 1);
    case Family::barrier: case Family::bcast: case Family::reduce: case Family::allreduce:
    case Family::scan: case Family::comm_create: {
      int rounds = 0;
      while ((1 << rounds) < p) ++rounds;
      return std::max(1, rounds);
    }
    default:
      return 1;
  }
}

struct GraphBuilder::Impl {
  Builder builder;
};

GraphBuilder::GraphBuilder(int world_size, size_t expected_records)
    : impl_(std::make_unique<Impl>(Impl{Builder(world_size, expected_records)})) {}
GraphBuilder::~GraphBuilder() = default;
void GraphBuilder::add_rank(const trace::RankTrace& rank) { impl_->builder.add_rank(rank); }
Graph GraphBuilder::finish() { return impl_->builder.finish(); }

Graph build_graph(const trace::TraceSet& trace) {
  size_t records = 0;
  for (const trace::RankTrace& rank : trace.ranks) records += rank.records.size();
  GraphBuilder builder(static_cast<int>(trace.ranks.size()), records);
  for (const trace::RankTrace& rank : trace.ranks) builder.add_rank(rank);
  return builder.finish();
}

}  // namespace pskel::simulate

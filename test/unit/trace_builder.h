// Builds TraceSets in memory, one MPI call at a time, with the field values the tracer writes
// (docs/trace-format.md §4): for the merge tests and the merge benchmark. No files, no doctest.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "trace/format.h"
#include "trace/functions.h"
#include "trace/reader.h"

namespace pskel::test {

namespace tr = pskel::trace;
using Fn = tr::FunctionId;

class RankBuilder {
 public:
  explicit RankBuilder(int32_t rank, int32_t world_size) {
    t_.header.rank = rank;
    t_.header.world_size = world_size;
    t_.complete = true;
  }

  // Time: each call starts `gap` ns after the previous one ended and lasts `duration` ns.
  RankBuilder& timing(int64_t gap, int64_t duration) {
    gap_ = gap;
    duration_ = duration;
    return *this;
  }

  // Appends a call with default fields; the reference is valid until the next call.
  tr::Record& add(Fn f, std::initializer_list<int64_t> aux = {}) {
    tr::Record r{};
    r.function = static_cast<uint16_t>(f);
    r.comm = tr::kNoComm;
    r.peer = r.source = r.root = tr::kNoRank;
    r.tag = r.recv_tag = tr::kNoTag;
    r.aux_words = static_cast<uint16_t>(aux.size());
    r.t_start = clock_ + gap_;
    r.t_end = clock_ = r.t_start + duration_;
    t_.aux_begin.push_back(t_.aux.size());
    t_.aux.insert(t_.aux.end(), aux);
    t_.records.push_back(r);
    return t_.records.back();
  }

  tr::Record& send(int32_t dest, int32_t tag = 0, int64_t count = 1, Fn f = Fn::MPI_Send,
                   uint16_t comm = tr::kCommWorld) {
    tr::Record& r = add(f, comm);
    side(r, true, dest, tag, count);
    return r;
  }
  tr::Record& recv(int32_t source, int32_t tag = 0, int64_t count = 1, Fn f = Fn::MPI_Recv,
                   uint16_t comm = tr::kCommWorld) {
    tr::Record& r = add(f, comm);
    side(r, false, source, tag, count);
    return r;
  }
  // A receive posted with MPI_ANY_SOURCE that the status resolved to `resolved`.
  tr::Record& recv_any(int32_t resolved, int32_t tag = 0, int64_t count = 1) {
    tr::Record& r = recv(resolved, tag, count);
    r.flags |= tr::kFlagAnySource;
    return r;
  }
  tr::Record& sendrecv(int32_t dest, int32_t source, int32_t tag = 0, int64_t count = 1) {
    tr::Record& r = add(Fn::MPI_Sendrecv, tr::kCommWorld);
    side(r, true, dest, tag, count);
    side(r, false, source, tag, count);
    return r;
  }
  // Non-blocking and persistent calls return the new request id.
  uint32_t isend(int32_t dest, int32_t tag = 0, int64_t count = 1, Fn f = Fn::MPI_Isend) {
    send(dest, tag, count, f).request = next_request_;
    return next_request_++;
  }
  uint32_t irecv(int32_t source, int32_t tag = 0, int64_t count = 1, Fn f = Fn::MPI_Irecv) {
    recv(source, tag, count, f).request = next_request_;
    return next_request_++;
  }
  uint32_t send_init(int32_t dest, int32_t tag = 0) {
    return isend(dest, tag, 1, Fn::MPI_Send_init);
  }
  uint32_t recv_init(int32_t source, int32_t tag = 0) {
    return irecv(source, tag, 1, Fn::MPI_Recv_init);
  }
  tr::Record& start(uint32_t id) {
    tr::Record& r = add(Fn::MPI_Start, {id});
    r.count = 1;
    r.request = id;
    return r;
  }
  tr::Record& startall(std::initializer_list<uint32_t> ids) {
    std::vector<int64_t> words(ids.begin(), ids.end());
    tr::Record& r = add(Fn::MPI_Startall);
    r.aux_words = static_cast<uint16_t>(words.size());
    t_.aux.insert(t_.aux.end(), words.begin(), words.end());
    r.count = static_cast<int64_t>(words.size());
    r.request = words.empty() ? 0 : static_cast<uint32_t>(words.front());
    return r;
  }
  // Appends `words` to the aux words of `r`, which must be the last call added.
  void append_aux(tr::Record& r, const std::vector<int64_t>& words) {
    r.aux_words = static_cast<uint16_t>(r.aux_words + words.size());
    t_.aux.insert(t_.aux.end(), words.begin(), words.end());
  }
  // A non-blocking collective (MPI_Iallreduce, MPI_Ibarrier, ...): returns its request id.
  uint32_t icollective(Fn f, int64_t count = 1, int32_t root = tr::kNoRank,
                       tr::Op op = tr::Op::none) {
    collective(f, count, root, op).request = next_request_;
    return next_request_++;
  }
  // MPI_Probe of a message from `source` (MPI_ANY_SOURCE if `any`, resolved to `source`).
  tr::Record& probe(int32_t source, int32_t tag = 0, bool any = false) {
    tr::Record& r = add(Fn::MPI_Probe, tr::kCommWorld);
    r.source = source;
    r.recv_tag = tag;
    if (any) r.flags |= tr::kFlagAnySource | tr::kFlagAnyTag;
    return r;
  }
  // A completion of `ids` (all completed), e.g. MPI_Wait of one or MPI_Waitall of several.
  tr::Record& complete(Fn f, std::initializer_list<uint32_t> ids, int64_t passed = -1) {
    return complete(f, std::vector<uint32_t>(ids), passed);
  }
  tr::Record& complete(Fn f, const std::vector<uint32_t>& ids, int64_t passed = -1) {
    std::vector<int64_t> words;
    for (uint32_t id : ids) words.insert(words.end(), {id, tr::kNoRank, tr::kNoTag, 0});
    tr::Record& r = add(f);
    r.aux_words = static_cast<uint16_t>(words.size());
    t_.aux.insert(t_.aux.end(), words.begin(), words.end());
    r.count = passed >= 0 ? passed : static_cast<int64_t>(ids.size());
    return r;
  }
  tr::Record& collective(Fn f, int64_t count = 1, int32_t root = tr::kNoRank,
                         tr::Op op = tr::Op::none, uint16_t comm = tr::kCommWorld) {
    tr::Record& r = add(f, comm);
    r.root = root;
    r.op = static_cast<uint8_t>(op);
    r.count = count;
    r.type_size = 8;
    r.bytes = count * 8;
    return r;
  }
  // The tracer's pseudo-record announcing communicator `id` with these world ranks.
  tr::Record& comm_define(uint16_t id, std::initializer_list<int64_t> members) {
    tr::Record& r = add(Fn::pskel_comm_define, members);
    r.comm = id;
    r.count = static_cast<int64_t>(members.size());
    return r;
  }

  // A call on a communicator.
  tr::Record& add(Fn f, uint16_t comm) {
    tr::Record& r = add(f);
    r.comm = comm;
    return r;
  }

  // The end of the last call (t = 0 before the first).
  int64_t now() const { return clock_; }
  // Makes the last call last until at least `t` (a wait that absorbs another rank's lateness).
  RankBuilder& last_until(int64_t t) {
    if (!t_.records.empty() && t > clock_) t_.records.back().t_end = clock_ = t;
    return *this;
  }
  const tr::RankTrace& trace() const { return t_; }
  tr::RankTrace take() { return std::move(t_); }

 private:
  // The sending or the receiving side of a call, in elements of 8 bytes.
  static void side(tr::Record& r, bool sending, int32_t rank, int32_t tag, int64_t count) {
    (sending ? r.peer : r.source) = rank;
    (sending ? r.tag : r.recv_tag) = tag;
    (sending ? r.count : r.recv_count) = count;
    (sending ? r.type_size : r.recv_type_size) = 8;
    r.bytes += count * 8;
  }

  tr::RankTrace t_;
  int64_t clock_ = 0;
  int64_t gap_ = 1000;
  int64_t duration_ = 100;
  uint32_t next_request_ = 1;
};

// `n` builders for ranks 0..n-1 of an n-rank world.
inline std::vector<RankBuilder> world(int32_t n) {
  std::vector<RankBuilder> ranks;
  for (int32_t r = 0; r < n; ++r) ranks.emplace_back(r, n);
  return ranks;
}

inline tr::TraceSet trace_set(std::vector<RankBuilder>& ranks) {
  tr::TraceSet set;
  set.dir = "(in memory)";
  for (RankBuilder& b : ranks) set.ranks.push_back(b.take());
  return set;
}

}  // namespace pskel::test

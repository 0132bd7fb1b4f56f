// The merge (core/merge): Algorithm 1's canonical order, Algorithm 2's alignment with skipping
// ranks, the symbols, gaps and stats, over TraceSets built in memory (trace_builder.h).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "merge/internal.h"
#include "merge/merge.h"
#include "trace/gaps.h"
#include "merge_checks.h"
#include "trace_builder.h"

using namespace pskel::test;
namespace mg = pskel::merge;

namespace {

bool pseudo(const tr::Record& r) {
  return r.function == static_cast<uint16_t>(Fn::pskel_comm_define);
}

size_t event_records(const tr::RankTrace& t) {
  return static_cast<size_t>(
      std::count_if(t.records.begin(), t.records.end(), [](auto& r) { return !pseudo(r); }));
}

size_t busiest(const tr::TraceSet& set) {
  size_t most = 0;
  for (const tr::RankTrace& t : set.ranks) most = std::max(most, event_records(t));
  return most;
}

// Every event record of every rank is in exactly one event, pseudo-records in none; the parts
// of an event are in ascending rank order and all call the event's function on one comm id.
void check_partition(const tr::TraceSet& set, const mg::MergedTrace& m) {
  REQUIRE(m.world_size == static_cast<int>(set.ranks.size()));
  std::vector<std::vector<int>> seen(set.ranks.size());
  for (size_t r = 0; r < set.ranks.size(); ++r) seen[r].assign(set.ranks[r].records.size(), 0);
  uint32_t next_part = 0;
  for (const mg::Event& e : m.events) {
    REQUIRE(e.part_count > 0);
    REQUIRE(e.first_part == next_part);
    next_part += e.part_count;
    int32_t previous = -1;
    const auto parts = m.parts_of(e);
    for (const mg::Part& p : parts) {
      REQUIRE(p.rank > previous);
      previous = p.rank;
      const tr::Record& rec = set.ranks[static_cast<size_t>(p.rank)].records.at(p.record);
      REQUIRE(rec.function == e.function);
      const auto& first = set.ranks[static_cast<size_t>(parts[0].rank)].records[parts[0].record];
      REQUIRE(rec.comm == first.comm);
      ++seen[static_cast<size_t>(p.rank)][p.record];
    }
  }
  REQUIRE(next_part == m.parts.size());
  for (size_t r = 0; r < set.ranks.size(); ++r)
    for (size_t i = 0; i < seen[r].size(); ++i) {
      INFO("rank " << r << " record " << i);
      REQUIRE(seen[r][i] == (pseudo(set.ranks[r].records[i]) ? 0 : 1));
    }
  // Symbols are dense from 0, and distinct symbols have distinct descriptions.
  mg::Symbol most = 0;
  for (const mg::Event& e : m.events) most = std::max(most, e.symbol);
  REQUIRE(m.symbol_key.size() == (m.events.empty() ? 0 : size_t{most} + 1));
  std::vector<std::string> keys = m.symbol_key;
  std::sort(keys.begin(), keys.end());
  REQUIRE(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
}

mg::MergedTrace merged(const tr::TraceSet& set, mg::MergeStats* stats = nullptr,
                       int lookahead = 64) {
  mg::MergedTrace m = merge_grouped_and_one_by_one(set, stats, lookahead);
  check_partition(set, m);
  return m;
}

std::vector<int32_t> ranks_of(const mg::MergedTrace& m, const mg::Event& e) {
  std::vector<int32_t> out;
  for (const mg::Part& p : m.parts_of(e)) out.push_back(p.rank);
  return out;
}

std::vector<int32_t> all_ranks(int32_t n) {
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int32_t r = 0; r < n; ++r) out[static_cast<size_t>(r)] = r;
  return out;
}

// The functions of `t`'s records in normalized order.
std::vector<Fn> canonical(const tr::RankTrace& t) {
  std::vector<Fn> out;
  for (uint32_t i : mg::normalized_order(t)) out.push_back(static_cast<Fn>(t.records[i].function));
  return out;
}

// Symbols of events [begin, begin + period) repeat over `iterations` periods.
void check_periodic(const mg::MergedTrace& m, size_t begin, size_t period, size_t iterations) {
  REQUIRE(m.events.size() >= begin + period * iterations);
  for (size_t it = 1; it < iterations; ++it)
    for (size_t k = 0; k < period; ++k) {
      INFO("iteration " << it << " position " << k);
      CHECK(m.events[begin + it * period + k].symbol == m.events[begin + k].symbol);
    }
}

int32_t mod(int32_t a, int32_t n) { return ((a % n) + n) % n; }

// A world of n ranks in which every rank makes `iters` iterations of body(builder, rank, it).
template <class F>
tr::TraceSet spmd(int32_t n, int iters, F&& body) {
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r)
    for (int it = 0; it < iters; ++it) body(ranks[static_cast<size_t>(r)], r, it);
  return trace_set(ranks);
}

// A ring of n ranks, each making `iters` times Irecv from the left, Isend to the right and a
// Waitall of both; rank r's request ids shifted by shift_of(r) (a tracer numbers them per rank).
template <class Shift>
tr::TraceSet ring_of_requests(int32_t n, int iters, Shift&& shift_of) {
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    b.add(Fn::MPI_Init);
    for (int it = 0; it < iters; ++it) {
      const uint32_t in = b.irecv(mod(r - 1, n), it), out = b.isend(mod(r + 1, n), it);
      b.complete(Fn::MPI_Waitall, {in, out});
    }
    b.add(Fn::MPI_Finalize);
  }
  tr::TraceSet set = trace_set(ranks);
  for (int32_t r = 0; r < n; ++r) {
    tr::RankTrace& t = set.ranks[static_cast<size_t>(r)];
    const auto shift = static_cast<uint32_t>(shift_of(r));
    for (size_t i = 0; i < t.records.size(); ++i) {
      if (t.records[i].request != 0) t.records[i].request += shift;
      if (t.records[i].function == static_cast<uint16_t>(Fn::MPI_Waitall))
        for (size_t w = 0; w < t.records[i].aux_words; w += tr::kCompletionWords)
          t.aux[t.aux_begin[i] + w] += shift;
    }
  }
  return set;
}

}  // namespace

TEST_CASE("identical ranks give one event per record with every rank, periodic symbols") {
  auto ranks = world(4);
  for (auto& b : ranks) {
    b.add(Fn::MPI_Init);
    for (int it = 0; it < 5; ++it) {
      b.collective(Fn::MPI_Bcast, 10 + it, 0);
      b.collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
      b.collective(Fn::MPI_Barrier);
    }
    b.add(Fn::MPI_Finalize);
  }
  const tr::TraceSet set = trace_set(ranks);
  mg::MergeStats stats;
  const mg::MergedTrace m = merged(set, &stats);
  REQUIRE(m.events.size() == 17);
  for (const mg::Event& e : m.events) CHECK(ranks_of(m, e) == all_ranks(4));
  check_periodic(m, 1, 3, 5);
  CHECK(m.symbol_key.size() == 5);  // Init, Bcast, Allreduce, Barrier, Finalize
  CHECK(m.symbols() == std::vector<mg::Symbol>{0, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 4});
  CHECK(stats.reordered == 0);
  CHECK(stats.unmatched == 0);
  CHECK(m.symbol_key[1] == "MPI_Bcast comm=0 ranks=[x\u00d74] root=rank");
  CHECK(m.symbol_key[2] == "MPI_Allreduce comm=0 ranks=[x\u00d74] op=sum");
}

// A ring of Irecv, Isend, Waitall on 20 ranks: alike, one group. With each rank's request ids
// shifted by its own offset, no two ranks are alike (a pull must not pass the post of a request
// it completes, so ids are part of a rank's behaviour): 20 groups, and a rank is compared with
// at most 8 others that hash alike. The events are the same either way.
TEST_CASE("ranks alike but for their request ids are groups of their own") {
  for (const bool shifted : {false, true}) {
    CAPTURE(shifted);
    const int32_t n = 20;
    const tr::TraceSet set =
        ring_of_requests(n, 6, [&](int32_t r) { return shifted ? 1000 * (r + 1) : 0; });
    mg::MergeStats stats;
    const mg::MergedTrace m = merged(set, &stats);
    CHECK(m.events.size() == 20);
    CHECK(stats.groups == (shifted ? 20u : 1u));
  }
}

// Grouping runs a window of ranks at a time (64 or more), each rank compared first with its
// hash's first leader, then with later ones: three request-id offsets (rank % 3) over 150
// ranks are three groups, whichever window a rank is in, and merge as the ranks one by one do.
TEST_CASE("ranks of one hash but three behaviours, over several windows: three groups") {
  const tr::TraceSet set = ring_of_requests(150, 4, [](int32_t r) { return 1000 * (r % 3); });
  mg::MergeStats stats;
  const mg::MergedTrace m = merged(set, &stats);
  CHECK(m.events.size() == 14);
  CHECK(stats.groups == 3);
}

// A member whose records are numbered as its leader's reads the leader's order and part keys
// (it keeps none); one with an extra pseudo-record (a communicator's definition) has its calls
// in other records, alike in behaviour, and keeps its own. One group of both kinds over three
// windows: every event still holds each rank's own record (check_partition).
TEST_CASE("alike ranks whose records are numbered otherwise than their leader's keep their own order") {
  const int32_t n = 150;
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    b.add(Fn::MPI_Init);
    if (r % 2 == 1) b.comm_define(7, {r});
    for (int it = 0; it < 4; ++it) {
      const uint32_t in = b.irecv(mod(r - 1, n), it), out = b.isend(mod(r + 1, n), it);
      b.complete(Fn::MPI_Waitall, {in, out});
    }
    b.add(Fn::MPI_Finalize);
  }
  mg::MergeStats stats;
  const mg::MergedTrace m = merged(trace_set(ranks), &stats);
  CHECK(stats.groups == 1);
  CHECK(m.events.size() == 14);
}

// Symbols are interned a slice of 16,384 events at a time, beside the alignment: a
// symbol is still numbered by its first event when it first appears in a later slice, and one
// call shape met in several slices is one symbol.
TEST_CASE("symbols over several slices of events are numbered by their first event") {
  auto ranks = world(2);
  std::vector<Fn> calls{Fn::MPI_Init};
  for (int i = 0; i < 20000; ++i) calls.push_back(i % 2 ? Fn::MPI_Bcast : Fn::MPI_Allreduce);
  for (int i = 0; i < 30000; ++i)
    calls.push_back(i % 3 == 0 ? Fn::MPI_Barrier : i % 3 == 1 ? Fn::MPI_Bcast : Fn::MPI_Reduce);
  calls.push_back(Fn::MPI_Allreduce);
  calls.push_back(Fn::MPI_Finalize);
  for (auto& b : ranks)
    for (const Fn f : calls) {
      if (f == Fn::MPI_Init || f == Fn::MPI_Finalize) b.add(f);
      else if (f == Fn::MPI_Bcast || f == Fn::MPI_Reduce) b.collective(f, 4, 0, tr::Op::sum);
      else if (f == Fn::MPI_Allreduce) b.collective(f, 1, tr::kNoRank, tr::Op::sum);
      else b.collective(f);
    }
  const tr::TraceSet set = trace_set(ranks);
  const mg::MergedTrace m = merged(set);
  REQUIRE(m.events.size() == calls.size());
  std::vector<mg::Symbol> expected;
  std::vector<Fn> first_seen;
  for (const Fn f : calls) {
    const auto at = std::find(first_seen.begin(), first_seen.end(), f);
    expected.push_back(static_cast<mg::Symbol>(at - first_seen.begin()));
    if (at == first_seen.end()) first_seen.push_back(f);
  }
  CHECK(m.symbols() == expected);
  REQUIRE(m.symbol_key.size() == 6);
  CHECK(m.symbol_key[3].starts_with("MPI_Barrier"));
  CHECK(m.symbol_key[4].starts_with("MPI_Reduce"));

  // With one CPU the slices are interned inline, with the same result.
  const char* threads = std::getenv("PSKEL_THREADS");
  const std::string saved = threads ? threads : "";
  REQUIRE(::setenv("PSKEL_THREADS", "1", 1) == 0);
  const mg::MergedTrace inline_interned = mg::merge(set);
  if (threads) ::setenv("PSKEL_THREADS", saved.c_str(), 1);
  else ::unsetenv("PSKEL_THREADS");
  CHECK(inline_interned.symbols() == expected);
  CHECK(inline_interned.symbol_key == m.symbol_key);
}

TEST_CASE("ring: rank 0 sends then receives, the others receive then send: one event each") {
  const int32_t n = 5, iters = 6;
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    b.add(Fn::MPI_Init);
    // No collective between iterations: the rounds, not the runs, keep the loop intact.
    for (int it = 0; it < iters; ++it) {
      if (r == 0) {
        b.send(1, it);
        b.recv(n - 1, it);
      } else {
        b.recv(r - 1, it);
        b.send(mod(r + 1, n), it);
      }
    }
    b.add(Fn::MPI_Finalize);
  }
  const tr::TraceSet set = trace_set(ranks);
  CHECK(canonical(set.ranks[2]) ==
        std::vector<Fn>{Fn::MPI_Init, Fn::MPI_Send, Fn::MPI_Recv, Fn::MPI_Send, Fn::MPI_Recv,
                        Fn::MPI_Send, Fn::MPI_Recv, Fn::MPI_Send, Fn::MPI_Recv, Fn::MPI_Send,
                        Fn::MPI_Recv, Fn::MPI_Send, Fn::MPI_Recv, Fn::MPI_Finalize});
  mg::MergeStats stats;
  const mg::MergedTrace m = merged(set, &stats);
  CHECK(m.events.size() == busiest(set));
  for (const mg::Event& e : m.events) CHECK(ranks_of(m, e) == all_ranks(n));
  check_periodic(m, 1, 2, iters);
  CHECK(stats.reordered == static_cast<uint64_t>(2 * iters * (n - 1)));
  CHECK(stats.unmatched == 0);
  CHECK(m.symbol_key[m.events[1].symbol] == "MPI_Send comm=0 peers=[+1\u00d74 -4]");
  CHECK(m.symbol_key[m.events[2].symbol] == "MPI_Recv comm=0 peers=[+4 -1\u00d74]");
}

TEST_CASE("part keys: numbered by first use, equal keys one number, past the index's growth") {
  mg::detail::PartKeys keys;
  const auto key = [](int32_t i) { return mg::detail::PartKey{0, i, -i, -1, i % 3, i / 7}; };
  for (int32_t i = 0; i < 1000; ++i) CHECK(keys.number(key(i)) == static_cast<uint32_t>(i));
  for (int32_t i = 999; i >= 0; --i) CHECK(keys.number(key(i)) == static_cast<uint32_t>(i));
  keys.seal();
  REQUIRE(keys.size() == 1000);
  CHECK(keys[417] == key(417));
}

// A Start names no peer: its key takes the peers of the call that created its request, so a
// persistent ring's Starts are the ring's (and the ring's last rank keeps its own offset).
TEST_CASE("persistent ring: a Start's key has the peers of its request's creator") {
  const int32_t n = 4, iters = 3;
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    b.add(Fn::MPI_Init);
    const uint32_t to = b.send_init(mod(r + 1, n));
    const uint32_t from = b.recv_init(mod(r - 1, n));
    for (int it = 0; it < iters; ++it) {
      b.start(from);
      b.start(to);
      b.complete(Fn::MPI_Waitall, {from, to});
    }
    b.add(Fn::MPI_Finalize);
  }
  const mg::MergedTrace m = merged(trace_set(ranks));
  std::vector<std::string> starts;
  for (const mg::Event& e : m.events)
    if (e.function == static_cast<uint16_t>(Fn::MPI_Start)) starts.push_back(m.symbol_key[e.symbol]);
  REQUIRE(starts.size() == 2 * iters);
  CHECK(starts[0] == "MPI_Start peers=[+3 -1 -1 -1]");
  CHECK(starts[1] == "MPI_Start peers=[+1 +1 +1 -3]");
}

TEST_CASE("wavefront: first and last ranks skip calls, the merge has the busiest rank's length") {
  const int32_t n = 6, blocks = 8, iters = 3;
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    b.add(Fn::MPI_Init);
    for (int it = 0; it < iters; ++it) {
      for (int k = 0; k < blocks; ++k) {
        if (r > 0) b.recv(r - 1, k, 100 + k);
        if (r < n - 1) b.send(r + 1, k, 100 + k);
      }
      b.collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::max);
    }
    b.add(Fn::MPI_Finalize);
  }
  const tr::TraceSet set = trace_set(ranks);
  // Rounds keep the pipeline's structure: "Send, Recv" per block, not all sends first.
  std::vector<Fn> want{Fn::MPI_Init};
  for (int k = 0; k < blocks; ++k) want.insert(want.end(), {Fn::MPI_Send, Fn::MPI_Recv});
  want.push_back(Fn::MPI_Allreduce);
  auto got = canonical(set.ranks[2]);
  got.resize(want.size());
  CHECK(got == want);

  mg::MergeStats stats;
  const mg::MergedTrace m = merged(set, &stats);
  CHECK(m.events.size() == busiest(set));
  check_periodic(m, 1, 2 * blocks + 1, iters);
  std::vector<int32_t> senders = all_ranks(n - 1), receivers = all_ranks(n);
  receivers.erase(receivers.begin());
  for (size_t i = 1; i + 1 < m.events.size(); ++i) {
    const mg::Event& e = m.events[i];
    if (e.function == static_cast<uint16_t>(Fn::MPI_Send)) CHECK(ranks_of(m, e) == senders);
    if (e.function == static_cast<uint16_t>(Fn::MPI_Recv)) CHECK(ranks_of(m, e) == receivers);
  }
  CHECK(stats.unmatched > 0);
  CHECK(m.symbol_key[m.events[1].symbol] == "MPI_Send comm=0 peers=[+1\u00d75 -]");
  // Without look-ahead, every call that is not the busiest rank's looks like an extra one and
  // goes first: the last rank's receives run ahead of the sends they wait for.
  const mg::MergedTrace blind = merged(set, nullptr, 0);
  CHECK(blind.events.size() > busiest(set));
}

TEST_CASE("halo exchange posted in a different order on every rank merges to one order") {
  const int32_t n = 4, iters = 4;
  enum Post { kRecvLeft, kRecvRight, kSendLeft, kSendRight };
  const Post orders[n][4] = {{kRecvLeft, kRecvRight, kSendLeft, kSendRight},
                             {kSendLeft, kRecvLeft, kSendRight, kRecvRight},
                             {kRecvLeft, kSendLeft, kRecvRight, kSendRight},
                             {kSendLeft, kSendRight, kRecvLeft, kRecvRight}};
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    const int32_t left = mod(r - 1, n), right = mod(r + 1, n);
    for (int it = 0; it < iters; ++it) {
      uint32_t id[4] = {};
      for (int k = 0; k < 4; ++k) {
        const Post post = orders[r][k];
        const int32_t peer = post == kRecvLeft || post == kSendLeft ? left : right;
        id[post] = post <= kRecvRight ? b.irecv(peer) : b.isend(peer);
        if (r == 2 && it == 0 && k == 0) b.comm_define(2, {0, 1, 2, 3});  // a pseudo-record
      }
      b.complete(Fn::MPI_Waitall, {id[kRecvLeft], id[kRecvRight], id[kSendLeft], id[kSendRight]});
      b.collective(Fn::MPI_Allreduce, 1, tr::kNoRank, tr::Op::sum);
    }
  }
  const tr::TraceSet set = trace_set(ranks);
  for (const tr::RankTrace& t : set.ranks) {
    auto order = canonical(t);
    order.resize(6);
    CHECK(order == std::vector<Fn>{Fn::MPI_Irecv, Fn::MPI_Irecv, Fn::MPI_Isend, Fn::MPI_Isend,
                                   Fn::MPI_Waitall, Fn::MPI_Allreduce});
  }
  const mg::MergedTrace m = merged(set);
  CHECK(m.events.size() == busiest(set));
  for (const mg::Event& e : m.events) CHECK(ranks_of(m, e) == all_ranks(n));
  check_periodic(m, 0, 6, iters);
  CHECK(m.symbol_key[m.events[4].symbol] == "MPI_Waitall ranks=[x\u00d74] nreq=4");
}

TEST_CASE("a completion never moves before the call that created its request") {
  auto ranks = world(2);
  // Rank 0: Isend, Wait, Recv. Rank 1: Recv, Isend, Wait. Both become Isend, Recv, Wait.
  const uint32_t a = ranks[0].isend(1);
  ranks[0].complete(Fn::MPI_Wait, {a});
  ranks[0].recv(1);
  ranks[1].recv(0);
  const uint32_t b = ranks[1].isend(0);
  ranks[1].complete(Fn::MPI_Wait, {b});
  const tr::TraceSet set = trace_set(ranks);
  for (const tr::RankTrace& t : set.ranks)
    CHECK(canonical(t) == std::vector<Fn>{Fn::MPI_Isend, Fn::MPI_Recv, Fn::MPI_Wait});
  CHECK(merged(set).events.size() == 3);
}

TEST_CASE("a call is pulled forward where two ranks cut their rounds differently") {
  const int32_t n = 3, iters = 4;
  const tr::TraceSet set = spmd(n, iters, [&](RankBuilder& b, int32_t r, int) {
    const int32_t left = mod(r - 1, n), right = mod(r + 1, n);
    const uint32_t q = b.irecv(left, 1);
    if (r == 0) {  // "Irecv, Send, Wait" then "Send, Recv": one round "Irecv S W S"
      b.send(right, 1);
      b.complete(Fn::MPI_Wait, {q});
      b.send(right, 2);
      b.recv(left, 2);
    } else {  // "Irecv, Wait, Send" then "Recv, Send": rounds "Irecv W S" and "R S"
      b.complete(Fn::MPI_Wait, {q});
      b.send(right, 1);
      b.recv(left, 2);
      b.send(right, 2);
    }
    b.collective(Fn::MPI_Barrier);
  });
  CHECK(canonical(set.ranks[0])[2] == Fn::MPI_Send);  // rank 0: Irecv, Send, Send, Wait, Recv
  CHECK(canonical(set.ranks[1])[2] == Fn::MPI_Wait);  // the others: Irecv, Send, Wait, ...
  mg::MergeStats stats;
  const mg::MergedTrace m = merged(set, &stats);
  CHECK(m.events.size() == busiest(set));
  for (const mg::Event& e : m.events) CHECK(ranks_of(m, e) == all_ranks(n));
  CHECK(stats.pulled == static_cast<uint64_t>(iters));
  check_periodic(m, 0, 6, iters);
  // Rank 0's Wait joins the others' Waits, ahead of its second Send.
  CHECK(m.events[2].function == static_cast<uint16_t>(Fn::MPI_Wait));
  CHECK(m.parts_of(m.events[2])[0].record == 2);
}

TEST_CASE("a persistent request is never restarted before its previous completion") {
  RankBuilder b(0, 1);
  const uint32_t s = b.send_init(tr::kProcNull);  // PROC_NULL: no channel cuts the rounds
  const uint32_t r = b.recv_init(tr::kProcNull);
  for (int it = 0; it < 3; ++it) {
    b.start(s);
    b.start(r);
    b.complete(Fn::MPI_Waitall, {s, r});
  }
  const std::vector<uint32_t> order = mg::normalized_order(b.trace());
  // Each round: the receive start first, then the send start, then the Waitall.
  CHECK(order == std::vector<uint32_t>{0, 1, 3, 2, 4, 6, 5, 7, 9, 8, 10});
}

TEST_CASE("a send that carries what the rank computed on a receive stays after that receive") {
  // A worker: probe and receive a task, compute on it, send the result, twice. Made back to
  // back, "Recv, Send" is one exchange, sorted send first (the seed's rule); computed on, the
  // send depends on the receive, and sorted the skeleton would send before it receives.
  const auto worker = [](int64_t compute_ns) {
    RankBuilder b(1, 2);
    for (int task = 0; task < 2; ++task) {
      b.timing(1000, 100);
      b.probe(0);
      b.recv(0, 1);
      b.timing(compute_ns, 100);
      b.send(0, 1);
    }
    return b.take();
  };
  uint64_t moved = 7;
  CHECK(mg::normalized_order(worker(1'000'000), &moved) ==
        std::vector<uint32_t>{0, 1, 2, 3, 4, 5});
  CHECK(moved == 0);
  CHECK(mg::normalized_order(worker(1'000)) == std::vector<uint32_t>{2, 0, 1, 5, 3, 4});
  // The same after a Wait for a task received with MPI_Irecv.
  RankBuilder b(1, 2);
  const uint32_t task = b.irecv(0, 1);
  b.complete(Fn::MPI_Wait, {task});
  b.timing(1'000'000, 100);
  b.send(0, 1);
  CHECK(mg::normalized_order(b.trace()) == std::vector<uint32_t>{0, 1, 2});
}

TEST_CASE("whether a send follows a computation is decided per statement, by most of its calls") {
  // A pipeline's middle rank receives from 0 and sends to 2, ten times: blocks computed for
  // 1 ms but the first for 1 us, or exchanges made back to back but the first after a 1 ms
  // interrupt. Every iteration is treated alike: a block's send after its receive, an
  // exchange's first (decided call by call, the first pair would be the other way round).
  const auto middle = [](int64_t usual_ns, int64_t odd_ns) {
    RankBuilder b(1, 3);
    for (int i = 0; i < 10; ++i) {
      b.timing(1000, 100);
      b.recv(0, 1);
      b.timing(i == 0 ? odd_ns : usual_ns, 100);
      b.send(2, 1);
    }
    return b.take();
  };
  std::vector<uint32_t> call_order, sends_first;
  for (uint32_t i = 0; i < 20; i += 2) {
    call_order.insert(call_order.end(), {i, i + 1});
    sends_first.insert(sends_first.end(), {i + 1, i});
  }
  CHECK(mg::normalized_order(middle(1'000'000, 1'000)) == call_order);
  CHECK(mg::normalized_order(middle(1'000, 1'000'000)) == sends_first);
}

TEST_CASE("a master and its worker, one call out of phase, are merged into one loop") {
  // The master sends the first task, then answers each result with the next task (the last
  // answer a stop); the worker probes and receives a task, computes, sends the result. With
  // the worker's rounds cut at its computed sends, the two are a call apart, and every time
  // each has as many calls left as the other: a reference rank that flipped on those ties
  // emitted their calls one rank at a time and never paired them.
  constexpr int kTasks = 10;
  std::vector<RankBuilder> ranks = pskel::test::world(2);
  RankBuilder& master = ranks[0];
  RankBuilder& worker = ranks[1];
  master.add(Fn::MPI_Init);
  worker.add(Fn::MPI_Init);
  master.send(1, 1);
  for (int task = 0; task < kTasks; ++task) {
    master.probe(1, 3, true);
    master.recv_any(1, 3, 2);
    master.send(1, task + 1 < kTasks ? 1 : 2);
  }
  for (int task = 0; task <= kTasks; ++task) {
    worker.timing(1000, 100);
    worker.probe(0, task < kTasks ? 1 : 2);
    worker.recv(0, task < kTasks ? 1 : 2);
    if (task == kTasks) break;
    worker.timing(1'000'000, 100);
    worker.send(0, 3, 2);
  }
  master.add(Fn::MPI_Finalize);
  worker.add(Fn::MPI_Finalize);
  const mg::MergedTrace m = merged(pskel::test::trace_set(ranks));
  // Init; the worker's first Probe and Recv; per task a Send, Probe and Recv of both (the
  // master's task or stop beside the worker's result); the master's last Send; Finalize.
  CHECK(m.events.size() == 1 + 2 + 3 * kTasks + 1 + 1);
  size_t paired = 0;
  for (const mg::Event& e : m.events) paired += e.part_count == 2;
  CHECK(paired == 2 + 3 * kTasks);
}

TEST_CASE("nothing moves across a collective or a non-point-to-point call") {
  RankBuilder b(1, 2);
  b.recv(0);
  b.collective(Fn::MPI_Barrier);
  b.send(0);
  b.recv(0);
  b.add(Fn::MPI_Iprobe).source = 0;
  b.send(0);
  uint64_t moved = 7;
  CHECK(mg::normalized_order(b.trace(), &moved) == std::vector<uint32_t>{0, 1, 2, 3, 4, 5});
  CHECK(moved == 0);
}

TEST_CASE("ranks with extra calls in the middle are merged through the look-ahead") {
  const int32_t n = 4, iters = 6;
  const tr::TraceSet set = spmd(n, iters, [&](RankBuilder& b, int32_t r, int it) {
    b.collective(Fn::MPI_Bcast, 4, 0);
    if (r == 2 && it == 2) {  // rank 2 alone makes two extra calls
      b.send(tr::kProcNull, 0, 1, Fn::MPI_Ssend);
      b.recv(tr::kProcNull);
    }
    if (r == 1 && it == 4)  // and rank 1, the busiest, three others
      for (int k = 0; k < 3; ++k) b.send(tr::kProcNull, k, 1, Fn::MPI_Bsend);
    b.sendrecv(mod(r + 1, n), mod(r - 1, n));
    b.collective(Fn::MPI_Barrier);
  });
  const size_t common = 3 * iters;
  REQUIRE(busiest(set) == common + 3);
  mg::MergeStats stats;
  const mg::MergedTrace m = merged(set, &stats);
  CHECK(m.events.size() == common + 5);
  std::vector<size_t> alone(n, 0);
  for (const mg::Event& e : m.events) {
    const auto who = ranks_of(m, e);
    if (who.size() == 1) ++alone[static_cast<size_t>(who[0])];
    else CHECK(who == all_ranks(n));
  }
  CHECK(alone == std::vector<size_t>{0, 3, 2, 0});
  CHECK(stats.unmatched == 5);
  CHECK(stats.forced == 0);
}

TEST_CASE("a merger takes exactly world_size ranks, in order") {
  auto ranks = world(3);
  for (auto& b : ranks) b.collective(Fn::MPI_Barrier);
  const tr::TraceSet set = trace_set(ranks);
  mg::Merger short_of_one(3);
  short_of_one.add(set.ranks[0]);
  short_of_one.add(set.ranks[1]);
  CHECK_THROWS_AS(short_of_one.finish(), std::logic_error);
  mg::Merger one_too_many(2);
  one_too_many.add(set.ranks[0]);
  one_too_many.add(set.ranks[1]);
  CHECK_THROWS_AS(one_too_many.add(tr::RankTrace(set.ranks[2])), std::logic_error);
  CHECK(one_too_many.finish().events.size() == 1);
}

TEST_CASE("gaps: compute time before each call, pseudo-records skipped, negatives clamped") {
  auto ranks = world(2);
  RankBuilder& b = ranks[0];
  tr::Record* r = &b.add(Fn::MPI_Init);
  r->t_start = -500;
  r->t_end = 50;
  r = &b.comm_define(2, {0});
  r->t_start = r->t_end = 9000;  // registered later than the call it precedes
  r = &b.collective(Fn::MPI_Barrier, 0, tr::kNoRank, tr::Op::none, 2);
  r->t_start = 150;
  r->t_end = 200;
  r = &b.recv(1);
  r->t_start = 180;  // before the previous end (clock skew): 0, not negative
  r->t_end = 300;
  r = &b.add(Fn::MPI_Finalize);
  r->t_start = r->t_end = 1300;
  ranks[1].add(Fn::MPI_Init).t_start = 70;
  const tr::TraceSet set = trace_set(ranks);
  CHECK(tr::compute_gaps(set.ranks[0]) == std::vector<int64_t>{0, 0, 100, 0, 1000});
  CHECK(tr::compute_gaps(set.ranks[1]) == std::vector<int64_t>{70});
}

TEST_CASE("a wildcard receive has one symbol whatever source it was resolved to") {
  const int32_t n = 4, iters = 5;
  auto build = [&](bool wildcard) {
    auto ranks = world(n);
    std::mt19937 rng(7);
    for (int it = 0; it < iters; ++it) {
      std::vector<int32_t> order{1, 2, 3};
      std::shuffle(order.begin(), order.end(), rng);  // results arrive in any order
      for (int32_t w : order) {
        if (wildcard) ranks[0].recv_any(w, it);
        else ranks[0].recv(w, it);
      }
      for (int32_t w = 1; w < n; ++w) ranks[static_cast<size_t>(w)].send(0, it);
      for (auto& b : ranks) b.collective(Fn::MPI_Barrier);
    }
    return trace_set(ranks);
  };
  const tr::TraceSet any_set = build(true);
  const mg::MergedTrace m = merged(any_set);
  std::vector<mg::Symbol> recv_symbols;
  for (const mg::Event& e : m.events)
    if (e.function == static_cast<uint16_t>(Fn::MPI_Recv)) recv_symbols.push_back(e.symbol);
  REQUIRE(recv_symbols.size() == 3 * iters);
  for (mg::Symbol s : recv_symbols) CHECK(s == recv_symbols[0]);
  CHECK(m.symbol_key[recv_symbols[0]] == "MPI_Recv comm=0 peers=[any - - -]");

  // The control: the same receives posted with explicit sources do differ.
  const tr::TraceSet named = build(false);
  const mg::MergedTrace c = merged(named);
  std::vector<mg::Symbol> named_symbols;
  for (const mg::Event& e : c.events)
    if (e.function == static_cast<uint16_t>(Fn::MPI_Recv)) named_symbols.push_back(e.symbol);
  std::sort(named_symbols.begin(), named_symbols.end());
  CHECK(std::unique(named_symbols.begin(), named_symbols.end()) - named_symbols.begin() == 3);
}

TEST_CASE("sizes, tags, times and request ids that change per iteration keep the symbol") {
  auto ranks = world(2);
  for (int it = 0; it < 6; ++it)
    for (int32_t r = 0; r < 2; ++r) {
      RankBuilder& b = ranks[static_cast<size_t>(r)];
      b.timing(1000 * it, 10 * it + 1);
      const uint32_t q = b.irecv(1 - r, 100 + it, 1 << it);
      b.send(1 - r, 100 + it, 1 << it);
      b.complete(Fn::MPI_Wait, {q});
      b.collective(Fn::MPI_Allreduce, it + 1, tr::kNoRank, tr::Op::sum);
    }
  const tr::TraceSet set = trace_set(ranks);
  const mg::MergedTrace m = merged(set);
  REQUIRE(m.events.size() == 24);
  check_periodic(m, 0, 4, 6);
  CHECK(m.symbol_key.size() == 4);
}

TEST_CASE("peers are relative: rank r sending to r + 1 is one symbol wherever the chain is") {
  auto ranks = world(6);
  for (int it = 0; it < 3; ++it) {
    // First ranks 0..3 send to their right neighbour, then ranks 1..4: the same statement.
    for (int32_t shift = 0; shift < 2; ++shift) {
      for (int32_t r = shift; r < shift + 4; ++r) ranks[static_cast<size_t>(r)].send(r + 1, it);
      for (int32_t r = shift + 1; r < shift + 5; ++r) ranks[static_cast<size_t>(r)].recv(r - 1, it);
      for (auto& b : ranks) b.collective(Fn::MPI_Barrier);
    }
  }
  const tr::TraceSet set = trace_set(ranks);
  const mg::MergedTrace m = merged(set);
  CHECK(m.events.size() == busiest(set));
  check_periodic(m, 0, 6, 3);
  // Participants differ between the two shifts, so the symbols do too; the peers agree.
  CHECK(m.symbol_key[m.events[0].symbol] == "MPI_Send comm=0 peers=[+1\u00d74 - -]");
  CHECK(m.symbol_key[m.events[3].symbol] == "MPI_Send comm=0 peers=[- +1\u00d74 -]");
}

TEST_CASE("symbol keys stay short for many ranks and show markers") {
  auto ranks = world(16);
  for (int32_t r = 0; r < 16; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    b.send(r < 15 ? r + 1 : tr::kProcNull);
    b.collective(Fn::MPI_Reduce, 1, 3, tr::Op::max).flags |= (r == 3 ? tr::kFlagInPlace : 0);
    b.sendrecv(mod(r + 1, 16), mod(r - 1, 16));
  }
  const tr::TraceSet set = trace_set(ranks);
  const mg::MergedTrace m = merged(set);
  REQUIRE(m.events.size() == 3);
  CHECK(m.symbol_key[m.events[0].symbol] == "MPI_Send comm=0 peers=[+1\u00d715 null]");
  CHECK(m.symbol_key[m.events[1].symbol] ==
        "MPI_Reduce comm=0 ranks=[x\u00d716] root=rank op=max in_place=[no no no x no\u00d712]");
  CHECK(m.symbol_key[m.events[2].symbol] ==
        "MPI_Sendrecv comm=0 peers=[+1/+15 +1/-1\u00d714 -15/-1]");
}

TEST_CASE("empty inputs: no ranks, ranks without calls, ranks with only pseudo-records") {
  CHECK(mg::merge(tr::TraceSet{}).events.empty());
  auto ranks = world(3);
  ranks[1].comm_define(2, {0, 1});
  ranks[2].add(Fn::MPI_Init);
  const tr::TraceSet set = trace_set(ranks);
  const mg::MergedTrace m = merged(set);
  REQUIRE(m.events.size() == 1);
  CHECK(ranks_of(m, m.events[0]) == std::vector<int32_t>{2});
  CHECK(tr::compute_gaps(set.ranks[1]) == std::vector<int64_t>{0});
}

// The parts of event e make one statement: every part that has a peer has it at the same
// offset from its own rank.
bool one_direction(const tr::TraceSet& set, const mg::MergedTrace& m, const mg::Event& e) {
  std::vector<int32_t> offsets;
  for (const mg::Part& p : m.parts_of(e)) {
    const tr::Record& r = set.ranks[static_cast<size_t>(p.rank)].records[p.record];
    if (r.peer >= 0) offsets.push_back(r.peer - p.rank);
    else if (r.source >= 0) offsets.push_back(r.source - p.rank);
  }
  return std::adjacent_find(offsets.begin(), offsets.end(), std::not_equal_to<>()) ==
         offsets.end();
}

TEST_CASE("two-rank ring: a statement that ends with a receive and one that starts with one") {
  // ring.c on two ranks: rank 1's "Bsend, Recv" is followed by the next iteration's "Recv, Send"
  // from the same neighbour. One round, they became "Bsend Send Recv Recv".
  const int iters = 5;
  auto ranks = world(2);
  for (int32_t r = 0; r < 2; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    for (int it = 0; it < iters; ++it) {
      if (r == 0) {
        b.send(1, 1);
        b.recv(1, 1);
      } else {
        b.recv(0, 1);
        b.send(0, 1);
      }
      b.send(1 - r, 5, 1, Fn::MPI_Bsend);
      b.recv(1 - r, 5);
    }
  }
  const tr::TraceSet set = trace_set(ranks);
  for (const tr::RankTrace& t : set.ranks) {
    auto order = canonical(t);
    order.resize(8);
    CHECK(order == std::vector<Fn>{Fn::MPI_Send, Fn::MPI_Recv, Fn::MPI_Bsend, Fn::MPI_Recv,
                                   Fn::MPI_Send, Fn::MPI_Recv, Fn::MPI_Bsend, Fn::MPI_Recv});
  }
  const mg::MergedTrace m = merged(set);
  CHECK(m.events.size() == busiest(set));
  for (const mg::Event& e : m.events) CHECK(ranks_of(m, e) == all_ranks(2));
  check_periodic(m, 0, 4, iters);
}

TEST_CASE("completions of non-blocking collectives or of requests a collective separated stay") {
  // persistent.c: each iteration's persistent exchange follows the Wait*/Test* of the previous
  // iteration's non-blocking collectives (moved after its posts, the loop came out rotated);
  // ring.c: "Irecv, Barrier, Rsend, Wait". Nothing moves.
  const int32_t n = 3;
  const int iters = 4;
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r) {
    RankBuilder& b = ranks[static_cast<size_t>(r)];
    const int32_t left = mod(r - 1, n), right = mod(r + 1, n);
    b.add(Fn::MPI_Init);
    const uint32_t rl = b.recv_init(left, 1), sr = b.send_init(right, 1);
    const uint32_t rr = b.recv_init(right, 2), sl = b.send_init(left, 2);
    for (int it = 0; it < iters; ++it) {
      b.startall({rl, sr});
      b.start(rr);
      b.start(sl);
      b.complete(Fn::MPI_Waitall, {rl, sr, rr, sl});
      const uint32_t a = b.icollective(Fn::MPI_Iallreduce, 1, tr::kNoRank, tr::Op::sum);
      const uint32_t c = b.icollective(Fn::MPI_Ibarrier);
      b.complete(Fn::MPI_Testany, {}, 2);  // completed nothing
      b.complete(Fn::MPI_Waitsome, {a}, 2);
      b.complete(Fn::MPI_Waitall, {c}, 2);
      const uint32_t q = b.irecv(left, 4);
      b.collective(Fn::MPI_Barrier);
      b.send(right, 4, 1, Fn::MPI_Rsend);
      b.complete(Fn::MPI_Wait, {q});
    }
    b.add(Fn::MPI_Finalize);
  }
  const tr::TraceSet set = trace_set(ranks);
  for (const tr::RankTrace& t : set.ranks) {
    uint64_t moved = 1;
    (void)mg::normalized_order(t, &moved);
    CHECK(moved == 0);
  }
  const mg::MergedTrace m = merged(set);
  CHECK(m.events.size() == busiest(set));
  for (const mg::Event& e : m.events) CHECK(ranks_of(m, e) == all_ranks(n));
  check_periodic(m, 5, 13, iters);
}

TEST_CASE("a completion that ends an exchange stays before the next exchange's posts") {
  RankBuilder b(1, 4);
  for (int it = 0; it < 3; ++it) {  // right shift, then left shift, non-blocking
    const uint32_t a = b.irecv(0), c = b.isend(2);
    b.complete(Fn::MPI_Waitall, {a, c});
    const uint32_t d = b.irecv(2), e = b.isend(0);
    b.complete(Fn::MPI_Waitall, {d, e});
  }
  uint64_t moved = 1;
  (void)mg::normalized_order(b.trace(), &moved);
  CHECK(moved == 0);
  // A blocking call after it still joins: "Irecv(l) Wait Send(r)" is "Irecv(l) Send(r) Wait".
  RankBuilder w(1, 4);
  const uint32_t q = w.irecv(0);
  w.complete(Fn::MPI_Wait, {q});
  w.send(2);
  CHECK(canonical(w.trace()) == std::vector<Fn>{Fn::MPI_Irecv, Fn::MPI_Send, Fn::MPI_Wait});
}

TEST_CASE("master and workers: probes join their receives, the workers' last calls wait") {
  // masterworker.c, tasks dealt in turn: the master sends each worker a task, then per result
  // Probe(any), Recv(any), Send of the next task (or a stop); a worker Probe, Recv, Send until
  // the stop. Every rank ends with an Iprobe.
  const int32_t n = 4, rounds = 4;
  auto ranks = world(n);
  for (auto& b : ranks) b.add(Fn::MPI_Init);
  RankBuilder& master = ranks[0];
  for (int32_t w = 1; w < n; ++w) master.send(w, 1);
  for (int k = 0; k < rounds * (n - 1); ++k) {
    const int32_t w = 1 + k % (n - 1);
    master.probe(w, 3, true);
    master.recv_any(w, 3, 2).flags |= tr::kFlagAnyTag;
    master.send(w, k + n - 1 < rounds * (n - 1) ? 1 : 2);
  }
  master.add(Fn::MPI_Iprobe).source = tr::kAnySource;
  for (int32_t w = 1; w < n; ++w) {
    RankBuilder& b = ranks[static_cast<size_t>(w)];
    for (int k = 0; k <= rounds; ++k) {
      b.probe(0, k < rounds ? 1 : 2).flags |= tr::kFlagAnyTag;
      b.recv(0, k < rounds ? 1 : 2);
      if (k < rounds) b.send(0, 3, 2);
    }
    b.add(Fn::MPI_Iprobe).source = 0;
  }
  for (auto& b : ranks) b.add(Fn::MPI_Finalize);
  const tr::TraceSet set = trace_set(ranks);
  auto worker = canonical(set.ranks[1]);
  worker.resize(4);
  CHECK(worker == std::vector<Fn>{Fn::MPI_Init, Fn::MPI_Send, Fn::MPI_Probe, Fn::MPI_Recv});
  const mg::MergedTrace m = merged(set);
  CHECK(m.events.size() == busiest(set));
  const mg::Event& last_probe = m.events[m.events.size() - 2];
  CHECK(last_probe.function == static_cast<uint16_t>(Fn::MPI_Iprobe));
  CHECK(ranks_of(m, last_probe) == all_ranks(n));
}

TEST_CASE("forward and backward pipeline sweeps: each rank's call joins its own sweep's event") {
  // wavefront.c: blocks of a forward sweep (Recv from rank-1, Send to rank+1), then of a
  // backward one, no collective between iterations. The first rank only sends, then only
  // receives; by shape alone its backward Recv(+1) would join the forward Recv(-1).
  const int blocks = 4, iters = 5;
  for (const int32_t n : {2, 4}) {
    CAPTURE(n);
    const tr::TraceSet set = spmd(n, iters, [&](RankBuilder& b, int32_t r, int) {
      for (int k = 0; k < blocks; ++k) {
        if (r > 0) b.recv(r - 1, 1);
        if (r < n - 1) b.send(r + 1, 1);
      }
      for (int k = 0; k < blocks; ++k) {
        if (r < n - 1) b.recv(r + 1, 2);
        if (r > 0) b.send(r - 1, 2);
      }
    });
    // The last rank's receives (tag 1) and sends (tag 2) share no tag: one round, kept in order.
    uint64_t moved = 1;
    (void)mg::normalized_order(set.ranks[static_cast<size_t>(n - 1)], &moved);
    CHECK(moved == 0);
    mg::MergeStats stats;
    const mg::MergedTrace m = merged(set, &stats);
    CHECK(m.events.size() == busiest(set));
    const size_t period = busiest(set) / static_cast<size_t>(iters);
    check_periodic(m, 0, period, iters);
    if (n > 2)  // with two ranks, +1 and -1 are one neighbour: the sweeps share their events
      for (const mg::Event& e : m.events) CHECK(one_direction(set, m, e));
  }
}

// Random SPMD-like programs: statements of random kinds (collectives, blocking and non-blocking
// exchanges with relative peers, calls on a sub-communicator) repeated over iterations. Each
// rank posts the calls of an exchange in its own order (fixed per rank and statement, as a code
// path would), and ranks skip statements at random.
namespace {

// kinds > 0: rank r orders and skips as rank r % kinds does, so that ranks are alike in groups.
tr::TraceSet random_program(std::mt19937& rng, int32_t n, bool reorder, bool skip_all_but_0,
                            int32_t kinds = 0) {
  const auto like = [kinds](int32_t r) { return static_cast<size_t>(kinds > 0 ? r % kinds : r); };
  std::uniform_int_distribution<int> kind(0, 5), coin(0, 3), statements(3, 9);
  std::vector<int> program(static_cast<size_t>(statements(rng)));
  for (int& k : program) k = kind(rng);
  std::vector<std::vector<bool>> flipped(static_cast<size_t>(n)), skips(static_cast<size_t>(n));
  for (auto& f : flipped)
    for (size_t s = 0; s < program.size(); ++s) f.push_back(reorder && coin(rng) < 2);
  for (int32_t r = 0; r < n; ++r)
    for (size_t s = 0; s < program.size(); ++s)
      skips[static_cast<size_t>(r)].push_back(program[s] >= 2 && r != 0 && coin(rng) == 0);
  auto ranks = world(n);
  for (int32_t r = 0; r < n; ++r) {
    ranks[static_cast<size_t>(r)].add(Fn::MPI_Init);
    if (r < 2) ranks[static_cast<size_t>(r)].comm_define(2, {0, 1});
  }
  for (int it = 0; it < 4; ++it)
    for (size_t s = 0; s < program.size(); ++s)
      for (int32_t r = 0; r < n; ++r) {
        RankBuilder& b = ranks[static_cast<size_t>(r)];
        // Collectives are made by every member of their communicator (comm 2: ranks 0, 1).
        const bool skip = program[s] == 5                  ? r >= 2
                          : skip_all_but_0 || kinds > 0 ? skips[like(r)][s]
                                                        : program[s] >= 2 && coin(rng) == 0;
        if (skip) continue;
        const bool flip = flipped[like(r)][s];
        const int32_t right = mod(r + 1, n), left = mod(r - 1, n);
        switch (program[s]) {
          case 0: b.collective(Fn::MPI_Allreduce, it + 1, tr::kNoRank, tr::Op::sum); break;
          case 1: b.collective(Fn::MPI_Bcast, 3, static_cast<int32_t>(s) % n); break;
          case 2:
            if (flip) { b.send(right, it); b.recv(left, it); }
            else { b.recv(left, it); b.send(right, it); }
            break;
          case 3: {
            const uint32_t q = b.irecv(left, it, it + 1);
            if (flip) { b.complete(Fn::MPI_Wait, {q}); b.send(right, it); }
            else { b.send(right, it); b.complete(Fn::MPI_Wait, {q}); }
            break;
          }
          case 4: {
            if (flip) {
              const uint32_t a = b.isend(right, it), c = b.irecv(left, it);
              b.complete(Fn::MPI_Waitall, {a, c});
            } else {
              const uint32_t c = b.irecv(left, it), a = b.isend(right, it);
              b.complete(Fn::MPI_Waitall, {c, a});
            }
            break;
          }
          default: b.collective(Fn::MPI_Barrier, 0, tr::kNoRank, tr::Op::none, 2); break;
        }
      }
  for (auto& b : ranks) b.add(Fn::MPI_Finalize);
  return trace_set(ranks);
}

}  // namespace

TEST_CASE("property: every record is in exactly one event, whatever the skips and orders") {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 300; ++trial) {
    CAPTURE(trial);
    const int32_t n = 2 + trial % 7;
    const tr::TraceSet set = random_program(rng, n, trial % 2 == 0, false);
    const mg::MergedTrace m = merged(set, nullptr, trial % 5 == 0 ? 3 : 64);
    CHECK(m.events.size() >= busiest(set));
  }
}

TEST_CASE("property: ranks that only skip calls merge to the busiest rank's length") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    const tr::TraceSet set = random_program(rng, 2 + trial % 7, false, true);
    const mg::MergedTrace m = merged(set);
    CHECK(m.events.size() == busiest(set));
  }
}

// Ranks in a few kinds, each kind with its own skips and orders: the merge aligns each group
// of alike ranks as one, and gives what aligning them one by one gives (merged() checks it).
TEST_CASE("property: ranks alike in groups merge as the ranks one by one do") {
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    const int32_t n = 3 + trial % 22, kinds = 1 + trial % 4;
    const tr::TraceSet set = random_program(rng, n, trial % 2 == 0, false, kinds);
    const mg::MergedTrace m = merged(set, nullptr, trial % 5 == 0 ? 3 : 64);
    CHECK(m.events.size() >= busiest(set));
  }
}

// With order differences too, Algorithm 1's rounds can be cut differently on two ranks (two
// statements in a row that end and begin with a send to the same neighbour look like one
// exchange with two sends), and the merge is then a little longer than the busiest rank.
TEST_CASE("property: ranks that skip calls and order exchanges differently merge nearly tight") {
  std::mt19937 rng(99);
  size_t merged_events = 0, busiest_events = 0, tight = 0;
  const int trials = 200;
  for (int trial = 0; trial < trials; ++trial) {
    CAPTURE(trial);
    const tr::TraceSet set = random_program(rng, 2 + trial % 7, true, true);
    const mg::MergedTrace m = merged(set);
    merged_events += m.events.size();
    busiest_events += busiest(set);
    tight += m.events.size() == busiest(set);
  }
  MESSAGE("tight in " << tight << " of " << trials << ", " << merged_events << " events for "
                      << busiest_events << " on the busiest ranks");
  CHECK(tight >= trials * 4 / 5);
  CHECK(merged_events <= busiest_events + busiest_events / 32);
}

// ---- replies (merge::reply_records) ----------------------------------------------------------

namespace {

// Rank 0 serves ranks 1..n-1: `rounds` x per worker (Recv from any, Send to `answer(source,
// k)`); a worker: `rounds` x (Send to 0, Recv from 0). Arrivals rotate from round to round.
tr::TraceSet served(int32_t n, int rounds, const std::function<int32_t(int32_t, int)>& answer) {
  auto w = world(n);
  for (auto& b : w) b.add(Fn::MPI_Init);
  int k = 0;
  for (int round = 0; round < rounds; ++round)
    for (int32_t i = 1; i < n; ++i, ++k) {
      const int32_t source = 1 + (i - 1 + round) % (n - 1);
      w[0].recv_any(source, 2, 16);
      w[0].send(answer(source, k), 1, 64);
    }
  for (int32_t r = 1; r < n; ++r)
    for (int round = 0; round < rounds; ++round) {
      w[static_cast<size_t>(r)].send(0, 2, 16);
      w[static_cast<size_t>(r)].recv(0, 1, 64);
    }
  for (auto& b : w) b.add(Fn::MPI_Finalize);
  return trace_set(w);
}

}  // namespace

TEST_CASE("replies: a master's answers to whoever reported are one statement, so its rounds fold") {
  const tr::TraceSet set = served(8, 20, [](int32_t source, int) { return source; });
  const std::vector<uint32_t> replies = mg::reply_records(set.ranks[0]);
  CHECK(replies.size() == 7 * 20);
  for (uint32_t i : replies) CHECK(set.ranks[0].records[i].function == static_cast<uint16_t>(Fn::MPI_Send));
  CHECK(mg::reply_records(set.ranks[3]).empty());  // a worker sends to its master alone
  const mg::MergedTrace m = merged(set);
  CHECK(m.replies[0] == replies);
  // The master's part of every answer is "reply", whoever it went to: its symbols differ only
  // by which workers' sends the merge put beside it, not by the 7 destinations.
  std::vector<mg::Symbol> answers;
  for (const mg::Event& e : m.events)
    for (const mg::Part& p : m.parts_of(e))
      if (p.rank == 0 && m.is_reply(0, p.record)) answers.push_back(e.symbol);
  REQUIRE(answers.size() == replies.size());
  for (mg::Symbol s : answers) CHECK(m.symbol_key[s].find("peers=[reply") != std::string::npos);
  std::sort(answers.begin(), answers.end());
  answers.erase(std::unique(answers.begin(), answers.end()), answers.end());
  CHECK(answers.size() <= 2);  // with workers beside it, and alone
}

TEST_CASE("replies: a send that only sometimes goes to the last source keeps its peer") {
  // A pipeline: after each wildcard receive, rank 0 sends on to rank 1, which is the source one
  // time in seven; and a master with a single worker answers always the same rank.
  CHECK(mg::reply_records(served(8, 20, [](int32_t, int) { return 1; }).ranks[0]).empty());
  CHECK(mg::reply_records(served(2, 20, [](int32_t source, int) { return source; }).ranks[0]).empty());
  // Answers that go to the source but for one send in five: not a reply either (a round robin
  // that meets the source now and then would look like this).
  const auto mostly = [](int32_t source, int k) { return k % 5 == 4 ? 1 + source % 7 : source; };
  CHECK(mg::reply_records(served(8, 20, mostly).ranks[0]).empty());
}

TEST_CASE("replies: a stop sent after the last answer, to the last worker that reported, is no reply") {
  // The master answers 7 x 20 requests, then stops every worker, starting with the one that
  // reported last: that stop also goes to the last source, right after its answer, but it is
  // a second send to one request, and its peer is kept (in the skeleton it must reach that
  // worker, not whoever reports last there).
  tr::TraceSet set = served(8, 20, [](int32_t source, int) { return source; });
  auto& master = set.ranks[0];
  const int32_t last = master.records[master.records.size() - 3].source;  // the last Recv's
  REQUIRE(last >= 1);
  std::vector<RankBuilder> stops = world(8);
  for (int32_t w = 0; w < 7; ++w) stops[0].send(1 + (last - 1 + w) % 7, 9, 0);
  tr::RankTrace tail = stops[0].take();
  const tr::Record finalize = master.records.back();
  master.records.pop_back();
  for (tr::Record r : tail.records) {
    r.t_start += finalize.t_start;
    r.t_end += finalize.t_start;
    master.records.push_back(r);
  }
  master.records.push_back(finalize);
  const std::vector<uint32_t> replies = mg::reply_records(master);
  CHECK(replies.size() == 7 * 20);
  for (uint32_t i : replies) CHECK(master.records[i].tag == 1);  // answers, not stops
}

TEST_CASE("replies: answers that come in varying numbers are no replies") {
  // Two answers to some requests, one to others: the skeleton's answers would follow the
  // trace's counts, not the workers'.
  auto w = world(4);
  w[0].add(Fn::MPI_Init);
  for (int k = 0; k < 30; ++k) {
    const int32_t source = 1 + k % 3;
    w[0].recv_any(source, 2, 16);
    w[0].send(source, 1, 64);
    if (k % 2 == 0) w[0].send(source, 1, 64);
  }
  w[0].add(Fn::MPI_Finalize);
  CHECK(mg::reply_records(w[0].trace()).empty());
}

TEST_CASE("replies: Algorithm 1 keeps a reply after the receive it answers") {
  // Receive with MPI_ANY_TAG, answer with the request's own tag: one exchange, which the
  // canonical order would sort sends first.
  auto w = world(4);
  w[0].add(Fn::MPI_Init);
  for (int k = 0; k < 30; ++k) {
    const int32_t source = 1 + (k * 7) % 3;
    tr::Record& r = w[0].recv_any(source, 5, 16);
    r.flags |= tr::kFlagAnyTag;
    w[0].send(source, 5, 64);
  }
  w[0].add(Fn::MPI_Finalize);
  for (int32_t r = 1; r < 4; ++r) {  // each worker: its requests and their answers
    w[static_cast<size_t>(r)].add(Fn::MPI_Init);
    for (int k = 0; k < 10; ++k) {
      w[static_cast<size_t>(r)].send(0, 5, 16);
      w[static_cast<size_t>(r)].recv(0, 5, 64);
    }
    w[static_cast<size_t>(r)].add(Fn::MPI_Finalize);
  }
  const tr::TraceSet set = trace_set(w);
  REQUIRE(mg::reply_records(set.ranks[0]).size() == 30);
  uint64_t moved = 0;
  mg::normalized_order(set.ranks[0], &moved);
  CHECK(moved == 0);
  // In the merged trace too: the master's calls come in their call order.
  const mg::MergedTrace m = merged(set);
  uint32_t previous = 0;
  bool in_order = true;
  for (const mg::Event& e : m.events)
    for (const mg::Part& p : m.parts_of(e))
      if (p.rank == 0) {
        in_order = in_order && p.record >= previous;
        previous = p.record;
      }
  CHECK(in_order);
}

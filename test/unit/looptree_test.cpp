// The loop tree over a hand-built merged trace and folding: rules for sizes and tags that vary
// with the iteration, loop-entry (S1) gaps kept apart from in-loop gaps, and exact time sums;
// and over a merged trace of 150 ranks, walked in blocks of ranks.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "compress/compress.h"
#include "looptree/looptree.h"
#include "looptree/rule.h"
#include "merge/merge.h"
#include "trace/functions.h"
#include "trace_builder.h"

namespace lt = pskel::looptree;
namespace tr = pskel::trace;
using pskel::compress::Node;

TEST_CASE("rule: constant, linear, periodic and table values are recognised") {
  auto fit = [](std::vector<int64_t> values) {
    lt::RuleBuilder b;
    for (int64_t v : values) b.add(v);
    lt::Rule rule = b.build();
    for (size_t i = 0; i < values.size(); ++i) CHECK(rule.at(i) == values[i]);
    return rule;
  };
  CHECK(fit({8, 8, 8, 8}).kind == lt::Rule::Kind::constant);
  CHECK(fit({5}).kind == lt::Rule::Kind::constant);
  const lt::Rule linear = fit({100, 200, 300, 400});
  CHECK(linear.kind == lt::Rule::Kind::linear);
  CHECK(linear.step == 100);
  CHECK(linear.at(9) == 1000);
  const lt::Rule periodic = fit({1, 2, 3, 1, 2, 3, 1});
  CHECK(periodic.kind == lt::Rule::Kind::periodic);
  CHECK(periodic.values == std::vector<int64_t>{1, 2, 3});
  const lt::Rule table = fit({5, 9, 2, 7, 7});
  CHECK(table.kind == lt::Rule::Kind::table);
  CHECK(table.values.size() == 5);
  // A linear start that breaks late keeps every value.
  CHECK(fit({1, 2, 3, 4, 5, 6, 0}).kind == lt::Rule::Kind::table);
}

TEST_CASE("rule: smallest period") {
  const std::vector<int64_t> a{4, 4, 4};
  const std::vector<int64_t> b{1, 2, 1, 2, 1};
  const std::vector<int64_t> c{1, 2, 3};
  CHECK(lt::smallest_period(a) == 1);
  CHECK(lt::smallest_period(b) == 2);
  CHECK(lt::smallest_period(c) == 3);
  CHECK(lt::smallest_period(std::span<const int64_t>{}) == 0);
}

TEST_CASE("stat: mean, spread, min and max") {
  lt::Stat s;
  for (int64_t x : {2, 4, 4, 4, 5, 5, 7, 9}) s.add(x);
  CHECK(s.n == 8);
  CHECK(s.mean == doctest::Approx(5.0));
  CHECK(s.stddev() == doctest::Approx(std::sqrt(32.0 / 7.0)));
  CHECK(s.min == 2);
  CHECK(s.max == 9);
  CHECK(s.sum() == doctest::Approx(40.0));
}

namespace {

// Two ranks that run the same calls; rank r's i-th call starts after a gap of
// gap(r, i) = 10 * (i + 1) + r ns and takes comm(r, i) = i + 1 ns. Every event is shared by
// both ranks, and its symbol is given.
struct Fixture {
  tr::TraceSet trace;
  pskel::merge::MergedTrace merged;

  static int64_t gap(int r, size_t i) { return 10 * static_cast<int64_t>(i + 1) + r; }
  static int64_t comm(size_t i) { return static_cast<int64_t>(i + 1); }

  Fixture(const std::vector<pskel::merge::Symbol>& symbols, const std::vector<tr::FunctionId>& fn) {
    constexpr int kRanks = 2;
    trace.ranks.resize(kRanks);
    merged.world_size = kRanks;
    for (int r = 0; r < kRanks; ++r) {
      int64_t t = 0;
      for (size_t i = 0; i < symbols.size(); ++i) {
        tr::Record rec{};
        rec.function = static_cast<uint16_t>(fn[symbols[i]]);
        rec.comm = tr::kCommWorld;
        const bool p2p = fn[symbols[i]] == tr::FunctionId::MPI_Send ||
                         fn[symbols[i]] == tr::FunctionId::MPI_Recv;
        rec.peer = p2p ? 1 - r : tr::kNoRank;
        rec.source = tr::kNoRank;
        rec.root = tr::kNoRank;
        rec.type_size = 8;
        rec.count = 1;
        rec.tag = 0;
        rec.t_start = t + gap(r, i);
        rec.t_end = rec.t_start + comm(i);
        t = rec.t_end;
        trace.ranks[static_cast<size_t>(r)].records.push_back(rec);
      }
    }
    for (size_t i = 0; i < symbols.size(); ++i) {
      merged.events.push_back({symbols[i], static_cast<uint16_t>(fn[symbols[i]]),
                               static_cast<uint32_t>(merged.parts.size()), kRanks});
      for (int r = 0; r < kRanks; ++r) merged.parts.push_back({r, static_cast<uint32_t>(i)});
    }
    merged.symbol_key.assign(fn.size(), "");
  }
  tr::Record& record(int r, size_t i) { return trace.ranks[static_cast<size_t>(r)].records[i]; }
};

const std::vector<tr::FunctionId> kFunctions = {tr::FunctionId::MPI_Init, tr::FunctionId::MPI_Send,
                                                tr::FunctionId::MPI_Recv, tr::FunctionId::MPI_Finalize};

double traced_time(const Fixture& f, int r) {
  double ns = 0;
  for (size_t i = 0; i < f.trace.ranks[static_cast<size_t>(r)].records.size(); ++i)
    ns += static_cast<double>(Fixture::gap(r, i) + Fixture::comm(i));
  return ns;
}

}  // namespace

TEST_CASE("looptree: a loop keeps its entry gap apart and sums stay exact") {
  // 0 (1 2)^4 3
  Fixture f({0, 1, 2, 1, 2, 1, 2, 1, 2, 3}, kFunctions);
  // Message sizes grow with the iteration; tags alternate.
  for (int r = 0; r < 2; ++r)
    for (size_t it = 0; it < 4; ++it) {
      f.record(r, 1 + 2 * it).count = static_cast<int64_t>(10 * (it + 1));
      f.record(r, 2 + 2 * it).tag = static_cast<int32_t>(it % 2);
    }
  const pskel::compress::Sequence folded = {
      Node::leaf(0), Node::loop(4, {Node::leaf(1), Node::leaf(2)}), Node::leaf(3)};
  const lt::LoopTree tree = lt::build(f.trace, f.merged, folded);

  REQUIRE(tree.items.size() == 3);
  CHECK(lt::compressed_length(tree) == 4);
  REQUIRE(tree.items[1].is_loop());
  const lt::Loop& loop = tree.items[1].loop();
  CHECK(loop.iterations == 4);
  CHECK(loop.executions == 1);
  REQUIRE(loop.ranks.size() == 2);
  // S1: the gap before the loop's first call (record 1) is the loop's entry gap.
  CHECK(loop.ranks[1].entry_gap_ns.n == 1);
  CHECK(loop.ranks[1].entry_gap_ns.mean == doctest::Approx(Fixture::gap(1, 1)));
  // In-loop gaps of the first body event: iterations 2..4 (records 3, 5, 7).
  const lt::Event& send = loop.body[0].event();
  CHECK(send.instances == 4);
  CHECK(send.ranks[0].gap_ns.n == 3);
  CHECK(send.ranks[0].gap_ns.mean == doctest::Approx((40 + 60 + 80) / 3.0));
  CHECK(send.ranks[0].gap_ns.min == 40);
  CHECK(send.ranks[0].gap_ns.max == 80);
  CHECK(send.ranks[0].send_bytes.kind == lt::Rule::Kind::linear);
  CHECK(send.ranks[0].send_bytes.at(0) == 80);
  CHECK(send.ranks[0].send_bytes.at(3) == 320);
  const lt::Event& recv = loop.body[1].event();
  CHECK(recv.ranks[1].gap_ns.n == 4);
  CHECK(recv.ranks[1].tag.kind == lt::Rule::Kind::periodic);
  CHECK(recv.ranks[1].tag.values == std::vector<int64_t>{0, 1});
  // E3: the gap after the loop is the next event's own gap.
  CHECK(tree.items[2].event().ranks[0].gap_ns.mean == doctest::Approx(Fixture::gap(0, 9)));
  // Per-iteration time: iterations 2..4 each take two gaps + two calls.
  CHECK(loop.ranks[0].iteration_ns.n == 4);
  CHECK(loop.ranks[0].iteration_ns.max ==
        Fixture::gap(0, 7) + Fixture::comm(7) + Fixture::gap(0, 8) + Fixture::comm(8));
  for (int r = 0; r < 2; ++r) CHECK(lt::rank_time_ns(tree, r) == doctest::Approx(traced_time(f, r)));
  CHECK(lt::to_string(tree) == "MPI_Init ( MPI_Send(r0:+1 r1:-1) MPI_Recv(r0:+1 r1:-1) )^4 MPI_Finalize");
}

TEST_CASE("looptree: a nested loop that starts its parent's body takes the entry gap") {
  // 0 ( (1)^2 2 )^3 3
  Fixture f({0, 1, 1, 2, 1, 1, 2, 1, 1, 2, 3}, kFunctions);
  const pskel::compress::Sequence folded = {
      Node::leaf(0), Node::loop(3, {Node::loop(2, {Node::leaf(1)}), Node::leaf(2)}),
      Node::leaf(3)};
  const lt::LoopTree tree = lt::build(f.trace, f.merged, folded);
  const lt::Loop& outer = tree.items[1].loop();
  const lt::Loop& inner = outer.body[0].loop();
  CHECK(inner.executions == 3);
  // Every execution of the inner loop has one entry sample; the outer loop's first call is
  // the inner loop's, so the innermost loop takes it.
  CHECK(inner.ranks[0].entry_gap_ns.n == 3);
  CHECK(inner.ranks[0].entry_gap_ns.sum() ==
        doctest::Approx(Fixture::gap(0, 1) + Fixture::gap(0, 4) + Fixture::gap(0, 7)));
  CHECK(outer.ranks[0].entry_gap_ns.n == 0);
  CHECK(inner.body[0].event().ranks[0].gap_ns.n == 3);
  const lt::MainLoop main = lt::main_loop(tree);
  REQUIRE(main.loop == &outer);
  CHECK(main.events_per_iteration == 3);
  CHECK(main.covered_events == 9);
  for (int r = 0; r < 2; ++r) CHECK(lt::rank_time_ns(tree, r) == doctest::Approx(traced_time(f, r)));
}

TEST_CASE("looptree: wildcard receives show as any") {
  Fixture f({0, 2, 3}, kFunctions);
  for (int r = 0; r < 2; ++r) {
    f.record(r, 1).peer = tr::kNoRank;
    f.record(r, 1).source = 1 - r;
    f.record(r, 1).flags = tr::kFlagAnySource;
  }
  const lt::LoopTree tree =
      lt::build(f.trace, f.merged, {Node::leaf(0), Node::leaf(2), Node::leaf(3)});
  CHECK(tree.items[1].event().ranks[0].source == tr::kAnySource);
  CHECK(lt::describe(tree.items[1].event()) == "MPI_Recv(any)");
}

TEST_CASE("looptree: a job of several blocks of ranks gets every rank's facts, as one block does") {
  // 150 ranks, walked in blocks of 64 (the third holds 22): all make 20 barriers; ranks 100-149
  // then send 5 messages, a loop that the first block has no rank in and passes over. Rank r
  // computes 1000 + r ns before every call, and each call takes 10 ns.
  constexpr int kRanks = 150;
  std::vector<pskel::test::RankBuilder> w = pskel::test::world(kRanks);
  for (int32_t r = 0; r < kRanks; ++r) {
    w[r].timing(1000 + r, 10);
    w[r].add(pskel::test::Fn::MPI_Init);
    for (int i = 0; i < 20; ++i) w[r].collective(pskel::test::Fn::MPI_Barrier);
    if (r >= 100)
      for (int i = 0; i < 5; ++i) w[r].send(0);
    w[r].add(pskel::test::Fn::MPI_Finalize);
  }
  const tr::TraceSet trace = pskel::test::trace_set(w);
  const pskel::merge::MergedTrace merged = pskel::merge::merge(trace);
  const lt::LoopTree tree = lt::build(trace, merged, pskel::compress::compress(merged.symbols()));

  const lt::Loop* barriers = nullptr;
  const lt::Loop* sends = nullptr;
  const lt::Event* finalize = nullptr;
  for (const lt::Item& item : tree.items) {
    if (!item.is_loop()) {
      if (item.event().function == static_cast<uint16_t>(tr::FunctionId::MPI_Finalize))
        finalize = &item.event();
      continue;
    }
    const lt::Event& body = item.loop().body.at(0).event();
    (body.function == static_cast<uint16_t>(tr::FunctionId::MPI_Barrier) ? barriers : sends) =
        &item.loop();
  }
  REQUIRE(barriers != nullptr);
  REQUIRE(sends != nullptr);
  REQUIRE(finalize != nullptr);
  CHECK(barriers->iterations == 20);
  CHECK(sends->iterations == 5);
  CHECK(finalize->instances == 1);
  CHECK(finalize->ranks.size() == kRanks);

  const lt::Event& barrier = barriers->body.at(0).event();
  CHECK(barrier.instances == 20);
  REQUIRE(barrier.ranks.size() == kRanks);
  REQUIRE(barriers->ranks.size() == kRanks);
  for (int32_t r = 0; r < kRanks; ++r) {
    CAPTURE(r);
    const lt::RankCall* call = barrier.call_of(r);
    REQUIRE(call != nullptr);
    CHECK(call->gap_ns.n == 19);  // the first instance's gap is the loop's entry gap
    CHECK(call->gap_ns.mean == doctest::Approx(1000 + r));
    CHECK(call->comm_ns.mean == doctest::Approx(10));
    CHECK(call->sample.rank == r);
    CHECK(call->sample.record == 1);  // the first barrier, after MPI_Init
    const lt::RankLoop* loop = barriers->timing_of(r);
    REQUIRE(loop != nullptr);
    CHECK(loop->entry_gap_ns.n == 1);
    CHECK(loop->iteration_ns.n == 20);
    CHECK(loop->iteration_ns.mean == doctest::Approx(1000 + r + 10));
  }

  const lt::Event& send = sends->body.at(0).event();
  CHECK(send.instances == 5);  // counted by the first block, which has none of its ranks
  REQUIRE(send.ranks.size() == 50);
  CHECK(sends->ranks.front().rank == 100);
  for (int32_t r = 100; r < kRanks; ++r) {
    CAPTURE(r);
    const lt::RankCall* call = send.call_of(r);
    REQUIRE(call != nullptr);
    CHECK(call->gap_ns.n == 4);
    CHECK(call->sample.record == 21);  // the first send, after Init and 20 barriers
    CHECK(sends->timing_of(r)->iteration_ns.n == 5);
  }
  CHECK(send.call_of(99) == nullptr);
}

namespace {

void require_same_events(const lt::Event& a, const lt::Event& b) {
  REQUIRE(a.id == b.id);
  REQUIRE(a.symbol == b.symbol);
  REQUIRE(a.function == b.function);
  REQUIRE(a.comm == b.comm);
  REQUIRE(a.op == b.op);
  REQUIRE(a.flags == b.flags);
  REQUIRE(a.instances == b.instances);
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (size_t j = 0; j < a.ranks.size(); ++j) {
    const lt::RankCall& x = a.ranks[j];
    const lt::RankCall& y = b.ranks[j];
    CAPTURE(x.rank);
    REQUIRE(x.rank == y.rank);
    REQUIRE(x.peer == y.peer);
    REQUIRE(x.source == y.source);
    REQUIRE(x.root == y.root);
    REQUIRE(x.send_bytes == y.send_bytes);
    REQUIRE(x.recv_bytes == y.recv_bytes);
    REQUIRE(x.tag == y.tag);
    REQUIRE(x.recv_tag == y.recv_tag);
    REQUIRE(x.comm_ns.n == y.comm_ns.n);
    REQUIRE(x.comm_ns.sum() == y.comm_ns.sum());
    REQUIRE(x.gap_ns.n == y.gap_ns.n);
    REQUIRE(x.gap_ns.sum() == y.gap_ns.sum());
    REQUIRE(x.gap_typical.mean == y.gap_typical.mean);
    REQUIRE(x.gap_typical.blocks == y.gap_typical.blocks);
    REQUIRE(x.sample.rank == y.sample.rank);
    REQUIRE(x.sample.record == y.sample.record);
  }
}

void require_same_items(const std::vector<lt::Item>& a, const std::vector<lt::Item>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].is_loop() == b[i].is_loop());
    if (!a[i].is_loop()) {
      require_same_events(a[i].event(), b[i].event());
      continue;
    }
    const lt::Loop& x = a[i].loop();
    const lt::Loop& y = b[i].loop();
    REQUIRE(x.iterations == y.iterations);
    REQUIRE(x.executions == y.executions);
    REQUIRE(x.ranks.size() == y.ranks.size());
    for (size_t j = 0; j < x.ranks.size(); ++j) {
      REQUIRE(x.ranks[j].rank == y.ranks[j].rank);
      REQUIRE(x.ranks[j].entry_gap_ns.sum() == y.ranks[j].entry_gap_ns.sum());
      REQUIRE(x.ranks[j].iteration_ns.n == y.ranks[j].iteration_ns.n);
      REQUIRE(x.ranks[j].iteration_ns.sum() == y.ranks[j].iteration_ns.sum());
    }
    require_same_items(x.body, y.body);
  }
}

}  // namespace

// `pskel compress` reads the trace twice: the merge's ranks (merge::Merger) and then the loop
// tree's (TreeBuilder), each given one at a time and freed once its window is done. Over 300
// ranks (windows of 64 per CPU, and the merge's own), a ring of non-blocking sends whose sizes
// grow, a wildcard receive on rank 0 and a reduce: the tree build() makes from the whole set.
TEST_CASE("looptree: ranks given one at a time, freed once walked, make build()'s tree") {
  constexpr int kRanks = 300;
  std::vector<pskel::test::RankBuilder> w = pskel::test::world(kRanks);
  for (int32_t r = 0; r < kRanks; ++r) {
    w[r].timing(1000 + 7 * r, 10 + r % 5);
    w[r].add(pskel::test::Fn::MPI_Init);
    for (int i = 0; i < 30; ++i) {
      const uint32_t recv = w[r].irecv((r + kRanks - 1) % kRanks, i % 3, 100 + i);
      const uint32_t send = w[r].isend((r + 1) % kRanks, i % 3, 100 + i);
      w[r].complete(pskel::test::Fn::MPI_Waitall, {recv, send});
      w[r].collective(pskel::test::Fn::MPI_Reduce, 8, i % kRanks, tr::Op::sum);
    }
    if (r == 0) {
      for (int32_t from = 1; from < 4; ++from) w[r].recv_any(from);
    } else if (r < 4) {
      w[r].send(0);
    }
    w[r].add(pskel::test::Fn::MPI_Finalize);
  }
  const tr::TraceSet trace = pskel::test::trace_set(w);
  pskel::merge::Merger merger(kRanks);
  for (const tr::RankTrace& rank : trace.ranks) merger.add(tr::RankTrace(rank));
  const pskel::merge::MergedTrace merged = merger.finish();
  const pskel::compress::Sequence folded = pskel::compress::compress(merged.symbols());
  const lt::LoopTree whole = lt::build(trace, pskel::merge::merge(trace), folded);

  lt::TreeBuilder builder(merged, folded);
  for (const tr::RankTrace& rank : trace.ranks) builder.add(tr::RankTrace(rank));
  const lt::LoopTree given = builder.finish();
  CHECK(lt::to_string(given) == lt::to_string(whole));
  CHECK(given.merged_events == whole.merged_events);
  require_same_items(given.items, whole.items);
  const lt::MainLoop main = lt::main_loop(given);
  REQUIRE(main.loop != nullptr);
  CHECK(main.loop->iterations == 30);
  // What the records said, read while each window was walked: peers, sizes, roots, gaps.
  REQUIRE(main.loop->body.size() == 4);
  const lt::Event& irecv = main.loop->body[0].event();
  const lt::Event& isend = main.loop->body[1].event();
  const lt::Event& reduce = main.loop->body[3].event();
  CHECK(lt::describe(isend).starts_with("MPI_Isend(r0:+1 r1:+1"));
  REQUIRE(isend.ranks.size() == kRanks);
  for (int32_t r : {0, 63, 64, 200, kRanks - 1}) {
    CAPTURE(r);
    const lt::RankCall& send = isend.ranks[static_cast<size_t>(r)];
    CHECK(send.peer == (r + 1) % kRanks);
    CHECK(send.send_bytes.kind == lt::Rule::Kind::linear);
    CHECK(send.send_bytes.at(0) == 800);
    CHECK(send.send_bytes.at(29) == 8 * 129);
    CHECK(send.tag.kind == lt::Rule::Kind::periodic);
    CHECK(send.gap_ns.mean == doctest::Approx(1000 + 7 * r));
    CHECK(irecv.ranks[static_cast<size_t>(r)].source == (r + kRanks - 1) % kRanks);
    CHECK(reduce.ranks[static_cast<size_t>(r)].root.kind == lt::Rule::Kind::linear);
    CHECK(reduce.ranks[static_cast<size_t>(r)].root.at(29) == 29);
  }
  CHECK(reduce.op == static_cast<uint8_t>(tr::Op::sum));
  CHECK(lt::describe(given.items.back().event()) == "MPI_Finalize");
  CHECK(lt::to_string(given).find("MPI_Recv(any)") != std::string::npos);

  lt::TreeBuilder short_of_one(merged, folded);
  for (int32_t r = 0; r + 1 < kRanks; ++r) short_of_one.add(trace.ranks[static_cast<size_t>(r)]);
  CHECK_THROWS_AS(short_of_one.finish(), std::logic_error);
}

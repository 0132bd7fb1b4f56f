// Loop compression (Algorithm 4) end to end: the seed's examples and known optima, nested loops
// and tails, the guarantees of compress.h on thousands of random and structured strings, and
// the tree helpers (expand, lengths, to_string).
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "compress/compress.h"
#include "compress_test_support.h"

using namespace pskel::test;
using cz::Node;
using cz::Sequence;

namespace doctest {
template <>
struct StringMaker<Sequence> {
  static String convert(const Sequence& s) {
    return cz::to_string(s, [](cz::Symbol x) { return std::to_string(x); }).c_str();
  }
};
}  // namespace doctest

namespace {

// Letters as in letters(): 'A' is 0.
std::string text_of(const Sequence& tree) {
  return cz::to_string(tree, [](cz::Symbol s) { return std::string(1, static_cast<char>('A' + s)); });
}

Node leaf(char c) { return Node::leaf(static_cast<cz::Symbol>(c - 'A')); }

// A random loop program whose every leaf is a symbol of its own: the string it expands to has
// exactly its loops as repetitions, so the compression must give the program back.
Sequence random_program(Random& rng, int depth, cz::Symbol& next_symbol) {
  Sequence seq;
  const int items = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < items; ++i) {
    if (depth > 0 && rng.below(2)) {
      Sequence body = random_program(rng, depth - 1, next_symbol);
      // A body that is one loop would fold into that loop: ((A)^2)^3 is (A)^6.
      if (body.size() == 1 && body[0].is_loop()) body.push_back(Node::leaf(next_symbol++));
      seq.push_back(Node::loop(2 + rng.below(5), std::move(body)));
    } else {
      seq.push_back(Node::leaf(next_symbol++));
    }
  }
  return seq;
}

// A random loop program over a small alphabet: loops, tails and noise that collide.
std::vector<cz::Symbol> random_nested_text(Random& rng, int depth) {
  std::vector<cz::Symbol> out;
  const int items = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < items; ++i) {
    if (depth > 0 && rng.below(3)) {
      const std::vector<cz::Symbol> body = random_nested_text(rng, depth - 1);
      const std::vector<cz::Symbol> loop = repeat(body, 2 + rng.below(6));
      out.insert(out.end(), loop.begin(), loop.end());
    } else {
      out.push_back(rng.below(4));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("ABCABCABCA folds to (ABC)^3 A, length 4 (seed §3's example)") {
  const Sequence tree = compress_checked(letters("ABCABCABCA"));
  CHECK(text_of(tree) == "( A B C )^3 A");
  CHECK(cz::compressed_length(tree) == 4);
}

TEST_CASE("nested loops come out nested: ((AB)^3 C)^5 has length 3") {
  const Sequence tree = compress_checked(repeat(letters("ABABABC"), 5));
  CHECK(tree == Sequence{Node::loop(5, {Node::loop(3, {leaf('A'), leaf('B')}), leaf('C')})});
  CHECK(cz::compressed_length(tree) == 3);
}

TEST_CASE("((A B)^3 C)^100 with a prefix and a suffix") {
  const Sequence tree =
      compress_checked(concat({letters("XY"), repeat(letters("ABABABC"), 100), letters("Z")}));
  CHECK(text_of(tree) == "X Y ( ( A B )^3 C )^100 Z");
}

TEST_CASE("three levels of nesting: (((AB)^2 C)^3 D)^4") {
  const auto level2 = concat({repeat(concat({repeat(letters("AB"), 2), letters("C")}), 3), letters("D")});
  const Sequence tree = compress_checked(repeat(level2, 4));
  CHECK(text_of(tree) == "( ( ( A B )^2 C )^3 D )^4");
  CHECK(cz::compressed_length(tree) == 4);
}

TEST_CASE("a loop with a tail keeps the tail plain: (ABC)^4 AB has length 5") {
  const Sequence tree = compress_checked(concat({repeat(letters("ABC"), 4), letters("AB")}));
  CHECK(text_of(tree) == "( A B C )^4 A B");
}

TEST_CASE("a nested loop with a tail: ((AB)^3 C)^5 AB has length 5") {
  const Sequence tree = compress_checked(concat({repeat(letters("ABABABC"), 5), letters("AB")}));
  CHECK(text_of(tree) == "( ( A B )^3 C )^5 A B");
}

TEST_CASE("a loop with a prefix: XY (AB)^5 has length 4") {
  CHECK(text_of(compress_checked(concat({letters("XY"), repeat(letters("AB"), 5)}))) ==
        "X Y ( A B )^5");
}

TEST_CASE("empty input, a single symbol, one symbol repeated") {
  CHECK(compress_checked({}).empty());
  CHECK(compress_checked({42}) == Sequence{Node::leaf(42)});
  CHECK(compress_checked(std::vector<cz::Symbol>(1000, 9)) ==
        Sequence{Node::loop(1000, {Node::leaf(9)})});
}

TEST_CASE("runs that overlap the longest one fold in a later round: (AB)^3 A CACAC") {
  cz::CompressStats stats;
  const Sequence tree = cz::compress(letters("ABABABACACAC"), &stats);
  CHECK(text_of(tree) == "( A B )^3 ( A C )^3");
  CHECK(stats.rounds == 3);  // the third finds nothing left to fold
  CHECK(stats.folds == 2);
  check_no_tandem(tree);
}

TEST_CASE("the copies start where they cut no other run: (AB)^50 (C (AB)^3)^100 has length 5") {
  // Leftmost copies would be (ABABABC)^100 starting 6 symbols early, splitting (AB)^50: length 7.
  const auto input = concat({repeat(letters("AB"), 50), repeat(letters("CABABAB"), 100)});
  const Sequence tree = compress_checked(input);
  CHECK(text_of(tree) == "( A B )^50 ( C ( A B )^3 )^100");
}

TEST_CASE("a main loop whose body's end also ends the prologue keeps its inner loops whole") {
  // Prologue "... D E F", body "(AB)^3 C (DE)^3 F": the leftmost copies would start at the
  // prologue's D and cut every (DE)^3 in two.
  const auto body = concat({repeat(letters("AB"), 3), letters("C"), repeat(letters("DE"), 3),
                            letters("F")});
  const Sequence tree = compress_checked(concat({letters("XDEF"), repeat(body, 20)}));
  // "X D E ( F (AB)^3 C (DE)^3 )^20 F" is as short; the leftmost copies would give 12.
  CHECK(cz::compressed_length(tree) == 10);
  CHECK(text_of(tree).find("( D E )^3") != std::string::npos);
}

TEST_CASE("equal loops are one and the same subtree") {
  const Sequence tree = compress_checked(letters("ABABABC ABABABD ABABABE"));
  REQUIRE(tree.size() == 6);
  CHECK(tree[0] == tree[2]);
  CHECK(tree[2] == tree[4]);
  CHECK(tree[0] == Node::loop(3, {leaf('A'), leaf('B')}));
}

TEST_CASE("symbols are the caller's, however large") {
  const std::vector<cz::Symbol> input = {4294967295u, 7, 4294967295u, 7, 4294967295u, 7, 100000000};
  CHECK(compress_checked(input) ==
        Sequence{Node::loop(3, {Node::leaf(4294967295u), Node::leaf(7)}), Node::leaf(100000000)});
}

TEST_CASE("random loop programs with distinct leaves come back exactly") {
  Random rng(31);
  for (int trial = 0; trial < 500; ++trial) {
    cz::Symbol next = 0;
    const Sequence program = random_program(rng, 1 + static_cast<int>(rng.below(3)), next);
    const std::vector<cz::Symbol> input = cz::expand(program);
    CAPTURE(cz::to_string(program, [](cz::Symbol s) { return std::to_string(s); }));
    CHECK(compress_checked(input) == program);
  }
}

TEST_CASE("random strings: expand(compress(x)) == x and no equal adjacent blocks at any level") {
  Random rng(32);
  for (const uint32_t alphabet : {1u, 2u, 3u, 4u, 6u}) {
    for (int trial = 0; trial < 400; ++trial) {
      const std::vector<cz::Symbol> input = random_text(rng, rng.below(trial < 200 ? 30 : 250), alphabet);
      CAPTURE(alphabet);
      CAPTURE(input.size());
      compress_checked(input);
    }
  }
}

TEST_CASE("random nested loops over few symbols: the guarantees hold") {
  Random rng(33);
  for (int trial = 0; trial < 1500; ++trial) {
    const std::vector<cz::Symbol> input = random_nested_text(rng, 1 + static_cast<int>(rng.below(3)));
    CAPTURE(input.size());
    compress_checked(input);
  }
}

TEST_CASE("compression is deterministic") {
  Random rng(34);
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<cz::Symbol> input = random_nested_text(rng, 3);
    cz::CompressStats a, b;
    const Sequence first = cz::compress(input, &a);
    CHECK(cz::compress(input, &b) == first);
    CHECK(a.rounds == b.rounds);
    CHECK(a.folds == b.folds);
    CHECK(a.repetitions_found == b.repetitions_found);
  }
}

TEST_CASE("a long trace of nested loops with noise round-trips and folds well") {
  Random rng(35);
  std::vector<cz::Symbol> body;
  for (int stage = 0; stage < 4; ++stage) {
    const cz::Symbol s = 10 * static_cast<cz::Symbol>(stage);
    const auto inner = repeat({s, s + 1, s + 2}, 40 + stage);
    body.insert(body.end(), inner.begin(), inner.end());
    body.push_back(s + 3);
  }
  std::vector<cz::Symbol> input = random_text(rng, 50, 100);
  for (int iteration = 0; iteration < 300; ++iteration) {
    input.insert(input.end(), body.begin(), body.end());
    if (iteration % 50 == 49) input.push_back(99);  // a checkpoint every 50 iterations
  }
  const Sequence tree = compress_checked(input);
  // ( ( stage loops )^50 checkpoint )^6: 4 * 4 + 1 symbols, plus the 50 of noise at most.
  CHECK(cz::compressed_length(tree) <= 17 + 50);
}

TEST_CASE("to_string writes loops as ( body )^n with the caller's names") {
  const Sequence tree = {Node::leaf(1), Node::loop(10, {Node::leaf(2), Node::leaf(3)}),
                         Node::leaf(4)};
  CHECK(cz::to_string(tree, [](cz::Symbol s) { return std::to_string(s); }) == "1 ( 2 3 )^10 4");
  CHECK(cz::to_string(tree, [](cz::Symbol s) { return "f" + std::to_string(s); }) ==
        "f1 ( f2 f3 )^10 f4");
  CHECK(cz::to_string({}, [](cz::Symbol) { return "x"; }).empty());
}

TEST_CASE("lengths: leaves without loop markers, and the expansion's length without expanding") {
  const Sequence tree = {Node::leaf(1),
                         Node::loop(1000000000000ULL, {Node::leaf(2), Node::loop(1000, {Node::leaf(3)})})};
  CHECK(cz::compressed_length(tree) == 3);
  CHECK(cz::expanded_length(tree) == 1 + 1000000000000ULL * 1001);
  CHECK(cz::compressed_length({}) == 0);
  CHECK(cz::expand({Node::loop(3, {Node::leaf(5), Node::loop(2, {Node::leaf(6)})})}) ==
        std::vector<cz::Symbol>{5, 6, 6, 5, 6, 6, 5, 6, 6});
}

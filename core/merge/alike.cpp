// Ranks that behave alike: the groups Algorithm 2 aligns as one. In an SPMD job most ranks
// make the same calls with the same relative peers (a stencil's interior ranks, all ranks of
// an all-to-all), so the alignment's per-step work falls from the rank count to the group
// count, and a member's per-position arrays are freed as soon as it is grouped.
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "merge/internal.h"
#include "util/parallel.h"

namespace pskel::merge::detail {

namespace {

// What Algorithm 2's pull checks read of a position besides shape, peers and round: its
// channel where the record must be looked at (a Start's comes from its requests' creators), and
// the request ids it creates, starts or completes (a pull may not pass the post of a request
// it completes). Calls f(word) for each.
template <class F>
void for_each_pull_word(const RankView& v, size_t p, int32_t world_size, F&& f) {
  if (role_of(static_cast<uint16_t>(v.shape[p] >> 16)) == Role::start)
    f(pull_channel(v, p, world_size));
  for_each_request(v, v.order[p], [&](int64_t id) { f(static_cast<uint64_t>(id)); });
}

uint64_t mix(uint64_t h, uint64_t word) {
  h = (h ^ word) * 0x9E3779B97F4A7C15ULL;
  return h ^ (h >> 29);
}

// Over the arrays alone: ranks that differ only in their pull words are rare, and
// behave_alike() compares those.
uint64_t alike_hash(const RankView& v) {
  uint64_t h = v.shape.size();
  for (size_t p = 0; p < v.shape.size(); ++p)
    h = mix(mix(h, (uint64_t{v.shape[p]} << 32) | v.round[p]), v.peers[p]);
  return h;
}

bool behave_alike(const RankView& a, const RankView& b, int32_t world_size) {
  if (a.shape != b.shape || a.peers != b.peers || a.round != b.round) return false;
  std::vector<uint64_t> words;
  for (size_t p = 0; p < a.shape.size(); ++p) {
    words.clear();
    for_each_pull_word(a, p, world_size, [&](uint64_t word) { words.push_back(word); });
    size_t i = 0;
    bool same = true;
    for_each_pull_word(b, p, world_size, [&](uint64_t word) {
      same = same && i < words.size() && words[i] == word;
      ++i;
    });
    if (!same || i != words.size()) return false;
  }
  return true;
}

template <class T>
void release(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

// Whether member m's order and part keys are leader's, number for number.
bool same_arrays(const RankView& leader, const RankView& m) {
  return m.order == leader.order && m.part_key == leader.part_key &&
         m.part_keys.same_keys(leader.part_keys);
}

// Leaders of one hash that a rank is compared with, at most: ranks whose arrays are the same
// but whose pull words all differ would otherwise be compared with every earlier one
// (quadratic in a trace made to do it). A rank past them leads a group of its own, which costs
// alignment time, never correctness.
constexpr size_t kMostLeadersCompared = 8;

}  // namespace

void AlikeRanks::add(std::vector<RankView>& views, size_t first, size_t count) {
  // The first rank of a hash leads its first group, so each rank's compare with that rank
  // (none for the rank itself) can be made before any rank of the window is placed.
  std::vector<uint64_t> hash(count);
  util::parallel_for(count, [&](size_t k) { hash[k] = alike_hash(views[first + k]); });
  std::vector<int32_t> first_leader(count, -1);
  std::unordered_map<uint64_t, int32_t> first_in_window;
  for (size_t k = 0; k < count; ++k) {
    const auto known = leaders_by_hash_.find(hash[k]);
    if (known != leaders_by_hash_.end()) {
      first_leader[k] = known->second.front();
      continue;
    }
    const auto [it, fresh] = first_in_window.try_emplace(hash[k], static_cast<int32_t>(first + k));
    if (!fresh) first_leader[k] = it->second;
  }
  // 1: alike, 2: alike with the same order and part keys.
  std::vector<char> alike_first(count, 0);
  util::parallel_for(count, [&](size_t k) {
    if (first_leader[k] < 0) return;
    const RankView& leader = views[static_cast<size_t>(first_leader[k])];
    if (behave_alike(leader, views[first + k], world_size_))
      alike_first[k] = same_arrays(leader, views[first + k]) ? 2 : 1;
  });

  for (size_t k = 0; k < count; ++k) {
    RankView& v = views[first + k];
    std::vector<int32_t>& leaders = leaders_by_hash_[hash[k]];
    int32_t group = -1;
    for (size_t i = 0; i < leaders.size() && i < kMostLeadersCompared && group < 0; ++i) {
      RankView& lead = views[static_cast<size_t>(leaders[i])];
      const bool alike = leaders[i] == first_leader[k] ? alike_first[k] != 0
                                                      : behave_alike(lead, v, world_size_);
      if (alike) group = lead.rank;
    }
    if (group < 0) {
      leaders.push_back(v.rank);
      v.group = v.rank;
      v.members = {v.rank};
      continue;
    }
    v.group = group;
    RankView& leader = views[static_cast<size_t>(group)];
    leader.members.push_back(v.rank);
    release(v.shape);
    release(v.peers);
    release(v.round);
    release(v.creator);
    v.shares_leader_arrays =
        group == first_leader[k] ? alike_first[k] == 2 : same_arrays(leader, v);
    if (v.shares_leader_arrays) {
      release(v.order);
      release(v.part_key);
      v.part_keys = PartKeys();
    }
  }
}

}  // namespace pskel::merge::detail

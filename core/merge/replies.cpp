// Replies: sends that answer the rank's last wildcard receive (a master handing the next task
// to whichever worker reported first). Their destination is whoever came first, so it differs
// from round to round, and as absolute peers no two rounds of a master would be alike: no loop
// folds, and the skeleton would list every call. As "the last wildcard source" they are one
// statement, and the skeleton answers whoever comes first in its own run, as the program did.
//
// A reply answers one request: it is one of the first k sends right after a wildcard MPI_Recv
// (before any other call but a completion) that go to the source that receive resolved to, on
// its communicator (the skeleton keeps one last source, as a rank of it). k is the same after
// every request that is answered, but for at most one (a master whose last answer is followed
// by a stop to that same worker: the stop is not a reply). Where answers come in varying
// numbers, none is a reply: the skeleton's answers would follow the trace's counts, not the
// workers', and a worker could wait for one that never comes. Then, per shape (function,
// communicator): the replies must be most (kReplyShare) of the rank's sends of the shape after
// its first wildcard receive, and reach more than one rank. A send to a fixed rank that is
// sometimes the last source (a pipeline's next stage) keeps its peer, because sending it to
// whoever came last would change the program.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "merge/merge.h"
#include "merge/roles.h"
#include "trace/functions.h"

namespace pskel::merge {

namespace {

constexpr double kReplyShare = 0.9;

struct ShapeTally {
  uint64_t after_wildcard = 0;  // sends of the shape after the rank's first wildcard receive
  uint64_t replies = 0;
  int32_t first_peer = trace::kNoRank;
  bool peers_differ = false;    // the replies reach more than one rank
};

// The sends right after one wildcard receive that go to its source.
struct Window {
  std::vector<uint32_t> answers;
};

}  // namespace

std::vector<uint32_t> reply_records(const trace::RankTrace& rank) {
  using detail::Role;
  const auto shape = [](const trace::Record& r) { return (uint32_t{r.function} << 16) | r.comm; };
  const auto is_wildcard_recv = [](const trace::Record& r) {
    return r.function == static_cast<uint16_t>(trace::FunctionId::MPI_Recv) &&
           (r.flags & trace::kFlagAnySource) != 0;
  };
  // Nothing before the first wildcard receive counts: most ranks have none, and are done here.
  const auto first_wildcard = std::ranges::find_if(rank.records, is_wildcard_recv);
  if (first_wildcard == rank.records.end()) return {};

  std::vector<Window> windows;
  bool open = false;
  uint16_t comm = trace::kNoComm;
  int32_t source = trace::kNoRank;
  std::unordered_map<uint32_t, ShapeTally> tallies;  // by shape
  for (auto i = static_cast<uint32_t>(first_wildcard - rank.records.begin());
       i < rank.records.size(); ++i) {
    const trace::Record& r = rank.records[i];
    const Role role = detail::role_of(r.function);
    const bool send = role == Role::send || role == Role::send_post;
    if (send) ++tallies[shape(r)].after_wildcard;
    if (is_wildcard_recv(r)) {
      open = r.source >= 0;  // unresolved: nothing can be told to answer it
      comm = r.comm;
      source = r.source;
      if (open) windows.emplace_back();
      continue;
    }
    if (role == Role::pseudo || role == Role::completion) continue;
    if (open && send && r.comm == comm && r.peer == source) {
      windows.back().answers.push_back(i);
      continue;
    }
    open = false;
  }

  // k: the fewest answers a request got. At most one request may have more (their extra sends
  // keep their peers); answers that vary more than that are no replies at all.
  std::map<size_t, size_t> requests_by_answers;
  for (const Window& w : windows)
    if (!w.answers.empty()) ++requests_by_answers[w.answers.size()];
  if (requests_by_answers.empty()) return {};
  const size_t k = requests_by_answers.begin()->first;
  const size_t others = [&] {
    size_t n = 0;
    for (const auto& [answers, requests] : requests_by_answers) n += answers == k ? 0 : requests;
    return n;
  }();
  if (others > 1) return {};

  std::vector<uint32_t> replies;
  for (const Window& w : windows)
    for (size_t a = 0; a < w.answers.size() && a < k; ++a) {
      const trace::Record& r = rank.records[w.answers[a]];
      ShapeTally& t = tallies[shape(r)];
      ++t.replies;
      if (t.first_peer == trace::kNoRank) t.first_peer = r.peer;
      t.peers_differ = t.peers_differ || r.peer != t.first_peer;
      replies.push_back(w.answers[a]);
    }
  std::erase_if(replies, [&](uint32_t i) {
    const ShapeTally& t = tallies[shape(rank.records[i])];
    return !t.peers_differ ||
           static_cast<double>(t.replies) < kReplyShare * static_cast<double>(t.after_wildcard);
  });
  return replies;
}

}  // namespace pskel::merge

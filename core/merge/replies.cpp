// Replies: sends that answer the rank's last wildcard receive (a master handing the next task
// to whichever worker reported first). Their destination is whoever came first, so it differs
// from round to round, and as absolute peers no two rounds of a master would be alike: no loop
// folds, and the skeleton would list every call. As "the last wildcard source" they are one
// statement, and the skeleton answers whoever comes first in its own run, as the program did.
//
// A send is a reply only where it goes to the source of the rank's last wildcard MPI_Recv, on
// that receive's communicator (the skeleton keeps one last source, as a rank of it), and the
// rank's sends of its shape (function, communicator) that follow a wildcard receive go there
// nearly always (kReplyShare) and to more than one rank: a send to a fixed rank that is
// sometimes the last source (a pipeline's next stage) keeps its peer, because sending it to
// whoever came last would change the program.
#include <algorithm>
#include <unordered_map>

#include "merge/merge.h"
#include "merge/roles.h"
#include "trace/functions.h"

namespace pskel::merge {

namespace {

constexpr double kReplyShare = 0.9;

struct ShapeTally {
  uint64_t after_wildcard = 0;  // sends of the shape with a wildcard receive before them
  uint64_t answering = 0;       // ... that go to that receive's source
  int32_t first_peer = trace::kNoRank;
  bool peers_differ = false;    // the answering sends reach more than one rank
};

}  // namespace

std::vector<uint32_t> reply_records(const trace::RankTrace& rank) {
  using detail::Role;
  uint16_t last_comm = trace::kNoComm;  // the communicator and source of the last wildcard Recv
  int32_t last_source = trace::kNoRank;
  std::unordered_map<uint32_t, ShapeTally> tallies;    // (function << 16 | comm) -> tally
  std::vector<uint32_t> answering;
  const auto shape = [](const trace::Record& r) { return (uint32_t{r.function} << 16) | r.comm; };
  const auto is_send = [](const trace::Record& r) {
    const Role role = detail::role_of(r.function);
    return role == Role::send || role == Role::send_post;
  };

  for (uint32_t i = 0; i < rank.records.size(); ++i) {
    const trace::Record& r = rank.records[i];
    if (r.function == static_cast<uint16_t>(trace::FunctionId::MPI_Recv) &&
        (r.flags & trace::kFlagAnySource) != 0 && r.source >= 0) {
      last_comm = r.comm;
      last_source = r.source;
      continue;
    }
    if (!is_send(r) || last_source == trace::kNoRank) continue;
    ShapeTally& t = tallies[shape(r)];
    ++t.after_wildcard;
    if (r.comm != last_comm || r.peer != last_source) continue;
    ++t.answering;
    if (t.first_peer == trace::kNoRank) t.first_peer = r.peer;
    t.peers_differ = t.peers_differ || r.peer != t.first_peer;
    answering.push_back(i);
  }

  std::erase_if(answering, [&](uint32_t i) {
    const ShapeTally& t = tallies[shape(rank.records[i])];
    return !t.peers_differ ||
           static_cast<double>(t.answering) < kReplyShare * static_cast<double>(t.after_wildcard);
  });
  return answering;
}

}  // namespace pskel::merge

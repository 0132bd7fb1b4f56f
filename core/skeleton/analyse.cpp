// What each tree event does on each rank beyond looptree.h: communicators matched across ranks,
// requests followed from creation to completion. See model.h.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "skeleton/cexpr.h"
#include "skeleton/model.h"

namespace pskel::skeleton::detail {

using tr::FunctionId;
using tr::FunctionKind;

int32_t Comm::local(int32_t world) const {
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i] == world) return static_cast<int32_t>(i);
  return -1;
}

bool is_groupable(const EventInfo& info) {
  return info.skip.empty() &&
         (info.kind == FunctionKind::p2p || info.kind == FunctionKind::start ||
          info.kind == FunctionKind::completion);
}

bool has_reply(const lt::Event& event) {
  return std::ranges::any_of(event.ranks,
                             [](const lt::RankCall& c) { return c.peer == lt::kLastWildcardSource; });
}

bool is_wildcard_receive(const lt::Event& event) {
  return event.function == static_cast<uint16_t>(FunctionId::MPI_Recv) &&
         std::ranges::any_of(event.ranks,
                             [](const lt::RankCall& c) { return c.source == tr::kAnySource; });
}

std::string_view function_name(FunctionId fn) {
  const tr::FunctionInfo* info = tr::find_function(static_cast<uint16_t>(fn));
  return info != nullptr ? info->name : std::string_view("(unknown)");
}

namespace {

// The collectives whose sample's aux words (their count lists) the emitter reads: the words of
// any other call are not copied into the analysis, which lives until the skeleton is written.
bool has_count_lists(FunctionId fn) {
  return fn == FunctionId::MPI_Alltoallv || fn == FunctionId::MPI_Allgatherv ||
         fn == FunctionId::MPI_Gatherv || fn == FunctionId::MPI_Scatterv ||
         fn == FunctionId::MPI_Reduce_scatter;
}

// Participant index of `rank` in `event` (Event::ranks is ascending), or -1.
int participant(const lt::Event& event, int32_t rank) {
  const auto it = std::lower_bound(event.ranks.begin(), event.ranks.end(), rank,
                                   [](const lt::RankCall& c, int32_t r) { return c.rank < r; });
  if (it == event.ranks.end() || it->rank != rank) return -1;
  return static_cast<int>(it - event.ranks.begin());
}

bool valid_calibration(double ns) { return ns >= 0.5 && ns <= 1e6; }

// Two measurements this far apart (relative) disagree: one of them was disturbed.
constexpr double kCalibrationAgreement = 0.02;

// The calibration a rank's compute is replayed with, from its measurements in MPI_Init and in
// MPI_Finalize: when they agree, their mean; when they disagree, the lower, because a slow moment
// of the host only ever inflates a measurement (by 3-30 % on a VM, unseen by the run-queue
// delay), while a run that is slow throughout inflates both. Traces without the second
// measurement (older ones, runs killed before MPI_Finalize) use the first.
double combined_calibration(double at_init, double at_finalize) {
  if (!valid_calibration(at_finalize)) return at_init;
  const double low = std::min(at_init, at_finalize), high = std::max(at_init, at_finalize);
  return high <= low * (1 + kCalibrationAgreement) ? 0.5 * (low + high) : low;
}

// Analysis::events' per-participant vectors, sized for `event`'s participants.
void size_event_info(const lt::Event& event, EventInfo& info) {
  const size_t n = event.ranks.size();
  info.comm.assign(n, -1);
  info.new_comm.assign(n, -1);
  info.made.assign(n, {});
  info.covers.assign(n, {});
  info.starts.assign(n, {});
  info.start_nth.assign(n, {});
  info.frees.assign(n, {});
  info.passed.assign(n, 0);
  info.flags.assign(n, 0);
  info.type_size.assign(n, 0);
  info.recv_type_size.assign(n, 0);
  info.count_lists.assign(n, {});
}

}  // namespace

double meta_calibration(const tr::TraceSet& trace, const char* key, size_t r) {
  const auto it = trace.meta.find(key);
  if (it == trace.meta.end() || !it->is_array() || it->size() != trace.ranks.size()) return 0;
  return (*it)[r].is_number() ? (*it)[r].get<double>() : 0;
}

// The analysis of the ranks added so far. Each per-rank pass reads that rank's records alone,
// so the ranks can come one at a time. What crosses ranks comes out as a pass over every rank
// at once made it: communicators are numbered in rank order, an event's facts are gathered over
// its participants in rank order, and a communicator is made by the lowest event whose samples
// made it, else by the first call of the requests pass (in rank order, then call order).
struct AnalysisBuilder::State {
  State(const tr::TraceSet& trace, const merge::MergedTrace& merged, const lt::LoopTree& tree)
      : dir_(trace.dir), merged_(merged) {
    error_ = start(trace, tree);
  }

  // What needs no record: the calibration, the events, event_of, MPI_COMM_WORLD and _SELF.
  std::optional<Error> start(const tr::TraceSet& trace, const lt::LoopTree& tree) {
    out_.world_size = tree.world_size;
    if (out_.world_size <= 0 || trace.ranks.size() != static_cast<size_t>(out_.world_size))
      return Error{trace.dir, "empty trace: no ranks"};
    if (auto e = calibrate(trace)) return e;
    index(tree.items, nullptr);
    size_event_of();
    if (!walk(tree.items) || next_event_ != merged_.events.size())
      return Error{trace.dir, "the loop tree does not match the merged trace"};
    Comm world;
    for (int r = 0; r < out_.world_size; ++r) world.members.push_back(r);
    add_comm(std::move(world));
    add_comm(Comm{});  // MPI_COMM_SELF
    participant_of_.assign(out_.events.size(), -1);
    calls_of_.resize(trace.ranks.size());
    for (const EventInfo& info : out_.events) {
      if (info.event == nullptr) continue;
      for (size_t j = 0; j < info.event->ranks.size(); ++j)
        calls_of_[static_cast<size_t>(info.event->ranks[j].rank)].push_back(
            {info.event->id, static_cast<uint32_t>(j)});
    }
    return std::nullopt;
  }

  // Calibration: the probes of the whole run where the rank has them (enough of them: the
  // tracer writes -1 otherwise); else the values from MPI_Init (a rank whose value is missing or
  // absurd uses the median of the others) and MPI_Finalize, combined.
  std::optional<Error> calibrate(const tr::TraceSet& trace) {
    std::vector<double> good;
    for (const tr::RankTrace& rt : trace.ranks)
      if (valid_calibration(rt.header.work_ns_per_unit)) good.push_back(rt.header.work_ns_per_unit);
    if (good.empty())
      return Error{trace.dir,
                   "no rank has a usable work calibration (work_ns_per_unit in the rank headers)"};
    std::sort(good.begin(), good.end());
    const double median = good[good.size() / 2];
    for (size_t r = 0; r < trace.ranks.size(); ++r) {
      const double ns = trace.ranks[r].header.work_ns_per_unit;
      const double in_run = meta_calibration(trace, "work_ns_per_unit_in_run", r);
      out_.ns_per_unit.push_back(
          valid_calibration(in_run)
              ? in_run
              : combined_calibration(valid_calibration(ns) ? ns : median,
                                     meta_calibration(trace, "work_ns_per_unit_at_finalize", r)));
      if (!valid_calibration(ns))
        out_.warnings.push_back(fmt::format(
            "rank {}: calibration {} ns per unit is unusable; the median {} is used", r, ns, median));
    }
    return std::nullopt;
  }

  void index(const std::vector<lt::Item>& items, const lt::Loop* loop) {
    for (const lt::Item& item : items) {
      if (item.is_loop()) {
        index(item.loop().body, &item.loop());
        continue;
      }
      const lt::Event& event = item.event();
      if (event.id >= out_.events.size()) {
        out_.events.resize(event.id + 1);
        out_.loop_of_event.resize(event.id + 1, nullptr);
      }
      EventInfo& info = out_.events[event.id];
      info.event = &event;
      info.fn = static_cast<FunctionId>(event.function);
      const tr::FunctionInfo* fi = tr::find_function(event.function);
      info.kind = fi != nullptr ? fi->kind : FunctionKind::meta;
      if (fi == nullptr) info.skip = fmt::format("function id {} unknown", event.function);
      size_event_info(event, info);
      out_.loop_of_event[event.id] = loop;
    }
  }

  // Each rank's event_of, sized to its last merged record once: grown a part at a time in
  // walk(), its capacity doubled its way to up to twice that, kept until the skeleton is written.
  void size_event_of() {
    std::vector<uint64_t> records(static_cast<size_t>(out_.world_size), 0);
    for (const merge::Part& part : merged_.parts)
      if (part.rank >= 0 && part.rank < out_.world_size) {
        uint64_t& n = records[static_cast<size_t>(part.rank)];
        n = std::max(n, uint64_t{part.record} + 1);
      }
    out_.event_of.resize(records.size());
    for (size_t r = 0; r < records.size(); ++r) out_.event_of[r].assign(records[r], kNoEvent);
  }

  // Expanded walk: the k-th event visited is merged event k. A rank's event_of holds its last
  // part (size_event_of); add() extends it to the rank's records.
  bool walk(const std::vector<lt::Item>& items) {
    for (const lt::Item& item : items) {
      if (item.is_loop()) {
        for (uint64_t it = 0; it < item.loop().iterations; ++it)
          if (!walk(item.loop().body)) return false;
        continue;
      }
      const lt::Event& event = item.event();
      if (next_event_ >= merged_.events.size()) return false;
      const merge::Event& m = merged_.events[next_event_++];
      if (m.symbol != event.symbol) return false;
      for (const merge::Part& part : merged_.parts_of(m)) {
        if (part.rank < 0 || part.rank >= out_.world_size) return false;
        out_.event_of[static_cast<size_t>(part.rank)][part.record] = event.id;
      }
    }
    return true;
  }

  void add(const tr::RankTrace& rt) {
    if (error_) return;
    if (next_rank_ >= out_.world_size) {
      error_ = Error{dir_, fmt::format("more than the trace's {} ranks analysed", out_.world_size)};
      return;
    }
    const int32_t r = next_rank_++;
    auto& of = out_.event_of[static_cast<size_t>(r)];
    if (of.size() > rt.records.size()) {
      error_ = Error{rt.source.empty() ? dir_ : rt.source,
                     fmt::format("holds {} records, fewer than were merged (changed while pskel "
                                 "read it?)",
                                 rt.records.size())};
      return;
    }
    of.reserve(rt.records.size());   // exactly: resize() past capacity may double it
    of.resize(rt.records.size(), kNoEvent);
    communicators(rt);
    event_facts(r, rt);
    requests(r, rt);
    std::vector<Call>().swap(calls_of_[static_cast<size_t>(r)]);
  }

  Result<Analysis> finish() {
    if (error_) return *error_;
    if (next_rank_ != out_.world_size)
      return Error{dir_, fmt::format("{} of the trace's {} ranks analysed", next_rank_,
                                     out_.world_size)};
    for (size_t c = 2; c < out_.comms.size(); ++c)
      out_.comms[c].made_by =
          made_by_sample_[c] != kNoEvent ? made_by_sample_[c] : made_by_request_[c];
    phases();
    for (const Inherit& in : inherit_) {
      EventInfo& info = out_.events[in.event];
      auto& covers = info.covers[in.participant];
      if (!covers.empty()) continue;
      const EventInfo& from = out_.events[in.from];
      const int j = participant(*from.event, in.rank);
      if (j < 0) continue;
      covers = from.covers[static_cast<size_t>(j)];
    }
    return std::move(out_);
  }

 private:
  static constexpr size_t kMaxInstanceLists = 1u << 16;
  static constexpr uint32_t kMaxPeriod = 16;

  struct Call {
    uint32_t event, participant;
  };
  struct Inherit {
    uint32_t event, participant, from;
    int32_t rank;
  };
  // What each instance of a completion completed, in instance order. Nearly always every
  // instance completes the same events: that is kept as one list and a count, and the lists
  // are kept one by one only from the first instance that differs.
  class InstanceLists {
   public:
    size_t size() const { return alike_ + rest_.size(); }
    bool all_alike() const { return rest_.empty(); }
    const std::vector<uint32_t>& operator[](size_t i) const {
      return i < alike_ ? first_ : rest_[i - alike_];
    }
    void push_back(const std::vector<uint32_t>& list) {
      if (alike_ == 0) first_ = list;
      if (rest_.empty() && list == first_) {
        ++alike_;
      } else {
        rest_.push_back(list);
      }
    }

   private:
    std::vector<uint32_t> first_;
    size_t alike_ = 0;  // instances [0, alike_) completed first_
    std::vector<std::vector<uint32_t>> rest_;
  };

  void add_comm(Comm c) {
    out_.comms.push_back(std::move(c));
    out_.comm_tags_vary.push_back(false);
    out_.comm_reply_bytes.push_back(-1);
    made_by_sample_.push_back(kNoEvent);
    made_by_request_.push_back(kNoEvent);
  }

  // The rank's communicators: each pskel_comm_define is matched across ranks by its members
  // and by how many communicators of those members the rank defined before it.
  void communicators(const tr::RankTrace& rt) {
    const int n = out_.world_size;
    local_.clear();
    local_[tr::kCommWorld] = 0;
    local_[tr::kCommSelf] = 1;
    std::map<std::vector<int32_t>, int> seen;  // members -> defines so far on this rank
    for (size_t i = 0; i < rt.records.size(); ++i) {
      const tr::Record& rec = rt.records[i];
      if (rec.function != static_cast<uint16_t>(FunctionId::pskel_comm_define)) continue;
      const auto aux = rt.aux_of(i);
      std::vector<int32_t> members;
      for (int64_t w : aux) members.push_back(static_cast<int32_t>(w));
      const bool inter = rec.recv_count > 0 ||
                         static_cast<int64_t>(aux.size()) != rec.count + rec.recv_count ||
                         std::any_of(members.begin(), members.end(),
                                     [n](int32_t w) { return w < 0 || w >= n; });
      const int k = seen[members]++;
      auto [it, fresh] = global_.try_emplace({members, k}, static_cast<int>(out_.comms.size()));
      if (fresh) {
        Comm c;
        c.members = members;
        c.inter = inter;
        add_comm(std::move(c));
      }
      local_[rec.comm] = it->second;
    }
  }

  // The current rank's communicator `local` as an index into Analysis::comms, or -1.
  int global_comm(uint16_t local) const {
    if (local == tr::kNoComm) return -1;
    const auto it = local_.find(local);
    return it == local_.end() ? -1 : it->second;
  }

  // What the rank's sample of each event it takes part in says: communicator, flags, counts
  // passed, datatype sizes, v-counts, and whether the skeleton can make the call at all.
  void event_facts(int32_t r, const tr::RankTrace& rt) {
    for (const Call& at : calls_of_[static_cast<size_t>(r)]) {
      EventInfo& info = out_.events[at.event];
      const lt::Event& event = *info.event;
      const size_t j = at.participant;
      const lt::RankCall& call = event.ranks[j];
      const tr::Record& rec = rt.records[call.sample.record];
      const auto aux = rt.aux_of(call.sample.record);
      info.flags[j] = rec.flags;
      info.type_size[j] = rec.type_size;
      info.recv_type_size[j] = rec.recv_type_size;
      info.comm[j] = global_comm(rec.comm);
      if (info.kind == FunctionKind::comm && info.fn != FunctionId::MPI_Comm_free && !aux.empty()) {
        info.new_comm[j] = global_comm(static_cast<uint16_t>(aux[0]));
        if (info.new_comm[j] >= 2) {
          uint32_t& made_by = made_by_sample_[static_cast<size_t>(info.new_comm[j])];
          made_by = std::min(made_by, event.id);
        }
      }
      if (has_count_lists(info.fn)) info.count_lists[j].assign(aux.begin(), aux.end());
      if (info.kind == FunctionKind::completion || info.fn == FunctionId::MPI_Startall)
        info.passed[j] = rec.count;
      if (info.comm[j] >= 0 && out_.comms[static_cast<size_t>(info.comm[j])].inter)
        info.skip = "intercommunicator";
      for (int32_t who : {call.peer, call.source})
        if (who == tr::kUnknownRank || who == tr::kRootSelf) info.skip = "untranslatable rank";
      if (info.kind == FunctionKind::collective || info.kind == FunctionKind::icollective) {
        const int64_t root = call.root.at(0);
        if (root == tr::kUnknownRank || root == tr::kRootSelf || root == tr::kProcNull)
          info.skip = "intercommunicator root";
      }
      const bool uses_comm = info.kind != FunctionKind::start &&
                             info.kind != FunctionKind::completion &&
                             info.kind != FunctionKind::request &&
                             info.kind != FunctionKind::env;
      if (uses_comm && info.skip.empty() && info.comm[j] < 0)
        info.skip = "unknown communicator";
      // Tags that change from instance to instance make matching depend on which instances
      // a scaled run keeps: receives on such a communicator take any tag.
      if (info.comm[j] >= 0 &&
          (call.tag.kind != lt::Rule::Kind::constant ||
           call.recv_tag.kind != lt::Rule::Kind::constant))
        out_.comm_tags_vary[static_cast<size_t>(info.comm[j])] = true;
      // Which message a reply carries (a task, a stop) depends on who came first in the
      // skeleton's run: receives on its communicator take any tag and any size it sends.
      if (call.peer == lt::kLastWildcardSource && info.comm[j] >= 0) {
        out_.replies = true;
        out_.comm_tags_vary[static_cast<size_t>(info.comm[j])] = true;
        int64_t& most = out_.comm_reply_bytes[static_cast<size_t>(info.comm[j])];
        most = std::max(most, rule_max(call.send_bytes, event.instances));
      }
    }
  }

  // The rank's requests, followed from the call that made each to the calls that start,
  // complete or free it.
  void requests(int32_t r, const tr::RankTrace& rt) {
    const auto& of = out_.event_of[static_cast<size_t>(r)];
    for (const Call& at : calls_of_[static_cast<size_t>(r)])
      participant_of_[at.event] = static_cast<int32_t>(at.participant);
    std::unordered_map<int64_t, uint32_t> creator;  // request id -> creating event
    std::unordered_map<uint32_t, std::vector<int64_t>> persistent;  // init event -> live ids
    uint32_t last_completion = kNoEvent;            // for a Wait after a Test
    for (size_t i = 0; i < rt.records.size(); ++i) {
      const uint32_t e = of[i];
      if (e == kNoEvent) continue;
      EventInfo& info = out_.events[e];
      const int j = participant_of_[e];
      if (j < 0) continue;
      const tr::Record& rec = rt.records[i];
      const auto aux = rt.aux_of(i);
      if (const tr::FunctionInfo* f = tr::find_function(static_cast<uint16_t>(info.fn)); f && f->creates_request) {
        if (rec.request != 0) creator[rec.request] = e;
        if (rec.request != 0 && (info.fn == FunctionId::MPI_Send_init ||
                                 info.fn == FunctionId::MPI_Recv_init))
          persistent[e].push_back(rec.request);
        continue;
      }
      if (info.kind == FunctionKind::comm && info.fn != FunctionId::MPI_Comm_free) {
        const int made = aux.empty() ? -1 : global_comm(static_cast<uint16_t>(aux[0]));
        info.made[static_cast<size_t>(j)].push_back(made);
        if (made >= 2 && made_by_request_[static_cast<size_t>(made)] == kNoEvent)
          made_by_request_[static_cast<size_t>(made)] = e;
        continue;
      }
      if (info.kind == FunctionKind::start) {
        if (i == info.event->ranks[static_cast<size_t>(j)].sample.record) {
          std::vector<int64_t> ids(aux.begin(), aux.end());
          if (ids.empty() && rec.request != 0) ids.push_back(rec.request);
          for (int64_t id : ids) {
            const auto it = creator.find(id);
            if (it == creator.end()) continue;
            const auto& alive = persistent[it->second];
            const auto at = std::find(alive.begin(), alive.end(), id);
            info.starts[static_cast<size_t>(j)].push_back(it->second);
            info.start_nth[static_cast<size_t>(j)].push_back(
                at == alive.end() ? 0 : static_cast<uint32_t>(at - alive.begin()));
          }
        }
        continue;
      }
      if (info.fn == FunctionId::MPI_Request_free) {
        const auto it = creator.find(rec.request);
        info.frees[static_cast<size_t>(j)].push_back(it == creator.end() ? kNoEvent : it->second);
        if (it != creator.end()) {
          auto& alive = persistent[it->second];
          alive.erase(std::remove(alive.begin(), alive.end(), int64_t{rec.request}), alive.end());
        }
        continue;
      }
      if (info.kind != FunctionKind::completion) continue;
      // Multiplicity per creating event in this instance; the completion covers the maximum.
      std::vector<std::pair<uint32_t, uint32_t>>& here = here_;
      here.clear();
      for (size_t w = 0; w + tr::kCompletionWords <= aux.size(); w += tr::kCompletionWords) {
        const auto it = creator.find(aux[w]);
        if (it == creator.end()) continue;
        auto slot = std::find_if(here.begin(), here.end(),
                                 [&](const auto& p) { return p.first == it->second; });
        if (slot == here.end()) here.emplace_back(it->second, 1);
        else ++slot->second;
      }
      auto& covers = info.covers[static_cast<size_t>(j)];
      for (const auto& [ev, times] : here) {
        const auto have = static_cast<uint32_t>(std::count(covers.begin(), covers.end(), ev));
        for (uint32_t t = have; t < times; ++t) covers.push_back(ev);
      }
      // What each instance completed, for completions whose instances differ by phase.
      auto& seq = instance_lists_[instance_key(e, static_cast<uint32_t>(j))];
      if (seq.size() < kMaxInstanceLists) {
        list_.clear();
        for (const auto& [ev, times] : here) list_.insert(list_.end(), times, ev);
        std::sort(list_.begin(), list_.end());
        seq.push_back(list_);
      }
      // A completion that found nothing to complete (its request was completed by a test
      // before it) covers what that test covers: in the skeleton the test may fail.
      if (here.empty() && rec.count > 0 && last_completion != kNoEvent &&
          last_completion != e && inherit_.size() < 1000000)
        inherit_.push_back({e, static_cast<uint32_t>(j), last_completion, r});
      last_completion = e;
    }
    for (const Call& at : calls_of_[static_cast<size_t>(r)]) participant_of_[at.event] = -1;
  }

  // Completions whose instances complete different events in turn: the smallest period whose
  // phases complete disjoint sets of events (which requests of a set a phase completes may vary
  // with timing: tests before it completed the others).
  static uint32_t phase_period(const InstanceLists& seq) {
    // The common case, every instance completing the same events: no two phases are disjoint.
    if (seq.all_alike()) return 1;
    for (uint32_t p = 2; p <= kMaxPeriod && 2 * p <= seq.size(); ++p) {
      std::vector<std::set<uint32_t>> phase(p);
      for (size_t i = 0; i < seq.size(); ++i) phase[i % p].insert(seq[i].begin(), seq[i].end());
      bool disjoint = true;
      for (uint32_t a = 0; a < p && disjoint; ++a) {
        disjoint = !phase[a].empty();
        for (uint32_t b = a + 1; b < p && disjoint; ++b)
          for (uint32_t e : phase[a]) disjoint = disjoint && phase[b].count(e) == 0;
      }
      if (disjoint) return p;
    }
    return 1;
  }

  void phases() {
    std::map<uint32_t, uint32_t> period;  // event -> period all participants agree on (1: none)
    for (const auto& [key, seq] : instance_lists_) {
      const auto e = static_cast<uint32_t>(key >> 32);
      const uint32_t p = seq.size() == out_.events[e].event->instances ? phase_period(seq) : 1;
      auto [it, fresh] = period.try_emplace(e, p);
      if (!fresh && it->second != p) it->second = 1;
    }
    for (const auto& [e, p] : period) {
      if (p <= 1) continue;
      EventInfo& info = out_.events[e];
      info.period = p;
      info.phase_covers.assign(info.event->ranks.size(), std::vector<std::vector<uint32_t>>(p));
      for (size_t j = 0; j < info.event->ranks.size(); ++j) {
        const auto it = instance_lists_.find(instance_key(e, static_cast<uint32_t>(j)));
        if (it == instance_lists_.end()) continue;
        for (size_t i = 0; i < it->second.size(); ++i) {
          auto& phase = info.phase_covers[j][i % p];
          for (uint32_t ev : it->second[i]) {  // the most of each event any instance completed
            const auto need = std::count(it->second[i].begin(), it->second[i].end(), ev);
            if (std::count(phase.begin(), phase.end(), ev) < need) phase.push_back(ev);
          }
        }
      }
    }
  }


  const std::string dir_;
  const merge::MergedTrace& merged_;
  Analysis out_;
  std::optional<Error> error_;
  uint64_t next_event_ = 0;
  int32_t next_rank_ = 0;
  std::vector<std::vector<Call>> calls_of_;  // per rank not yet added: its (event, participant)s
  std::map<std::pair<std::vector<int32_t>, int>, int> global_;  // (members, k) -> comm index
  std::unordered_map<uint16_t, int> local_;  // the current rank: local comm id -> global
  std::vector<uint32_t> made_by_sample_;     // per comm: the lowest event whose samples made it
  std::vector<uint32_t> made_by_request_;    // per comm: the first the requests pass met
  std::vector<Inherit> inherit_;
  // (completion event, participant) -> per instance, the creating events it completed. Hashed:
  // a job of 16,384 ranks has that many keys per completion, looked up at every instance.
  static uint64_t instance_key(uint32_t event, uint32_t participant) {
    return (uint64_t{event} << 32) | participant;
  }
  std::unordered_map<uint64_t, InstanceLists> instance_lists_;
  std::vector<int32_t> participant_of_;  // the current rank: event -> participant index, or -1
  // Scratch of requests(), kept to spare an allocation per completion.
  std::vector<std::pair<uint32_t, uint32_t>> here_;
  std::vector<uint32_t> list_;
};

AnalysisBuilder::AnalysisBuilder(const tr::TraceSet& trace, const merge::MergedTrace& merged,
                                 const lt::LoopTree& tree)
    : state_(std::make_unique<State>(trace, merged, tree)) {}
AnalysisBuilder::~AnalysisBuilder() = default;
void AnalysisBuilder::add(const tr::RankTrace& rank) { state_->add(rank); }
Result<Analysis> AnalysisBuilder::finish() { return state_->finish(); }

}  // namespace pskel::skeleton::detail

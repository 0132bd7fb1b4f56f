// Writes the skeleton's C source from the analysed loop tree; see skeleton.h and
// docs/skeleton.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "skeleton/cexpr.h"
#include "skeleton/model.h"
#include "skeleton/rank_noise.h"
#include "skeleton/skeleton.h"
#include "trace/format.h"

namespace pskel::skeleton {

namespace detail {
namespace {

using tr::FunctionId;
using tr::FunctionKind;

struct Reduction {
  std::string type;
  int64_t elem = 1;
};

// A datatype the reduction `op` accepts, of the traced element size where one exists.
Reduction reduction_type(uint8_t op, uint32_t size) {
  const auto o = static_cast<tr::Op>(op);
  if (o == tr::Op::minloc || o == tr::Op::maxloc)
    return size == 12 || size == 16 ? Reduction{"MPI_DOUBLE_INT", 12} : Reduction{"MPI_2INT", 8};
  const bool bits = o == tr::Op::land || o == tr::Op::band || o == tr::Op::lor ||
                    o == tr::Op::bor || o == tr::Op::lxor || o == tr::Op::bxor;
  switch (size) {
    case 1: return {"MPI_INT8_T", 1};
    case 2: return {"MPI_INT16_T", 2};
    case 4: return bits ? Reduction{"MPI_INT32_T", 4} : Reduction{"MPI_FLOAT", 4};
    case 8: return bits ? Reduction{"MPI_INT64_T", 8} : Reduction{"MPI_DOUBLE", 8};
    case 16:
      if (bits) return {"MPI_INT64_T", 8};
      return o == tr::Op::sum || o == tr::Op::prod ? Reduction{"MPI_C_DOUBLE_COMPLEX", 16}
                                                   : Reduction{"MPI_DOUBLE", 8};
    default: return {"MPI_INT8_T", 1};
  }
}

std::string op_name(uint8_t op) {
  static const char* const names[] = {"MPI_SUM",  "MPI_MAX", "MPI_MIN",  "MPI_SUM",   "MPI_PROD",
                                      "MPI_LAND", "MPI_BAND", "MPI_LOR", "MPI_BOR",   "MPI_LXOR",
                                      "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC", "MPI_SUM"};
  return op < std::size(names) ? names[op] : "MPI_SUM";
}

std::string describe_items(const std::vector<lt::Item>& items, size_t first, size_t last) {
  std::string out;
  for (size_t k = first; k < last && out.size() < 200; ++k) {
    if (!out.empty()) out += ' ';
    if (items[k].is_loop()) {
      out += "( " + describe_items(items[k].loop().body, 0, items[k].loop().body.size()) +
             fmt::format(" )^{}", items[k].loop().iterations);
    } else {
      out += lt::describe(items[k].event());
    }
  }
  return out;
}

class Emitter {
 public:
  Emitter(const tr::TraceSet& trace, const lt::LoopTree& tree, const Analysis& a,
          const Scaling& s, const Options& o)
      : trace_(trace), tree_(tree), a_(a), s_(s), o_(o), memory_(plan_memory(trace, tree, a)),
        tables_(a.world_size), known_(static_cast<size_t>(a.world_size), true) {
    tables_.max_table = o.max_table;
  }

  std::string run() {
    indent_ = 1;
    make_untraced_comms();
    body(tree_.items, Mode::normal);
    return assemble();
  }

  const MemoryPlan& memory() const { return memory_; }

  nlohmann::json rewritten = nlohmann::json::array();
  nlohmann::json reordered = nlohmann::json::array();
  std::vector<std::string> notes;
  std::set<std::string> substitutions;

 private:
  enum class Mode { normal, prepost, rewritten, deferred };
  enum class Side { send, recv };

  struct LoopCtx {
    std::string var;
    uint64_t orig = 0, run = 0;
    bool scaled = false;
    // Per world rank: the event whose gap in the first iteration is the loop's entry gap (the
    // rank's first call in the body, if that is an event and not a loop), or kNoEvent.
    std::vector<uint32_t> entry;
  };

  // ---- output -------------------------------------------------------------------------------

  void line(const std::string& text) {
    code_.append(static_cast<size_t>(indent_) * 4, ' ');
    code_ += text;
    code_ += '\n';
  }

  // Opens "if (cond) {" when `set` excludes some known rank; returns whether it did. Narrows
  // known_ to the set; close() restores.
  bool open_if(const std::vector<bool>& set) {
    const std::string cond = tables_.condition(set, known_);
    saved_known_.push_back(known_);
    for (size_t r = 0; r < known_.size(); ++r) known_[r] = known_[r] && set[r];
    if (cond.empty()) return false;
    line("if (" + cond + ") {");
    ++indent_;
    return true;
  }
  void close(bool opened) {
    known_ = saved_known_.back();
    saved_known_.pop_back();
    if (!opened) return;
    --indent_;
    line("}");
  }

  // ---- values -------------------------------------------------------------------------------

  std::vector<bool> present_of(const lt::Event& e) const {
    std::vector<bool> p(static_cast<size_t>(a_.world_size), false);
    for (const lt::RankCall& c : e.ranks) p[static_cast<size_t>(c.rank)] = true;
    return p;
  }

  Index index() const {
    Index ix;
    if (loops_.empty()) return ix;
    std::string plain, spread;
    uint64_t instances = 1;
    for (const LoopCtx& l : loops_) {
      const std::string sp =
          l.run == l.orig ? l.var : fmt::format("{} * {} / {}", l.var, l.orig, l.run);
      if (plain.empty()) {
        plain = l.var;
        spread = sp;
      } else {
        plain = fmt::format("({}) * {} + {}", plain, l.orig, l.var);
        spread = fmt::format("({}) * {} + {}", spread, l.orig, sp);
      }
      instances *= l.orig;
    }
    ix.plain = plain;
    ix.spread = spread;
    ix.instances = instances;
    return ix;
  }

  std::string hint(const lt::Event& e, std::string_view what) const {
    return fmt::format("e{}_{}", e.id, what);
  }

  std::string comm_expr(const EventInfo& info) {
    std::vector<int64_t> v(static_cast<size_t>(a_.world_size), 0);
    for (size_t j = 0; j < info.event->ranks.size(); ++j)
      v[static_cast<size_t>(info.event->ranks[j].rank)] = std::max(0, info.comm[j]);
    return "pskel_comm[" + tables_.ints(hint(*info.event, "comm"), v, present_of(*info.event)) + "]";
  }

  int64_t local_rank(int32_t world, int comm) const {
    switch (world) {
      case tr::kProcNull: return kTokProcNull;
      case tr::kAnySource: return kTokAnySource;
      case tr::kNoRank: return 0;
      default: break;
    }
    if (comm <= 0) return world;
    if (comm == 1) return 0;
    const int32_t l = a_.comms[static_cast<size_t>(comm)].local(world);
    return l < 0 ? kTokProcNull : l;
  }

  // A reply's destination is pskel_last_source, decided in the skeleton's own run; the other
  // ranks' destinations are ranks, as an expression or a table of them.
  std::string peer_expr(const EventInfo& info, Side side) {
    std::vector<int64_t> v(static_cast<size_t>(a_.world_size), 0);
    std::vector<bool> present = present_of(*info.event), replying(v.size(), false);
    bool replies = false, others = false;
    for (size_t j = 0; j < info.event->ranks.size(); ++j) {
      const lt::RankCall& c = info.event->ranks[j];
      const auto r = static_cast<size_t>(c.rank);
      if (side == Side::send && c.peer == lt::kLastWildcardSource) {
        replying[r] = replies = true;
        present[r] = false;
        continue;
      }
      others = others || present[r];
      v[r] = local_rank(side == Side::send ? c.peer : c.source, info.comm[j]);
    }
    const std::string ranks =
        others ? tables_.ints(hint(*info.event, side == Side::send ? "dest" : "source"), v, present) : "";
    if (!replies) return ranks;
    if (!others) return "pskel_last_source";
    const std::string cond = tables_.condition(replying, present_of(*info.event));
    return fmt::format("({} ? pskel_last_source : {})", cond, ranks);
  }

  // Bytes per rank and instance, and the largest value (for the buffers).
  std::string bytes_expr(const EventInfo& info, Side side, int64_t divisor, int64_t* largest,
                         std::string_view what = "") {
    std::vector<const lt::Rule*> rules(static_cast<size_t>(a_.world_size), nullptr);
    int64_t most = 0;
    for (const lt::RankCall& c : info.event->ranks) {
      const lt::Rule& r = side == Side::send ? c.send_bytes : c.recv_bytes;
      rules[static_cast<size_t>(c.rank)] = &r;
      most = std::max(most, rule_max(r, info.event->instances));
    }
    // On a communicator with replies, a receive may get any of them (who came first decides):
    // room for the largest, which costs no time (a message moves its own bytes).
    if (side == Side::recv && divisor == 1 && info.kind == tr::FunctionKind::p2p) {
      int64_t reply = -1;
      for (size_t j = 0; j < info.event->ranks.size(); ++j)
        if (info.comm[j] >= 0) reply = std::max(reply, a_.comm_reply_bytes[static_cast<size_t>(info.comm[j])]);
      if (reply >= 0) {
        most = std::max(most, reply);
        if (largest) *largest = most;
        return std::to_string(most);
      }
    }
    if (largest) *largest = most;
    return tables_.rules(hint(*info.event, what.empty() ? (side == Side::send ? "sbytes" : "rbytes") : what),
                         rules, index(), divisor, notes);
  }

  std::string tag_expr(const EventInfo& info, Side side) {
    std::vector<const lt::Rule*> rules(static_cast<size_t>(a_.world_size), nullptr);
    std::vector<lt::Rule> own(info.event->ranks.size());
    for (size_t j = 0; j < info.event->ranks.size(); ++j) {
      const lt::RankCall& c = info.event->ranks[j];
      const lt::Rule& r = side == Side::send ? c.tag : c.recv_tag;
      const bool any = side == Side::recv &&
                       ((info.flags[j] & tr::kFlagAnyTag) != 0 ||
                        (info.comm[j] >= 0 && a_.comm_tags_vary[static_cast<size_t>(info.comm[j])]) ||
                        (r.kind == lt::Rule::Kind::constant && r.base == tr::kAnyTag));
      if (any || (r.kind == lt::Rule::Kind::constant && r.base < 0)) {
        own[j].base = any ? kTokAnyTag : 0;
        rules[static_cast<size_t>(c.rank)] = &own[j];
      } else {
        rules[static_cast<size_t>(c.rank)] = &r;
      }
    }
    return tables_.rules(hint(*info.event, side == Side::send ? "tag" : "rtag"), rules, index(), 1, notes);
  }

  // The root as a rank of each rank's communicator.
  std::string root_expr(const EventInfo& info) {
    std::vector<const lt::Rule*> rules(static_cast<size_t>(a_.world_size), nullptr);
    std::vector<lt::Rule> own(info.event->ranks.size());
    for (size_t j = 0; j < info.event->ranks.size(); ++j) {
      const lt::RankCall& c = info.event->ranks[j];
      lt::Rule r = c.root;
      const int comm = info.comm[j];
      if (comm != 0) {
        if (r.kind == lt::Rule::Kind::linear) {  // translate value by value
          std::vector<int64_t> values;
          for (uint64_t i = 0; i < info.event->instances; ++i) values.push_back(r.at(i));
          r.kind = lt::Rule::Kind::table;
          r.values = values;
        }
        r.base = local_rank(static_cast<int32_t>(r.base), comm);
        for (int64_t& v : r.values) v = local_rank(static_cast<int32_t>(v), comm);
      }
      own[j] = r;
      rules[static_cast<size_t>(c.rank)] = &own[j];
    }
    return tables_.rules(hint(*info.event, "root"), rules, index(), 1, notes);
  }

  std::string in_place_or(const EventInfo& info, const std::string& buffer) {
    bool all = true, none = true;
    std::vector<int64_t> v(static_cast<size_t>(a_.world_size), 0);
    for (size_t j = 0; j < info.event->ranks.size(); ++j) {
      const bool ip = (info.flags[j] & tr::kFlagInPlace) != 0;
      all = all && ip;
      none = none && !ip;
      v[static_cast<size_t>(info.event->ranks[j].rank)] = ip ? 1 : 0;
    }
    if (none) return buffer;
    if (all) return "MPI_IN_PLACE";
    return fmt::format("({} ? MPI_IN_PLACE : {})",
                       tables_.ints(hint(*info.event, "in_place"), v, present_of(*info.event)), buffer);
  }

  int comm_size(int comm) const {
    if (comm == 0) return a_.world_size;
    if (comm == 1) return 1;
    return static_cast<int>(a_.comms[static_cast<size_t>(comm)].members.size());
  }
  int max_comm_size(const EventInfo& info) const {
    int n = 1;
    for (int c : info.comm) n = std::max(n, c >= 0 ? comm_size(c) : 1);
    return n;
  }

  void need_send(int64_t bytes) { max_send_ = std::max(max_send_, bytes); }
  void need_recv(int64_t bytes) { max_recv_ = std::max(max_recv_, bytes); }

  // ---- compute ------------------------------------------------------------------------------

  // `samples`: per world rank, the gaps (ns) behind ns[rank], for telling ranks that compute
  // alike from ranks that do not.
  void compute(const std::vector<double>& ns, const std::vector<lt::Stat>& samples,
               const std::vector<bool>& present, std::string_view name) {
    std::vector<double> units(ns.size(), 0);
    std::vector<bool> here(ns.size(), false);  // the ranks that get to this call
    std::vector<RankSample> spread;
    bool any = false;
    double largest = 0;
    for (size_t r = 0; r < ns.size(); ++r) {
      if (!present[r] || !known_[r]) continue;
      here[r] = true;
      units[r] = std::round(ns[r] / a_.ns_per_unit[r] * 1000.0) / 1000.0;
      any = any || units[r] > 0;
      largest = std::max(largest, units[r]);
      if (units[r] == 0) continue;  // idle here (a master waiting): not noise, left at 0
      const lt::Stat& s = samples[r];
      const double sd = s.stddev() / a_.ns_per_unit[r];
      spread.push_back(RankSample{s.n, units[r], sd * sd});
    }
    if (!any) return;
    // Ranks whose values differ by no more than their own calls' noise replay one value: the
    // largest, which keeps the slowest rank's time (what a synchronising job waits for).
    std::string alike;
    if (spread.size() > 1 &&
        std::any_of(spread.begin(), spread.end(),
                    [&](const RankSample& x) { return x.mean != spread[0].mean; }) &&
        ranks_indistinct(spread, noise())) {
      for (size_t r = 0; r < units.size(); ++r)
        if (here[r] && units[r] != 0) units[r] = largest;
      alike = fmt::format("  /* {} ranks alike within their noise: the largest */", spread.size());
    }
    const std::string what = tables_.doubles(name, units, here);
    if (in_scaled_ || s_.scale <= 1) line(fmt::format("pskel_compute({});{}", what, alike));
    else line(fmt::format("pskel_compute_outside({});{}", what, alike));
  }

  // The relative variance of one compute gap in this trace (rank_noise.h), over every event's
  // repeated gaps.
  double noise() {
    if (noise_ < 0) {
      std::vector<RankSample> repeated;
      for (const EventInfo& info : a_.events)
        if (info.event != nullptr)
          for (const lt::RankCall& c : info.event->ranks)
            if (c.gap_ns.n >= 2) {
              const double sd = c.gap_ns.stddev();
              repeated.push_back(RankSample{c.gap_ns.n, c.gap_ns.mean, sd * sd});
            }
      noise_ = pooled_relative_variance(repeated);
    }
    return noise_;
  }

  // ---- structure ----------------------------------------------------------------------------

  void body(const std::vector<lt::Item>& items, Mode mode) {
    const auto it = a_.groups.find(&items);
    const std::vector<Group>* groups = it == a_.groups.end() ? nullptr : &it->second;
    size_t next_group = 0;
    for (size_t i = 0; i < items.size();) {
      while (groups && next_group < groups->size() && (*groups)[next_group].last <= i) ++next_group;
      if (groups && next_group < groups->size() && (*groups)[next_group].first == i) {
        group(items, (*groups)[next_group], mode);
        i = (*groups)[next_group].last;
        continue;
      }
      item(items[i], mode);
      ++i;
    }
  }

  void item(const lt::Item& it, Mode mode) {
    if (it.is_loop()) loop(it.loop(), mode);
    else event(it.event(), mode);
  }

  bool has_prepost(const std::vector<lt::Item>& items) const {
    for (const lt::Item& it : items) {
      if (it.is_loop()) {
        if (has_prepost(it.loop().body)) return true;
        continue;
      }
      const FunctionId fn = a_.events[it.event().id].fn;
      if (fn == FunctionId::MPI_Recv || fn == FunctionId::MPI_Sendrecv ||
          fn == FunctionId::MPI_Sendrecv_replace)
        for (const lt::RankCall& c : it.event().ranks)
          if (known_[static_cast<size_t>(c.rank)]) return true;
    }
    return false;
  }

  void group(const std::vector<lt::Item>& items, const Group& g, Mode mode) {
    const bool defer = g.defer && mode == Mode::normal;
    const bool rewrite = g.rewrite && mode == Mode::normal && !defer;
    // Classes of ranks with the same order, among the ranks that get here.
    std::vector<std::pair<std::vector<size_t>, std::vector<bool>>> classes;
    for (int32_t r = 0; r < a_.world_size; ++r) {
      const auto& order = g.order[static_cast<size_t>(r)];
      if (!known_[static_cast<size_t>(r)] || order.empty()) continue;
      auto c = std::find_if(classes.begin(), classes.end(), [&](const auto& x) { return x.first == order; });
      if (c == classes.end()) {
        classes.emplace_back(order, std::vector<bool>(static_cast<size_t>(a_.world_size), false));
        c = classes.end() - 1;
      }
      c->second[static_cast<size_t>(r)] = true;
    }
    bool merged_order = true;
    for (const auto& c : classes)
      for (size_t i = 1; i < c.first.size(); ++i) merged_order = merged_order && c.first[i - 1] < c.first[i];
    if (defer || rewrite) {
      rewritten.push_back({{"calls", describe_items(items, g.first, g.last)},
                           {"plan", defer ? "deferred_sends" : "receives_first"},
                           {"reason", g.reason},
                           {"checked", g.checked}});
    }
    const Mode inner = defer ? Mode::deferred : mode;
    if (!rewrite && merged_order) {
      if (defer) line("/* planned: blocking sends made non-blocking, completed at the end (skeleton.json: rewritten_groups) */");
      for (size_t k = g.first; k < g.last; ++k) item(items[k], inner);
      return;
    }
    if (!merged_order && mode == Mode::normal)
      reordered.push_back(describe_items(items, g.first, g.last));
    std::vector<bool> remaining = known_;
    for (size_t ci = 0; ci < classes.size(); ++ci) {
      const auto& [order, set] = classes[ci];
      const std::string cond = tables_.condition(set, remaining);
      const bool last = ci + 1 == classes.size();
      const bool covers_rest = cond.empty();
      if (ci == 0) {
        if (!covers_rest || !last) line(fmt::format("if ({}) {{", cond.empty() ? "1" : cond));
        else line("{");
      } else {
        line(covers_rest ? "} else {" : fmt::format("}} else if ({}) {{", cond));
      }
      ++indent_;
      saved_known_.push_back(known_);
      for (size_t r = 0; r < known_.size(); ++r) known_[r] = known_[r] && set[r];
      if (rewrite) {
        line("/* planned: receives posted first, sends non-blocking, one Waitall (skeleton.json:");
        line(" * rewritten_groups); the merged order needed eager buffering */");
        for (size_t k : order) item(items[k], Mode::prepost);
        for (size_t k : order) item(items[k], Mode::rewritten);
        line("CHK(pskel_group_wait());");
      } else {
        if (defer) line("/* planned: blocking sends made non-blocking, completed at the end (skeleton.json: rewritten_groups) */");
        for (size_t k : order) item(items[k], inner);
      }
      known_ = saved_known_.back();
      saved_known_.pop_back();
      --indent_;
      for (size_t r = 0; r < remaining.size(); ++r) remaining[r] = remaining[r] && !set[r];
    }
    if (!classes.empty()) line("}");
  }

  void loop(const lt::Loop& l, Mode mode) {
    if (mode == Mode::prepost && !has_prepost(l.body)) return;
    std::vector<bool> present(static_cast<size_t>(a_.world_size), false);
    for (const lt::RankLoop& r : l.ranks) present[static_cast<size_t>(r.rank)] = true;
    const ScaledLoop* scaled = in_scaled_ ? nullptr : s_.find(&l);
    const bool by_work = scaled != nullptr && scaled->by_work;
    if (by_work) scaled = nullptr;  // runs as an unscaled loop: its compute is 1/K (compute())
    const uint64_t run = scaled ? scaled->run : l.iterations;
    const bool opened = open_if(present);
    if (mode != Mode::prepost) {
      std::vector<double> entry(static_cast<size_t>(a_.world_size), 0);
      std::vector<lt::Stat> samples(entry.size());
      for (const lt::RankLoop& r : l.ranks)
        if (r.entry_gap_ns.n > 0) {
          entry[static_cast<size_t>(r.rank)] = r.entry_gap_ns.mean;
          samples[static_cast<size_t>(r.rank)] = r.entry_gap_ns;
        }
      compute(entry, samples, present, fmt::format("loop{}_entry_work", loop_counter_));
    }
    ++loop_counter_;
    if (scaled && mode != Mode::prepost) {
      line(fmt::format("pskel_section({});  /* scaled loop: {} iterations run as {} */",
                       literal(scaled->factor), l.iterations, run));
      in_scaled_ = true;
    }
    if (by_work && mode != Mode::prepost)
      line(fmt::format("/* scaled by work: all {} iterations run, their compute 1/{} (too few to "
                       "drop any) */", l.iterations, s_.scale));
    const std::string var = fmt::format("i{}", loops_.size());
    line(fmt::format("for (long {0} = 0; {0} < {1}; ++{0}) {{", var, run));
    ++indent_;
    LoopCtx ctx{var, l.iterations, run, scaled != nullptr, {}};
    ctx.entry.assign(static_cast<size_t>(a_.world_size), kNoEvent);
    // Each rank's first item of the body, in one pass over the items' ranks (a pass per rank
    // was quadratic in the ranks: 45 % of a 16,384-rank wavefront's generation).
    std::vector<bool> placed(static_cast<size_t>(a_.world_size), false);
    size_t left = l.ranks.size();
    auto first_item = [&](int32_t rank, uint32_t entry) {
      const auto r = static_cast<size_t>(rank);
      if (!present[r] || placed[r]) return;
      placed[r] = true;
      ctx.entry[r] = entry;
      --left;
    };
    for (const lt::Item& it : l.body) {
      if (left == 0) break;
      if (it.is_loop()) {
        for (const lt::RankLoop& x : it.loop().ranks) first_item(x.rank, kNoEvent);
      } else {
        for (const lt::RankCall& c : it.event().ranks) first_item(c.rank, it.event().id);
      }
    }
    loops_.push_back(std::move(ctx));
    body(l.body, mode);
    loops_.pop_back();
    --indent_;
    line("}");
    if (scaled && mode != Mode::prepost) {
      line("pskel_section(1.0);");
      in_scaled_ = false;
    }
    close(opened);
  }

  // ---- events -------------------------------------------------------------------------------

  void event(const lt::Event& e, Mode mode) {
    const EventInfo& info = a_.events[e.id];
    if (info.fn == FunctionId::MPI_Init || info.fn == FunctionId::MPI_Init_thread) return;
    const std::vector<bool> present = present_of(e);
    if (mode == Mode::prepost) {
      if (info.fn != FunctionId::MPI_Recv && info.fn != FunctionId::MPI_Sendrecv &&
          info.fn != FunctionId::MPI_Sendrecv_replace)
        return;
      const bool opened = open_if(present);
      int64_t most = 0;
      const std::string bytes = info.fn == FunctionId::MPI_Sendrecv_replace
                                    ? bytes_expr(info, Side::send, 1, &most)
                                    : bytes_expr(info, Side::recv, 1, &most);
      need_recv(most);
      line(fmt::format("CHK(MPI_Irecv(pskel_rbuf, {}, MPI_BYTE, {}, {}, {}, pskel_group_request()));",
                       bytes, peer_expr(info, Side::recv), tag_expr(info, Side::recv), comm_expr(info)));
      close(opened);
      return;
    }
    const bool opened = open_if(present);
    std::vector<double> gap(static_cast<size_t>(a_.world_size), 0);
    std::vector<lt::Stat> gap_samples(gap.size());
    for (const lt::RankCall& c : e.ranks) {
      gap[static_cast<size_t>(c.rank)] =
          c.gap_ns.n == 0 ? 0 : o_.typical_gaps ? c.gap_typical.mean : c.gap_ns.mean;
      gap_samples[static_cast<size_t>(c.rank)] = c.gap_ns;
    }
    // The first call of a loop's body: in the first iteration its gap is the loop's entry gap,
    // replayed before the loop (looptree.h). In a scaled loop every iteration gets the mean
    // (one mean too many out of N, against a weight of N/run on a missing one).
    std::vector<bool> skip(static_cast<size_t>(a_.world_size), false);
    bool any_skip = false, all_skip = true;
    if (!loops_.empty() && !loops_.back().scaled) {
      for (const lt::RankCall& c : e.ranks) {
        const auto r = static_cast<size_t>(c.rank);
        if (!known_[r] || gap[r] <= 0) continue;
        skip[r] = loops_.back().entry[r] == e.id;
        any_skip = any_skip || skip[r];
        all_skip = all_skip && skip[r];
      }
    }
    if (!any_skip) {
      compute(gap, gap_samples, present, hint(e, "work"));
    } else {
      const std::string cond =
          all_skip ? fmt::format("{} > 0", loops_.back().var)
                   : fmt::format("{} > 0 || !{}", loops_.back().var,
                                 tables_.ints(hint(e, "entry"), std::vector<int64_t>(skip.begin(), skip.end()), present));
      line(fmt::format("if ({}) {{  /* iteration 0: the loop's entry gap instead */", cond));
      ++indent_;
      compute(gap, gap_samples, present, hint(e, "work"));
      --indent_;
      line("}");
    }
    if (info.fn == FunctionId::MPI_Finalize) {
      close(opened);
      return;
    }
    if (!info.skip.empty()) {
      std::vector<double> comm(static_cast<size_t>(a_.world_size), 0);
      std::vector<lt::Stat> comm_samples(comm.size());
      for (const lt::RankCall& c : e.ranks) {
        comm[static_cast<size_t>(c.rank)] = c.comm_ns.mean;
        comm_samples[static_cast<size_t>(c.rank)] = c.comm_ns;
      }
      line(fmt::format("/* {} not reproduced ({}): its time as compute */", lt::describe(e), info.skip));
      compute(comm, comm_samples, present, hint(e, "time"));
      substitutions.insert(fmt::format("{}: not reproduced ({}), replaced by compute of its duration",
                                       function_name(info.fn), info.skip));
      close(opened);
      return;
    }
    call(info, mode);
    close(opened);
  }

  void call(const EventInfo& info, Mode mode) {
    const lt::Event& e = *info.event;
    const std::string E = std::to_string(e.id);
    int64_t most = 0;
    switch (info.fn) {
      case FunctionId::MPI_Send:
      case FunctionId::MPI_Ssend:
      case FunctionId::MPI_Rsend:
      case FunctionId::MPI_Bsend: {
        const std::string bytes = bytes_expr(info, Side::send, 1, &most);
        need_send(most);
        const std::string args = fmt::format("pskel_sbuf, {}, MPI_BYTE, {}, {}, {}", bytes,
                                             peer_expr(info, Side::send), tag_expr(info, Side::send),
                                             comm_expr(info));
        if (mode == Mode::rewritten || mode == Mode::deferred) {
          const char* fn = info.fn == FunctionId::MPI_Ssend ? "MPI_Issend" : "MPI_Isend";
          line(fmt::format("CHK({}({}, {}()));", fn, args,
                           mode == Mode::deferred ? "pskel_deferred_request" : "pskel_group_request"));
        } else {
          if (info.fn == FunctionId::MPI_Bsend)
            bsend_ += most + 1024;  // MPI_BSEND_OVERHEAD is well below 1 KiB
          line(fmt::format("CHK({}({}));", function_name(info.fn), args));
        }
        return;
      }
      case FunctionId::MPI_Isend:
      case FunctionId::MPI_Issend:
      case FunctionId::MPI_Send_init: {
        const std::string bytes = bytes_expr(info, Side::send, 1, &most);
        need_send(most);
        line(fmt::format("CHK({}(pskel_sbuf, {}, MPI_BYTE, {}, {}, {}, {}({})));", function_name(info.fn),
                         bytes, peer_expr(info, Side::send), tag_expr(info, Side::send), comm_expr(info),
                         info.fn == FunctionId::MPI_Send_init ? "pskel_persistent" : "pskel_request", E));
        return;
      }
      case FunctionId::MPI_Irecv:
      case FunctionId::MPI_Recv_init: {
        const std::string bytes = bytes_expr(info, Side::recv, 1, &most);
        need_recv(most);
        line(fmt::format("CHK({}(pskel_rbuf, {}, MPI_BYTE, {}, {}, {}, {}({})));", function_name(info.fn),
                         bytes, peer_expr(info, Side::recv), tag_expr(info, Side::recv), comm_expr(info),
                         info.fn == FunctionId::MPI_Recv_init ? "pskel_persistent" : "pskel_request", E));
        return;
      }
      case FunctionId::MPI_Recv: {
        if (mode == Mode::rewritten) return;  // posted at the start of the group
        const std::string bytes = bytes_expr(info, Side::recv, 1, &most);
        need_recv(most);
        if (a_.replies && is_wildcard_receive(e))  // remembers the source it matched, for the replies
          line(fmt::format("CHK(pskel_recv(pskel_rbuf, {}, {}, {}, {}));", bytes, peer_expr(info, Side::recv),
                           tag_expr(info, Side::recv), comm_expr(info)));
        else
          line(fmt::format("CHK(MPI_Recv(pskel_rbuf, {}, MPI_BYTE, {}, {}, {}, MPI_STATUS_IGNORE));", bytes,
                           peer_expr(info, Side::recv), tag_expr(info, Side::recv), comm_expr(info)));
        return;
      }
      case FunctionId::MPI_Sendrecv:
      case FunctionId::MPI_Sendrecv_replace: {
        const bool replace = info.fn == FunctionId::MPI_Sendrecv_replace;
        const std::string sb = bytes_expr(info, Side::send, 1, &most);
        if (replace) need_recv(most);
        else need_send(most);
        if (mode == Mode::rewritten) {
          line(fmt::format("CHK(MPI_Isend(pskel_sbuf, {}, MPI_BYTE, {}, {}, {}, pskel_group_request()));", sb,
                           peer_expr(info, Side::send), tag_expr(info, Side::send), comm_expr(info)));
          need_send(most);
          return;
        }
        if (replace) {
          line(fmt::format("CHK(MPI_Sendrecv_replace(pskel_rbuf, {}, MPI_BYTE, {}, {}, {}, {}, {}, "
                           "MPI_STATUS_IGNORE));",
                           sb, peer_expr(info, Side::send), tag_expr(info, Side::send),
                           peer_expr(info, Side::recv), tag_expr(info, Side::recv), comm_expr(info)));
          return;
        }
        const std::string rb = bytes_expr(info, Side::recv, 1, &most);
        need_recv(most);
        line(fmt::format("CHK(MPI_Sendrecv(pskel_sbuf, {}, MPI_BYTE, {}, {}, pskel_rbuf, {}, MPI_BYTE, {}, {}, "
                         "{}, MPI_STATUS_IGNORE));",
                         sb, peer_expr(info, Side::send), tag_expr(info, Side::send), rb,
                         peer_expr(info, Side::recv), tag_expr(info, Side::recv), comm_expr(info)));
        return;
      }
      case FunctionId::MPI_Start: {
        std::vector<int64_t> ev(static_cast<size_t>(a_.world_size), 0), nth(ev.size(), 0);
        for (size_t j = 0; j < e.ranks.size(); ++j) {
          if (info.starts[j].empty()) continue;
          ev[static_cast<size_t>(e.ranks[j].rank)] = info.starts[j][0];
          nth[static_cast<size_t>(e.ranks[j].rank)] = info.start_nth[j][0];
        }
        line(fmt::format("CHK(MPI_Start(pskel_started({}, {})));", tables_.ints(hint(e, "starts"), ev, present_of(e)),
                         tables_.ints(hint(e, "starts_nth"), nth, present_of(e))));
        return;
      }
      case FunctionId::MPI_Startall: {
        const auto [n, list, width] = lists(info, info.starts, "starts");
        const auto nth = lists(info, info.start_nth, "starts_nth");
        line("{");
        ++indent_;
        line(fmt::format("MPI_Request r[{}];", std::max<size_t>(1, width)));
        line(fmt::format("for (int k = 0; k < {}; ++k)", n));
        line(fmt::format("    r[k] = *pskel_started({}[k], {}[k]);", list, nth.list));
        line(fmt::format("CHK(MPI_Startall({}, r));", n));
        --indent_;
        line("}");
        max_requests_ = std::max<int64_t>(max_requests_, static_cast<int64_t>(width));
        return;
      }
      case FunctionId::MPI_Request_free: {
        std::vector<int64_t> v(static_cast<size_t>(a_.world_size), 0);
        std::vector<std::vector<int64_t>> per(static_cast<size_t>(a_.world_size));
        bool varies = false;
        for (size_t j = 0; j < e.ranks.size(); ++j) {
          const auto& f = info.frees[j];
          for (uint32_t x : f) {
            per[static_cast<size_t>(e.ranks[j].rank)].push_back(x == kNoEvent ? 0 : x);
            varies = varies || x != f.front();
          }
          v[static_cast<size_t>(e.ranks[j].rank)] = f.empty() || f.front() == kNoEvent ? 0 : f.front();
        }
        if (varies)
          line(fmt::format("pskel_free_request({}[rank][{}]);", tables_.array2(hint(e, "frees"), "int", per),
                           index().plain));
        else
          line(fmt::format("pskel_free_request({});", tables_.ints(hint(e, "frees"), v, present_of(e))));
        return;
      }
      case FunctionId::MPI_Probe:
      case FunctionId::MPI_Iprobe: {
        const std::string args = fmt::format("{}, {}, {}", peer_expr(info, Side::recv),
                                             tag_expr(info, Side::recv), comm_expr(info));
        if (info.fn == FunctionId::MPI_Probe) {
          line(fmt::format("CHK(MPI_Probe({}, MPI_STATUS_IGNORE));", args));
        } else {
          line("{");
          line(fmt::format("    int flag;"));
          line(fmt::format("    CHK(MPI_Iprobe({}, &flag, MPI_STATUS_IGNORE));", args));
          line("}");
        }
        return;
      }
      default: break;
    }
    if (info.kind == FunctionKind::completion) return completion(info);
    if (info.kind == FunctionKind::comm) return communicator(info);
    if (info.kind == FunctionKind::collective || info.kind == FunctionKind::icollective)
      return collective(info);
    line(fmt::format("/* {}: not reproduced */", lt::describe(e)));
    substitutions.insert(fmt::format("{}: not reproduced", function_name(info.fn)));
  }

  struct Lists {
    std::string n, list;
    size_t width;
  };
  // Per-rank lists of event ids as (length expression, list expression).
  Lists lists(const EventInfo& info, const std::vector<std::vector<uint32_t>>& per, std::string_view what) {
    const lt::Event& e = *info.event;
    std::vector<std::vector<int64_t>> rows(static_cast<size_t>(a_.world_size));
    std::vector<int64_t> lengths(static_cast<size_t>(a_.world_size), 0);
    size_t width = 0;
    bool same = true;
    for (size_t j = 0; j < e.ranks.size(); ++j) {
      const auto r = static_cast<size_t>(e.ranks[j].rank);
      rows[r].assign(per[j].begin(), per[j].end());
      lengths[r] = static_cast<int64_t>(per[j].size());
      width = std::max(width, per[j].size());
      same = same && per[j] == per[0];
    }
    const std::vector<bool> present = present_of(e);
    if (width == 0) return {"0", "(const int *)0", 0};
    if (same) {
      const std::string t = tables_.array(hint(e, what), "int", rows[static_cast<size_t>(e.ranks[0].rank)]);
      return {std::to_string(width), t, width};
    }
    return {tables_.ints(hint(e, std::string(what) + "_n"), lengths, present),
            tables_.rows_per_rank(hint(e, what), "int", rows, present), width};
  }

  void completion(const EventInfo& info) {
    if (info.period <= 1) return completion_block(info, info.covers, "completes");
    line(fmt::format("switch (({}) % {}) {{  /* instances complete different requests in turn */",
                     index().plain, info.period));
    for (uint32_t k = 0; k < info.period; ++k) {
      std::vector<std::vector<uint32_t>> covers;
      for (const auto& phases : info.phase_covers) covers.push_back(phases[k]);
      line(fmt::format("case {}:", k));
      ++indent_;
      completion_block(info, covers, fmt::format("completes{}", k));
      line("break;");
      --indent_;
    }
    line("}");
  }

  void completion_block(const EventInfo& info, const std::vector<std::vector<uint32_t>>& covers,
                        std::string_view what) {
    const lt::Event& e = *info.event;
    std::vector<int64_t> passed(static_cast<size_t>(a_.world_size), 0);
    int64_t most = 1;
    for (size_t j = 0; j < e.ranks.size(); ++j) {
      passed[static_cast<size_t>(e.ranks[j].rank)] = info.passed[j];
      most = std::max(most, info.passed[j]);
    }
    const std::string p = tables_.ints(hint(e, "passed"), passed, present_of(e));
    const auto [n, list, width] = lists(info, covers, what);
    max_requests_ = std::max(max_requests_, most);
    line("{");
    ++indent_;
    line(fmt::format("MPI_Request r[{}];", most));
    line(fmt::format("pskel_take(r, {}, {}, {});", p, n, list));
    switch (info.fn) {
      case FunctionId::MPI_Wait: line("CHK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));"); break;
      case FunctionId::MPI_Waitall: line(fmt::format("CHK(MPI_Waitall({}, r, pskel_statuses));", p)); break;
      case FunctionId::MPI_Waitany:
        line("int index;");
        line(fmt::format("CHK(MPI_Waitany({}, r, &index, MPI_STATUS_IGNORE));", p));
        break;
      case FunctionId::MPI_Waitsome:
        line("int outcount;");
        line(fmt::format("CHK(MPI_Waitsome({}, r, &outcount, pskel_indices, pskel_statuses));", p));
        break;
      case FunctionId::MPI_Test:
        line("int flag;");
        line("CHK(MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE));");
        break;
      case FunctionId::MPI_Testall:
        line("int flag;");
        line(fmt::format("CHK(MPI_Testall({}, r, &flag, pskel_statuses));", p));
        break;
      case FunctionId::MPI_Testany:
        line("int index, flag;");
        line(fmt::format("CHK(MPI_Testany({}, r, &index, &flag, MPI_STATUS_IGNORE));", p));
        break;
      case FunctionId::MPI_Testsome:
        line("int outcount;");
        line(fmt::format("CHK(MPI_Testsome({}, r, &outcount, pskel_indices, pskel_statuses));", p));
        break;
      default: break;
    }
    line(fmt::format("pskel_give_back(r, {});", p));
    --indent_;
    line("}");
  }

  // ---- communicators ------------------------------------------------------------------------

  // Communicators the trace uses without a traced call that made them.
  void make_untraced_comms() {
    for (size_t c = 2; c < a_.comms.size(); ++c) {
      const Comm& comm = a_.comms[c];
      if (comm.inter || comm.made_by != kNoEvent) continue;
      std::vector<int64_t> color(static_cast<size_t>(a_.world_size), -1), key(static_cast<size_t>(a_.world_size), 0);
      for (size_t i = 0; i < comm.members.size(); ++i) {
        color[static_cast<size_t>(comm.members[i])] = static_cast<int64_t>(c);
        key[static_cast<size_t>(comm.members[i])] = static_cast<int64_t>(i);
      }
      const std::vector<bool> all(static_cast<size_t>(a_.world_size), true);
      line(fmt::format("pskel_make_comm({}, {}, {});  /* made by a call pskel does not trace */", c,
                       tables_.ints(fmt::format("comm{}_color", c), color, all),
                       tables_.ints(fmt::format("comm{}_key", c), key, all)));
    }
  }

  void split(const EventInfo& info, const std::string& parent, const std::string& out) {
    const lt::Event& e = *info.event;
    std::vector<int64_t> color(static_cast<size_t>(a_.world_size), kTokUndefined),
        key(static_cast<size_t>(a_.world_size), 0);
    for (size_t j = 0; j < e.ranks.size(); ++j) {
      const int32_t r = e.ranks[j].rank;
      const int c = info.new_comm[j];
      if (c < 0) continue;
      color[static_cast<size_t>(r)] = c;
      key[static_cast<size_t>(r)] = a_.comms[static_cast<size_t>(c)].local(r);
    }
    line(fmt::format("CHK(MPI_Comm_split({}, {}, {}, {}));", parent,
                     tables_.ints(hint(e, "color"), color, present_of(e)),
                     tables_.ints(hint(e, "key"), key, present_of(e)), out));
  }

  // A call in a loop that makes a different communicator each time: per-instance tables.
  void split_per_instance(const EventInfo& info, const std::string& parent) {
    const lt::Event& e = *info.event;
    std::vector<std::vector<int64_t>> made(static_cast<size_t>(a_.world_size)), key(made.size());
    for (size_t j = 0; j < e.ranks.size(); ++j) {
      const auto r = static_cast<size_t>(e.ranks[j].rank);
      for (int c : info.made[j]) {
        made[r].push_back(c);
        key[r].push_back(c < 0 ? 0 : a_.comms[static_cast<size_t>(c)].local(static_cast<int32_t>(r)));
      }
    }
    const std::string at = index().plain;
    const std::string m = tables_.array2(hint(e, "made"), "int", made) + "[rank][" + at + "]";
    line("{");
    ++indent_;
    line(fmt::format("const int made = {};", m));
    if (info.fn == FunctionId::MPI_Comm_dup) {
      line(fmt::format("CHK(MPI_Comm_dup({}, pskel_comm_out(made)));", parent));
    } else {
      if (info.fn != FunctionId::MPI_Comm_split)
        substitutions.insert(fmt::format("{} in a loop: made with MPI_Comm_split (same members and order)",
                                         function_name(info.fn)));
      line(fmt::format("CHK(MPI_Comm_split({}, made < 0 ? MPI_UNDEFINED : made, {}[rank][{}], pskel_comm_out(made)));",
                       parent, tables_.array2(hint(e, "key"), "int", key), at));
    }
    --indent_;
    line("}");
  }

  // For a communicator made by MPI_Cart_create: a 2-D grid {rows, columns} and, per
  // MPI_Cart_sub of it, the dimension kept, inferred from the members of what the subs made
  // (rows: blocks of consecutive ranks; columns: ranks a row length apart).
  struct Grid {
    int rows = 0, cols = 0;
    std::map<uint32_t, int> keep;  // Cart_sub event -> 1: keep columns (rows of the grid), 0: keep rows
  };
  std::optional<Grid> infer_grid(int cart) const {
    const auto& members = a_.comms[static_cast<size_t>(cart)].members;
    const int n = static_cast<int>(members.size());
    Grid g;
    for (const EventInfo& sub : a_.events) {
      if (sub.event == nullptr || sub.fn != FunctionId::MPI_Cart_sub) continue;
      if (sub.comm.empty() || sub.comm[0] != cart) continue;
      std::set<int> made;
      for (const auto& per : sub.made)
        for (int c : per)
          if (c >= 0) made.insert(c);
      if (made.empty()) return std::nullopt;
      int size = -1;
      bool blocks = true, strided = true;
      for (int c : made) {
        std::vector<int> local;
        for (int32_t w : a_.comms[static_cast<size_t>(c)].members)
          local.push_back(a_.comms[static_cast<size_t>(cart)].local(w));
        if (size < 0) size = static_cast<int>(local.size());
        if (static_cast<int>(local.size()) != size || size == 0 || n % size != 0) return std::nullopt;
        for (int i = 0; i < size; ++i) {
          blocks = blocks && local[static_cast<size_t>(i)] == local[0] + i && local[0] % size == 0;
          strided = strided && local[static_cast<size_t>(i)] == local[0] + i * (n / size) && local[0] < n / size;
        }
      }
      // Rows of `size` (keep the second dimension) or columns of `size` (keep the first).
      const int rows = blocks ? n / size : size, cols = blocks ? size : n / size;
      if (!blocks && !strided) return std::nullopt;
      if (g.rows != 0 && (g.rows != rows || g.cols != cols)) return std::nullopt;
      g.rows = rows;
      g.cols = cols;
      g.keep[sub.event->id] = blocks ? 1 : 0;
    }
    if (g.rows == 0) {  // no sub of it: a 1-D grid
      g.rows = 1;
      g.cols = n;
    }
    return g;
  }

  void communicator(const EventInfo& info) {
    const lt::Event& e = *info.event;
    const std::string parent = comm_expr(info);
    if (info.fn == FunctionId::MPI_Comm_free) {
      line(fmt::format("CHK(MPI_Comm_free(&{}));", parent));
      return;
    }
    bool varies = false;
    for (const auto& per : info.made)
      for (int c : per) varies = varies || c != per.front();
    if (varies) return split_per_instance(info, parent);
    std::vector<int64_t> made(static_cast<size_t>(a_.world_size), -1);
    for (size_t j = 0; j < e.ranks.size(); ++j) made[static_cast<size_t>(e.ranks[j].rank)] = info.new_comm[j];
    const std::string out = "pskel_comm_out(" + tables_.ints(hint(e, "made"), made, present_of(e)) + ")";
    const int pc = info.comm.empty() ? 0 : std::max(info.comm[0], 0);
    const std::vector<int32_t>& parent_members = a_.comms[static_cast<size_t>(pc)].members;
    std::set<int> made_set;
    for (int c : info.new_comm)
      if (c >= 0) made_set.insert(c);
    switch (info.fn) {
      case FunctionId::MPI_Comm_split: split(info, parent, out); return;
      case FunctionId::MPI_Comm_dup: line(fmt::format("CHK(MPI_Comm_dup({}, {}));", parent, out)); return;
      case FunctionId::MPI_Comm_create: {
        std::vector<std::vector<int64_t>> rows(static_cast<size_t>(a_.world_size));
        std::vector<int64_t> lengths(static_cast<size_t>(a_.world_size), 0);
        const Comm* only = made_set.size() == 1 ? &a_.comms[static_cast<size_t>(*made_set.begin())] : nullptr;
        for (size_t j = 0; j < e.ranks.size(); ++j) {
          const auto r = static_cast<size_t>(e.ranks[j].rank);
          const Comm* c = info.new_comm[j] >= 0 ? &a_.comms[static_cast<size_t>(info.new_comm[j])] : only;
          if (c == nullptr) continue;
          rows[r].assign(c->members.begin(), c->members.end());
          lengths[r] = static_cast<int64_t>(c->members.size());
        }
        bool same = true;
        for (size_t j = 1; j < e.ranks.size(); ++j)
          same = same && rows[static_cast<size_t>(e.ranks[j].rank)] == rows[static_cast<size_t>(e.ranks[0].rank)];
        std::string n, list;
        if (same) {
          const auto& row = rows[static_cast<size_t>(e.ranks[0].rank)];
          n = std::to_string(row.size());
          list = row.empty() ? "(const int *)0" : tables_.array(hint(e, "members"), "int", row);
        } else {
          n = tables_.ints(hint(e, "members_n"), lengths, present_of(e));
          list = tables_.array2(hint(e, "members"), "int", rows) + "[rank]";
        }
        line("{");
        ++indent_;
        line(fmt::format("MPI_Group g = pskel_group({}, {});", n, list));
        line(fmt::format("CHK(MPI_Comm_create({}, g, {}));", parent, out));
        line("MPI_Group_free(&g);");
        --indent_;
        line("}");
        return;
      }
      case FunctionId::MPI_Cart_create: {
        // Reproducible (without reordering) when the grid is the parent's first ranks.
        bool prefix = made_set.size() == 1;
        std::optional<Grid> grid;
        if (prefix) {
          const auto& m = a_.comms[static_cast<size_t>(*made_set.begin())].members;
          prefix = m.size() <= parent_members.size() && std::equal(m.begin(), m.end(), parent_members.begin());
          if (prefix) grid = infer_grid(*made_set.begin());
        }
        if (grid) {
          grids_[*made_set.begin()] = *grid;
          line(fmt::format("CHK(MPI_Cart_create({}, 2, (int[]){{{}, {}}}, (int[]){{0, 0}}, 0, {}));", parent,
                           grid->rows, grid->cols, out));
        } else {
          substitutions.insert("MPI_Cart_create: made with MPI_Comm_split (same members and order)");
          split(info, parent, out);
        }
        return;
      }
      case FunctionId::MPI_Cart_sub: {
        const auto g = grids_.find(pc);
        const Grid* grid = g == grids_.end() ? nullptr : &g->second;
        const auto keep = grid ? grid->keep.find(e.id) : std::map<uint32_t, int>::const_iterator{};
        if (grid && keep != grid->keep.end()) {
          line(fmt::format("CHK(MPI_Cart_sub({}, (int[]){{{}, {}}}, {}));", parent, 1 - keep->second,
                           keep->second, out));
        } else {
          substitutions.insert("MPI_Cart_sub: made with MPI_Comm_split (same members and order)");
          split(info, parent, out);
        }
        return;
      }
      default: break;
    }
  }

  // ---- collectives --------------------------------------------------------------------------

  // The participant whose sizes stand for all (counts must agree on every rank): the first
  // that did not pass MPI_IN_PLACE.
  size_t reference(const EventInfo& info) const {
    for (size_t j = 0; j < info.event->ranks.size(); ++j)
      if ((info.flags[j] & tr::kFlagInPlace) == 0) return j;
    return 0;
  }

  std::string shared_count(const EventInfo& info, size_t ref, int64_t divisor, int64_t* largest,
                           std::string_view what) {
    const lt::RankCall& c = info.event->ranks[ref];
    if (largest) *largest = rule_max(c.send_bytes, info.event->instances);
    std::vector<const lt::Rule*> rules(static_cast<size_t>(a_.world_size), nullptr);
    for (const lt::RankCall& x : info.event->ranks) rules[static_cast<size_t>(x.rank)] = &c.send_bytes;
    return tables_.rules(hint(*info.event, what), rules, index(), divisor, notes);
  }

  std::string request_arg(const EventInfo& info) const {
    return info.kind == FunctionKind::icollective ? fmt::format(", pskel_request({})", info.event->id) : "";
  }

  // v-collective counts: per rank a list of bytes per peer (from the sample's aux words), as
  // (counts expression, displacements expression, total of the largest row).
  struct VCounts {
    std::string counts, displs;
    int64_t total = 0;
  };
  VCounts vcounts(const EventInfo& info, const std::vector<std::vector<int64_t>>& rows,
                  std::string_view what) {
    const lt::Event& e = *info.event;
    std::vector<std::vector<int64_t>> displs(rows.size());
    VCounts out;
    bool same = true;
    const auto& first = rows[static_cast<size_t>(e.ranks[0].rank)];
    for (size_t r = 0; r < rows.size(); ++r) {
      int64_t at = 0;
      for (int64_t c : rows[r]) {
        displs[r].push_back(at);
        at += c;
      }
      out.total = std::max(out.total, at);
    }
    for (const lt::RankCall& c : e.ranks) same = same && rows[static_cast<size_t>(c.rank)] == first;
    if (same) {
      out.counts = tables_.array(hint(e, what), "int", first.empty() ? std::vector<int64_t>{0} : first);
      out.displs = tables_.array(hint(e, std::string(what) + "_displs"), "int",
                                 first.empty() ? std::vector<int64_t>{0} : displs[static_cast<size_t>(e.ranks[0].rank)]);
    } else {
      out.counts = tables_.array2(hint(e, what), "int", rows) + "[rank]";
      out.displs = tables_.array2(hint(e, std::string(what) + "_displs"), "int", displs) + "[rank]";
    }
    return out;
  }

  // Count list `which` (0: send, 1: receive) of a v-collective sample, in bytes.
  std::vector<int64_t> count_list(const EventInfo& info, size_t j, int which) const {
    const std::vector<int64_t>& aux = info.count_lists[j];
    std::vector<std::vector<int64_t>> lists;
    size_t at = 0;
    while (at < aux.size()) {
      const int64_t n = aux[at++];
      std::vector<int64_t> l;
      for (int64_t k = 0; k < n && at < aux.size(); ++k) l.push_back(aux[at++]);
      lists.push_back(l);
    }
    // Alltoallv in place writes [0, 0, n, counts]: two empty lists first.
    if (lists.size() == 3 && lists[0].empty() && lists[1].empty()) lists.erase(lists.begin());
    std::vector<int64_t> out;
    const bool recv_list = which == 1;
    const auto fn = info.fn;
    size_t pick = 0;
    if (fn == FunctionId::MPI_Alltoallv) pick = recv_list ? 1 : 0;
    else if (fn == FunctionId::MPI_Scatterv) pick = 0;
    else pick = 1;  // Allgatherv, Gatherv, Reduce_scatter: [0] [n, recvcounts]
    if (pick >= lists.size()) return out;
    const uint32_t size = recv_list || fn == FunctionId::MPI_Allgatherv || fn == FunctionId::MPI_Gatherv ||
                                  fn == FunctionId::MPI_Reduce_scatter
                              ? (info.recv_type_size[j] ? info.recv_type_size[j] : info.type_size[j])
                              : info.type_size[j];
    for (int64_t c : lists[pick]) out.push_back(c * static_cast<int64_t>(size));
    return out;
  }

  void collective(const EventInfo& info) {
    const lt::Event& e = *info.event;
    const std::string comm = comm_expr(info);
    const int64_t n = max_comm_size(info);
    const std::string req = request_arg(info);
    int64_t most = 0, most_r = 0;
    switch (info.fn) {
      case FunctionId::MPI_Barrier:
        line(fmt::format("CHK(MPI_Barrier({}));", comm));
        return;
      case FunctionId::MPI_Ibarrier:
        line(fmt::format("CHK(MPI_Ibarrier({}{}));", comm, req));
        return;
      case FunctionId::MPI_Bcast:
      case FunctionId::MPI_Ibcast: {
        const std::string b = shared_count(info, reference(info), 1, &most, "bytes");
        need_recv(most);
        line(fmt::format("CHK({}(pskel_rbuf, {}, MPI_BYTE, {}, {}{}));", function_name(info.fn), b,
                         root_expr(info), comm, req));
        return;
      }
      case FunctionId::MPI_Reduce:
      case FunctionId::MPI_Ireduce:
      case FunctionId::MPI_Allreduce:
      case FunctionId::MPI_Iallreduce:
      case FunctionId::MPI_Scan:
      case FunctionId::MPI_Exscan:
      case FunctionId::MPI_Reduce_scatter_block: {
        const size_t ref = reference(info);
        const Reduction t = reduction_type(e.op, info.type_size[ref]);
        if (static_cast<tr::Op>(e.op) == tr::Op::user || static_cast<tr::Op>(e.op) == tr::Op::replace)
          substitutions.insert("user-defined or unusual reduction op: MPI_SUM instead");
        if ((info.flags[ref] & tr::kFlagInPlace) != 0)
          notes.push_back(fmt::format("{}: every rank passed MPI_IN_PLACE, whose size the trace does not "
                                      "record: an empty reduction stands for it", lt::describe(e)));
        const std::string count = shared_count(info, ref, t.elem, &most, "count");
        const int64_t bytes = (most + t.elem - 1) / t.elem * t.elem;
        const bool scatter = info.fn == FunctionId::MPI_Reduce_scatter_block;
        need_send(scatter ? bytes * n : bytes);
        need_recv(bytes);
        const std::string sbuf = in_place_or(info, "pskel_sbuf");
        const std::string head = fmt::format("{}, pskel_rbuf, {}, {}, {}", sbuf, count, t.type, op_name(e.op));
        if (info.fn == FunctionId::MPI_Reduce || info.fn == FunctionId::MPI_Ireduce)
          line(fmt::format("CHK({}({}, {}, {}{}));", function_name(info.fn), head, root_expr(info), comm, req));
        else
          line(fmt::format("CHK({}({}, {}{}));", function_name(info.fn), head, comm, req));
        return;
      }
      case FunctionId::MPI_Reduce_scatter: {
        const uint32_t size = info.type_size[0] ? info.type_size[0] : info.recv_type_size[0];
        const Reduction t = reduction_type(e.op, size);
        std::vector<int64_t> bytes = count_list(info, 0, 1);
        std::vector<int64_t> counts;
        int64_t total = 0;
        for (int64_t b : bytes) {
          counts.push_back((b + t.elem - 1) / t.elem);
          total += counts.back() * t.elem;
        }
        if (counts.empty()) counts.push_back(0);
        need_send(total);
        need_recv(total);
        line(fmt::format("CHK(MPI_Reduce_scatter({}, pskel_rbuf, {}, {}, {}, {}));", in_place_or(info, "pskel_sbuf"),
                         tables_.array(hint(e, "counts"), "int", counts), t.type, op_name(e.op), comm));
        return;
      }
      case FunctionId::MPI_Alltoall:
      case FunctionId::MPI_Ialltoall:
      case FunctionId::MPI_Allgather:
      case FunctionId::MPI_Iallgather:
      case FunctionId::MPI_Gather:
      case FunctionId::MPI_Scatter: {
        const std::string sb = bytes_expr(info, Side::send, 1, &most);
        const std::string rb = bytes_expr(info, Side::recv, 1, &most_r);
        const bool all_to_all = info.fn == FunctionId::MPI_Alltoall || info.fn == FunctionId::MPI_Ialltoall;
        const bool root_sends = info.fn == FunctionId::MPI_Scatter;
        need_send(all_to_all || root_sends ? most * n : most);
        need_recv(all_to_all || !root_sends ? most_r * n : most_r);
        const std::string head = fmt::format("{}, {}, MPI_BYTE, pskel_rbuf, {}, MPI_BYTE",
                                             in_place_or(info, "pskel_sbuf"), sb, rb);
        if (info.fn == FunctionId::MPI_Gather || info.fn == FunctionId::MPI_Scatter)
          line(fmt::format("CHK({}({}, {}, {}));", function_name(info.fn), head, root_expr(info), comm));
        else
          line(fmt::format("CHK({}({}, {}{}));", function_name(info.fn), head, comm, req));
        return;
      }
      case FunctionId::MPI_Alltoallv: {
        std::vector<std::vector<int64_t>> s(static_cast<size_t>(a_.world_size)), r(s.size());
        for (size_t j = 0; j < e.ranks.size(); ++j) {
          s[static_cast<size_t>(e.ranks[j].rank)] = count_list(info, j, 0);
          r[static_cast<size_t>(e.ranks[j].rank)] = count_list(info, j, 1);
        }
        const VCounts sc = vcounts(info, s, "scounts");
        const VCounts rc = vcounts(info, r, "rcounts");
        need_send(sc.total);
        need_recv(rc.total);
        line(fmt::format("CHK(MPI_Alltoallv({}, {}, {}, MPI_BYTE, pskel_rbuf, {}, {}, MPI_BYTE, {}));",
                         in_place_or(info, "pskel_sbuf"), sc.counts, sc.displs, rc.counts, rc.displs, comm));
        return;
      }
      case FunctionId::MPI_Allgatherv:
      case FunctionId::MPI_Gatherv: {
        std::vector<std::vector<int64_t>> r(static_cast<size_t>(a_.world_size));
        // Gatherv: only the root has the list; every rank passes the root's.
        std::vector<int64_t> root_list;
        for (size_t j = 0; j < e.ranks.size(); ++j) {
          r[static_cast<size_t>(e.ranks[j].rank)] = count_list(info, j, 1);
          if (root_list.empty()) root_list = r[static_cast<size_t>(e.ranks[j].rank)];
        }
        if (info.fn == FunctionId::MPI_Gatherv)
          for (const lt::RankCall& c : e.ranks) r[static_cast<size_t>(c.rank)] = root_list;
        const VCounts rc = vcounts(info, r, "rcounts");
        const std::string sb = bytes_expr(info, Side::send, 1, &most);
        need_send(most);
        need_recv(rc.total);
        const std::string head = fmt::format("{}, {}, MPI_BYTE, pskel_rbuf, {}, {}, MPI_BYTE",
                                             in_place_or(info, "pskel_sbuf"), sb, rc.counts, rc.displs);
        if (info.fn == FunctionId::MPI_Gatherv)
          line(fmt::format("CHK(MPI_Gatherv({}, {}, {}));", head, root_expr(info), comm));
        else
          line(fmt::format("CHK(MPI_Allgatherv({}, {}));", head, comm));
        return;
      }
      case FunctionId::MPI_Scatterv: {
        std::vector<int64_t> root_list;
        for (size_t j = 0; j < e.ranks.size() && root_list.empty(); ++j) root_list = count_list(info, j, 0);
        std::vector<std::vector<int64_t>> s(static_cast<size_t>(a_.world_size));
        for (const lt::RankCall& c : e.ranks) s[static_cast<size_t>(c.rank)] = root_list;
        const VCounts sc = vcounts(info, s, "scounts");
        const std::string rb = bytes_expr(info, Side::recv, 1, &most_r);
        need_send(sc.total);
        need_recv(most_r);
        line(fmt::format("CHK(MPI_Scatterv(pskel_sbuf, {}, {}, MPI_BYTE, pskel_rbuf, {}, MPI_BYTE, {}, {}));",
                         sc.counts, sc.displs, rb, root_expr(info), comm));
        return;
      }
      default:
        line(fmt::format("/* {}: not reproduced */", lt::describe(e)));
        substitutions.insert(fmt::format("{}: not reproduced", function_name(info.fn)));
        return;
    }
  }

  // ---- the file -----------------------------------------------------------------------------

  std::string assemble() {
    const auto& meta = trace_.meta;
    const std::string mpi = meta.is_object() && meta.contains("mpi") && meta["mpi"].is_string()
                                ? meta["mpi"].get<std::string>()
                                : "unknown";
    bool thread = false;
    for (const lt::Item& it : tree_.items)
      if (!it.is_loop() && it.event().function == static_cast<uint16_t>(FunctionId::MPI_Init_thread))
        thread = true;
    const std::string& name = o_.name;
    std::string out;
    out += fmt::format("/* Performance skeleton of {}\n", comment_text(name.empty() ? trace_.dir : name));
    out += fmt::format(" * traced: {} ranks, MPI {}, {:.3f} s from the first call to the last (slowest rank)\n",
                       a_.world_size, comment_text(mpi), s_.traced_seconds);
    if (s_.scale > 1) {
      out += fmt::format(" * scale K = {}: the loops marked \"scaled loop\" run 1/K of their iterations and\n",
                         s_.scale);
      out += " * compute outside them runs 1/K of its work; the runtime weights each part back\n";
      out += fmt::format(" * (skeleton.json says what was scaled; estimated run {:.3f} s)\n",
                         s_.estimated_skeleton_seconds);
    } else {
      out += " * scale K = 1: the whole run is replayed\n";
    }
    out += " * Compute between calls is calibrated work (pskel_work units, from the trace's\n";
    out += " * work_ns_per_unit); messages carry the traced sizes in MPI_BYTE (reductions: a\n";
    out += " * datatype of the traced element size). Generated by pskel; see docs/skeleton.md.\n";
    out += " */\n#include \"pskel_runtime.h\"\n\n";
    out += tables_.declarations();
    if (memory_.any()) {
      out += "\n/* Per rank: share of each gap streamed through memory, working set bytes, traced ns\n";
      out += " * per work unit and per streamed byte (skeleton.json: memory) */\n";
      out += fmt::format("static const double pskel_memory[{}][4] = {{\n", a_.world_size);
      for (size_t r = 0; r < static_cast<size_t>(a_.world_size); ++r)
        out += fmt::format("    {{{}, {}, {}, {}}},\n", literal(memory_.share[r]),
                           literal(std::floor(memory_.working_set_bytes[r])),
                           literal(a_.ns_per_unit[r]), literal(memory_.ns_per_byte[r]));
      out += "};\n";
    }
    out += "\nint main(int argc, char **argv)\n{\n";
    out += "    static const struct pskel_config config = {\n";
    out += fmt::format("        .name = {},\n", string_literal(name.empty() ? "skeleton" : name));
    out += fmt::format("        .world_size = {},\n", a_.world_size);
    out += fmt::format("        .init_thread = {},\n", thread ? 1 : 0);
    out += fmt::format("        .scale = {},\n", literal(static_cast<double>(s_.scale)));
    out += fmt::format("        .send_bytes = {},\n", std::max<int64_t>(1, max_send_));
    out += fmt::format("        .recv_bytes = {},\n", std::max<int64_t>(1, max_recv_));
    out += fmt::format("        .bsend_bytes = {},\n", bsend_ > 0 ? bsend_ * 2 + 65536 : 0);
    out += fmt::format("        .events = {},\n", std::max<size_t>(1, a_.events.size()));
    out += fmt::format("        .comms = {},\n", std::max<size_t>(2, a_.comms.size()));
    out += fmt::format("        .max_requests = {},\n", std::max<int64_t>(1, max_requests_));
    if (memory_.any()) {
      out += "        .memory = pskel_memory,\n";
      out += fmt::format("        .stream_kind = {},\n", memory_.stream_reads_only
                                                             ? "PSKEL_STREAM_READ"
                                                             : "PSKEL_STREAM_READ_WRITE");
    }
    out += "    };\n";
    out += "    pskel_begin(&argc, &argv, &config);\n";
    out += "    const int rank = pskel_rank, size = pskel_size;\n";
    out += "    (void)rank;\n    (void)size;\n\n";
    out += code_;
    out += "    return pskel_end();\n}\n";
    return out;
  }

  const tr::TraceSet& trace_;
  const lt::LoopTree& tree_;
  const Analysis& a_;
  const Scaling& s_;
  const Options& o_;
  const MemoryPlan memory_;
  Tables tables_;
  double noise_ = -1;  // noise(), once computed
  std::vector<bool> known_;
  std::vector<std::vector<bool>> saved_known_;
  std::vector<LoopCtx> loops_;
  std::map<int, Grid> grids_;   // communicators made as 2-D grids
  std::string code_;
  int indent_ = 1;
  int loop_counter_ = 0;
  bool in_scaled_ = false;
  int64_t max_send_ = 0, max_recv_ = 0, bsend_ = 0, max_requests_ = 1;
};

// Above this share of a rank's compute left out as bursts, the trace is too disturbed to trust
// without a word: the typical gaps are an estimate of an undisturbed run, not a measurement.
constexpr double kDisturbedShare = 0.05;

// skeleton.json's "trace_noise": what the typical gaps left out on each disturbed rank
// (looptree.h), the largest share of a rank's compute left out, and
// a warning when a rank lost too much of its compute to bursts.
nlohmann::json trace_noise(const lt::LoopTree& tree, std::vector<std::string>& warnings) {
  nlohmann::json ranks = nlohmann::json::array();
  double worst = 0;
  int32_t worst_rank = -1;
  for (const lt::RankDisturbance& d : lt::disturbance(tree)) {
    const double share = d.compute_ns > 0 ? d.left_out_ns / d.compute_ns : 0;
    if (d.bursts == 0) continue;  // only the disturbed ranks: a job may have thousands
    ranks.push_back({{"rank", d.rank},
                     {"judged_compute_seconds", d.compute_ns * 1e-9},
                     {"left_out_seconds", d.left_out_ns * 1e-9},
                     {"bursts", d.bursts}});
    if (share > worst) {
      worst = share;
      worst_rank = d.rank;
    }
  }
  if (worst > kDisturbedShare)
    warnings.push_back(fmt::format(
        "the traced run was disturbed: bursts of interference made {:.1f} % of rank {}'s compute "
        "(left out of the skeleton, unless --gaps mean); a trace taken on a quieter node is more "
        "trustworthy",
        100 * worst, worst_rank));
  return {{"left_out_share", worst}, {"ranks", ranks}};
}

std::string loop_text(const lt::Loop& loop) {
  return "( " + describe_items(loop.body, 0, loop.body.size()) + fmt::format(" )^{}", loop.iterations);
}

}  // namespace
}  // namespace detail

namespace {

Result<Skeleton> generate_from(const trace::TraceSet& trace, const looptree::LoopTree& tree,
                               Result<detail::Analysis> analysed, const Options& options) {
  if (!analysed) return analysed.error();
  detail::Analysis& a = analysed.value();
  detail::plan_groups(tree, a);
  const detail::Scaling scaling = detail::choose_scaling(
      tree, a, std::max<int64_t>(1, options.scale), options.auto_scale, options.target_fraction,
      options.min_seconds);

  detail::Emitter emitter(trace, tree, a, scaling, options);
  Skeleton out;
  out.scale = scaling.scale;
  out.source = emitter.run();

  nlohmann::json loops = nlohmann::json::array();
  std::vector<std::string> warnings = a.warnings;
  for (const detail::ScaledLoop& s : scaling.loops) {
    loops.push_back({{"loop", detail::loop_text(*s.loop)},
                     {"mode", s.by_work ? "work" : "iterations"},
                     {"iterations", s.loop->iterations},
                     {"run_iterations", s.run},
                     {"executions", s.loop->executions},
                     {"factor", s.factor},
                     {"traced_seconds", s.seconds}});
    if (s.by_work)
      warnings.push_back(fmt::format(
          "scale {0}: a loop of {1} iterations (fewer than {2} x {0}) runs all of them, each "
          "with 1/{0} of its compute: one iteration weighted by {1} would multiply what only a "
          "first iteration costs",
          scaling.scale, s.loop->iterations, detail::kMinRunIterations));
  }
  nlohmann::json comms = nlohmann::json::array();
  for (size_t c = 0; c < a.comms.size(); ++c) {
    if (c < 2) continue;
    comms.push_back({{"index", c},
                     {"members", a.comms[c].members},
                     {"made_by_traced_call", a.comms[c].made_by != detail::kNoEvent},
                     {"reproduced", !a.comms[c].inter},
                     {"tags_vary", static_cast<bool>(a.comm_tags_vary[c])}});
  }
  std::vector<std::string> wildcarded;
  for (size_t c = 0; c < a.comms.size(); ++c)
    if (a.comm_tags_vary[c]) wildcarded.push_back(c == 0 ? "MPI_COMM_WORLD" : fmt::format("communicator {}", c));
  if (scaling.scale > 1 && scaling.loops.empty())
    warnings.push_back(fmt::format(
        "scale {}: no loop could be scaled (none whose iterations each complete their messages "
        "and collectives); the skeleton replays the whole run",
        scaling.scale));
  warnings.insert(warnings.end(), emitter.notes.begin(), emitter.notes.end());
  const nlohmann::json noise = detail::trace_noise(tree, warnings);
  bool complete = true;
  for (const trace::RankTrace& rt : trace.ranks) complete = complete && rt.complete;
  const looptree::MainLoop main = looptree::main_loop(tree);
  out.description = {
      {"scale", scaling.scale},
      {"scale_mode", options.auto_scale ? "auto" : "fixed"},
      {"ranks", a.world_size},
      {"mpi", trace.meta.is_object() && trace.meta.contains("mpi") ? trace.meta["mpi"] : nlohmann::json("unknown")},
      {"trace_dir", trace.dir},
      {"partial", !complete},
      {"traced_seconds", scaling.traced_seconds},
      {"scaled_traced_seconds", scaling.scaled_seconds},
      {"estimated_skeleton_seconds", scaling.estimated_skeleton_seconds},
      {"main_loop", main.loop ? nlohmann::json{{"iterations", main.loop->iterations},
                                               {"run_iterations",
                                                scaling.find(main.loop) ? scaling.find(main.loop)->run
                                                                        : main.loop->iterations}}
                              : nlohmann::json(nullptr)},
      {"scaled_loops", loops},
      {"rewritten_groups", emitter.rewritten},
      {"reordered_groups", emitter.reordered},
      {"receives_with_any_tag", wildcarded},
      {"communicators", comms},
      {"substitutions", std::vector<std::string>(emitter.substitutions.begin(), emitter.substitutions.end())},
      {"warnings", warnings},
      {"work_ns_per_unit", a.ns_per_unit},
      {"trace_noise", noise},
      {"memory", {{"footprint_bytes", emitter.memory().footprint_bytes},
                  {"stream_ns_per_byte", emitter.memory().ns_per_byte},
                  {"share", emitter.memory().share},
                  {"working_set_bytes", emitter.memory().working_set_bytes},
                  {"stream_kind", emitter.memory().stream_reads_only ? trace::kStreamRead : trace::kStreamReadWrite}}},
      {"gaps", options.typical_gaps ? "typical" : "mean"},
      {"events", a.events.size()},
  };
  return out;
}

}  // namespace

struct Generator::State {
  State(const trace::TraceSet& trace, const merge::MergedTrace& merged,
        const looptree::LoopTree& tree)
      : trace(trace), tree(tree), analysis(trace, merged, tree) {}
  const trace::TraceSet& trace;
  const looptree::LoopTree& tree;
  detail::AnalysisBuilder analysis;
};

Generator::Generator(const trace::TraceSet& trace, const merge::MergedTrace& merged,
                     const looptree::LoopTree& tree)
    : state_(std::make_unique<State>(trace, merged, tree)) {}
Generator::~Generator() = default;

void Generator::add(const trace::RankTrace& rank) { state_->analysis.add(rank); }

Result<Skeleton> Generator::finish(const Options& options) {
  return generate_from(state_->trace, state_->tree, state_->analysis.finish(), options);
}

Result<Skeleton> generate(const trace::TraceSet& trace, const merge::MergedTrace& merged,
                          const looptree::LoopTree& tree, const Options& options) {
  Generator generator(trace, merged, tree);
  for (const trace::RankTrace& rank : trace.ranks) generator.add(rank);
  return generator.finish(options);
}

}  // namespace pskel::skeleton

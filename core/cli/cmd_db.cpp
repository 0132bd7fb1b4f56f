// pskel db list|show|forget|export and pskel report: the store (core/store) seen by an
// administrator or a user. Exit codes: 0 ok, 1 bad input (unknown application, unreadable
// store), 2 usage. list, show and report open the store read-only: looking at a damaged store
// must leave it as it is. Stored text came from users (names, paths, error messages): it is
// printed through one_line (text) or json_text (JSON), never as raw bytes.
#include <fmt/format.h>
#include <pwd.h>

#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "config/config.h"
#include "export/export.h"
#include "guard/heartbeat.h"
#include "report/report.h"
#include "store/store.h"
#include "util/json_text.h"
#include "util/text.h"
#include "worker/worker.h"

namespace pskel::cli {
namespace {

struct DbOptions {
  std::string conf;
  std::string db;
  std::string user;
  bool json = false;
};

void add_common(CLI::App* cmd, DbOptions& o, bool with_user = true) {
  cmd->add_option("--conf", o.conf, "pskel.conf (default: $PSKEL_CONF or the installed one)");
  cmd->add_option("--db", o.db, "The store's database (default: Database in pskel.conf)");
  if (with_user) cmd->add_option("--user", o.user, "Only this user's applications (name or uid)");
  cmd->add_flag("--json", o.json, "Print JSON");
}

struct Opened {
  config::Config conf;
  store::Store store;
  std::optional<uint32_t> uid;
};

Result<Opened> open_store(const DbOptions& o, store::Access access) {
  auto conf = config::load_given_config(o.conf);
  if (!conf) return conf.error();
  if (!o.db.empty()) conf.value().database = o.db;
  std::optional<uint32_t> uid;
  if (!o.user.empty()) {
    uint64_t n = 0;
    if (config::parse_u64(o.user, &n) && n <= 0xffffffffu) {
      uid = static_cast<uint32_t>(n);
    } else {
      const passwd* pw = ::getpwnam(o.user.c_str());
      if (!pw) return Error{"", "--user " + o.user + ": no such user"};
      uid = pw->pw_uid;
    }
  }
  auto store = store::Store::open(conf.value().database, access);
  if (!store) return store.error();
  return Opened{std::move(conf).value(), std::move(store).value(), uid};
}

std::string seconds(double s) { return s < 0 ? "-" : fmt::format("{:.1f}", s); }

// Stored text may hold a newline, a terminal escape or invalid UTF-8 (users chose it): on the
// terminal it is one line, escaped.
std::string shown(const std::string& s, size_t max_bytes = 200) { return one_line(s, max_bytes); }

nlohmann::json app_json(const store::Application& a) {
  return {{"id", a.id},           {"uid", a.uid},         {"user", a.user},
          {"application", a.key}, {"created", a.created}, {"script_key", a.script_key}};
}

// Prints one JSON object per row: the row's application, plus what `fields` adds.
template <class Row, class Fields>
void print_json_rows(const std::vector<Row>& rows, Fields fields) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& row : rows) {
    nlohmann::json j = app_json(row.app);
    fields(row, j);
    out.push_back(j);
  }
  fmt::print("{}\n", json_text(out, 2));
}

int list(const DbOptions& o) {
  auto db = open_store(o, store::Access::ReadOnly);
  if (!db) return fail(db.error().line());
  auto apps = db.value().store.list(db.value().uid);
  if (!apps) return fail(apps.error().line());
  if (o.json) {
    print_json_rows(apps.value(), [](const store::AppSummary& s, nlohmann::json& j) {
      j["traces"] = s.traces;
      j["predictions"] = s.predictions;
      j["last_state"] = s.last_state;
      j["last_message"] = s.last_message;
    });
    return 0;
  }
  fmt::print("{:>5}  {:<12} {:<32} {:>6} {:>11}  {}\n", "id", "user", "application", "traces",
             "predictions", "last trace");
  for (const auto& s : apps.value())
    fmt::print("{:>5}  {:<12} {:<32} {:>6} {:>11}  {}{}\n", s.app.id, shown(s.app.user),
               shown(s.app.key), s.traces, s.predictions, shown(s.last_state),
               s.last_message.empty() ? "" : " (" + shown(s.last_message, 400) + ")");
  return 0;
}

// The applications APP names (a key or an id), or a usage problem as an Error.
Result<std::vector<store::Application>> find(const Opened& db, const std::string& app) {
  auto apps = db.store.find_applications(app, db.uid);
  if (!apps) return apps.error();
  if (apps.value().empty()) return Error{db.conf.database, "no application " + shown(app)};
  return apps;
}

int show(const DbOptions& o, const std::string& app) {
  auto db = open_store(o, store::Access::ReadOnly);
  if (!db) return fail(db.error().line());
  auto apps = find(db.value(), app);
  if (!apps) return fail(apps.error().line());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : apps.value()) {
    auto traces = db.value().store.traces(a.id);
    auto predictions = db.value().store.predictions(a.id);
    auto outcomes = db.value().store.outcomes(a.id);
    auto runs = db.value().store.model_runs(a.id);
    auto model = db.value().store.model(a.id);
    for (const Error* e : {traces ? nullptr : &traces.error(),
                           predictions ? nullptr : &predictions.error(),
                           outcomes ? nullptr : &outcomes.error(),
                           runs ? nullptr : &runs.error(), model ? nullptr : &model.error()})
      if (e) return fail(e->line() + " (application " + shown(a.key) + ")");
    nlohmann::json j = app_json(a);
    j["traces"] = nlohmann::json::array();
    for (const auto& t : traces.value())
      j["traces"].push_back({{"job_id", t.job_id}, {"ntasks", t.ntasks}, {"nodes", t.nodes},
                             {"partition", t.partition}, {"state", t.state}, {"step", t.step},
                             {"message", t.message}, {"trace_dir", t.trace_dir},
                             {"runtime_seconds", t.runtime_seconds}});
    j["predictions"] = nlohmann::json::array();
    for (const auto& p : predictions.value())
      j["predictions"].push_back({{"id", p.id}, {"ntasks", p.ntasks}, {"nodes", p.nodes},
                                  {"partition", p.partition},
                                  {"skeleton_seconds", p.skeleton_seconds}, {"scale", p.scale},
                                  {"predicted_seconds", p.predicted_seconds}, {"created", p.created},
                                  {"input", p.input}});
    j["outcomes"] = nlohmann::json::array();
    for (const auto& c : outcomes.value())
      j["outcomes"].push_back({{"job_id", c.job_id}, {"prediction_id", c.prediction_id},
                               {"predicted_seconds", c.predicted_seconds},
                               {"limit_minutes", c.limit_minutes},
                               {"actual_seconds", c.actual_seconds}, {"state", c.state}});
    j["model_runs"] = runs.value().size();
    // The stored model as `pskel model show --json` prints it (null: none yet).
    j["model"] = nullptr;
    if (model.value()) {
      const nlohmann::json m = nlohmann::json::parse(model.value()->model, nullptr, false);
      if (!m.is_discarded()) j["model"] = m;
    }
    out.push_back(j);
    if (o.json) continue;
    fmt::print("application {} (id {}) of {} (uid {})\n", shown(a.key), a.id, shown(a.user), a.uid);
    for (const auto& t : traces.value())
      fmt::print("  trace    job {:<8} {:<20} {:<10} {:<8} {}{}  run time {} s\n", t.job_id,
                 exportfile::layout_text(t.ntasks, t.nodes) + ",", shown(t.partition), shown(t.state), shown(t.step),
                 t.message.empty() ? "" : ": " + shown(t.message, 400), seconds(t.runtime_seconds));
    for (const auto& p : predictions.value())
      fmt::print("  predict  #{:<7} {:<20} {:<10} {} s (skeleton {} s x {})\n", p.id,
                 exportfile::layout_text(p.ntasks, p.nodes) + ",", shown(p.partition), seconds(p.predicted_seconds),
                 seconds(p.skeleton_seconds), p.scale);
    for (const auto& c : outcomes.value())
      fmt::print("  outcome  job {:<8} predicted {} s, limit {} min, actual {} s, {}\n", c.job_id,
                 seconds(c.predicted_seconds), c.limit_minutes, seconds(c.actual_seconds),
                 shown(c.state));
    if (!runs.value().empty() || model.value())
      fmt::print("  model    {} run(s) recorded; {}\n", runs.value().size(),
                 model.value() ? "fitted to " + std::to_string(model.value()->runs) +
                                     " (pskel db show --json: the model)"
                               : "not fitted yet (4 runs of one command shape make one)");
  }
  if (o.json) fmt::print("{}\n", json_text(out, 2));
  return 0;
}

int forget(const DbOptions& o, const std::string& app) {
  auto db = open_store(o, store::Access::ReadWrite);
  if (!db) return fail(db.error().line());
  auto apps = find(db.value(), app);
  if (!apps) return fail(apps.error().line());
  if (apps.value().size() > 1)
    return fail(fmt::format("{}: {} users have an application of that name (give --user)",
                            shown(app), apps.value().size()));
  const store::Application& a = apps.value().front();
  if (auto r = db.value().store.forget(a.id); !r) return fail(r.error().line());
  std::string note;
  if (auto w = worker::publish(db.value().conf, db.value().store, &note); !w)
    return fail("forgotten, but the export was not rewritten: " + w.error().line());
  if (o.json) fmt::print("{}\n", json_text(app_json(a), 2));
  else fmt::print("forgot {} of {} (uid {})\n", shown(a.key), shown(a.user), a.uid);
  return 0;
}

int write_export(const DbOptions& o) {
  auto db = open_store(o, store::Access::ReadWrite);
  if (!db) return fail(db.error().line());
  std::string note;
  if (auto w = worker::publish(db.value().conf, db.value().store, &note); !w)
    return fail(w.error().line());
  if (!note.empty()) fmt::print(stderr, "pskel: {}\n", shown(note, 400));
  if (o.json)
    fmt::print("{}\n", json_text(nlohmann::json{{"export", db.value().conf.export_file}}, 2));
  else fmt::print("export written to {}\n", db.value().conf.export_file);
  return 0;
}

nlohmann::json figures_json(const report::Figures& f) {
  const auto pct = [&](double v) { return f.jobs ? nlohmann::json(v) : nlohmann::json(); };
  return {{"limited", f.limited}, {"jobs", f.jobs}, {"extended", f.extended},
          {"killed", f.killed}, {"mean_signed_error_pct", pct(f.mean_signed_error_pct)},
          {"mean_abs_error_pct", pct(f.mean_abs_error_pct)},
          {"max_abs_error_pct", pct(f.max_abs_error_pct)}};
}

// The whole report as JSON: the numbers the page plots, per application and overall.
nlohmann::json report_json(const report::Report& rep, const std::string& heartbeat_path,
                           const guard::Heartbeat& heartbeat) {
  nlohmann::json out;
  out["guard"] = {{"running", heartbeat.alive},
                  {"heartbeat_age_seconds", heartbeat.present ? nlohmann::json(heartbeat.age_seconds)
                                                              : nlohmann::json()},
                  {"heartbeat", heartbeat_path}};
  out["overall"] = figures_json(rep.overall);
  out["applications"] = nlohmann::json::array();
  for (const report::AppReport& app : rep.apps) {
    const store::Accuracy& r = app.accuracy;
    nlohmann::json j = app_json(r.app);
    j.update(figures_json(app.figures));
    j["timeouts"] = r.timeouts;
    j["mean_predicted_seconds"] = r.mean_predicted;
    j["mean_actual_seconds"] = r.mean_actual;
    j["outcomes"] = nlohmann::json::array();
    for (const store::Outcome& o : app.outcomes) {
      double error = 0;
      const bool known = report::signed_error_pct(o, &error);
      j["outcomes"].push_back({{"job_id", o.job_id},
                               {"predicted_seconds", o.predicted_seconds},
                               {"actual_seconds", o.actual_seconds >= 0 ? nlohmann::json(o.actual_seconds)
                                                                        : nlohmann::json()},
                               {"signed_error_pct", known ? nlohmann::json(error) : nlohmann::json()},
                               {"limit_minutes", o.limit_minutes},
                               {"state", o.state},
                               {"recorded", o.recorded}});
    }
    out["applications"].push_back(std::move(j));
  }
  return out;
}

int report(const DbOptions& o, const std::string& html) {
  auto db = open_store(o, store::Access::ReadOnly);
  if (!db) return fail(db.error().line());
  auto rows = db.value().store.report(db.value().uid);
  if (!rows) return fail(rows.error().line());
  std::vector<report::AppReport> apps;
  for (const store::Accuracy& row : rows.value()) {
    auto outcomes = db.value().store.outcomes(row.app.id);
    if (!outcomes) return fail(outcomes.error().line());
    apps.push_back({row, std::move(outcomes).value(), {}});
  }
  const std::string& heartbeat_path = db.value().conf.heartbeat_file;
  const std::time_t now = std::time(nullptr);
  const guard::Heartbeat heartbeat = guard::read_heartbeat(heartbeat_path, now);
  const report::Report rep = report::make_report(
      std::move(apps), guard::describe(heartbeat, heartbeat_path), heartbeat.alive, now);
  if (!html.empty()) {
    if (const std::string why = write_file_replacing(html, report::report_html(rep)); !why.empty())
      return fail(html + ": cannot write: " + why);
  }
  if (o.json) {
    fmt::print("{}\n", json_text(report_json(rep, heartbeat_path, heartbeat), 2));
    return 0;
  }
  if (!html.empty()) {
    fmt::print("report: {} application(s), {} limit(s) set, written to {}\n", rep.apps.size(),
               rep.overall.limited, html);
    return 0;
  }
  // The guard first: without it, pskel's limits are not safe (docs/guard.md).
  fmt::print("guard: {}\n\n", rep.guard);
  fmt::print("{:<12} {:<32} {:>7} {:>8} {:>6} {:>10} {:>10} {:>10} {:>11} {:>10}\n", "user",
             "application", "limited", "extended", "killed", "mean err%", "signed%", "max err%",
             "predicted s", "actual s");
  for (const report::AppReport& app : rep.apps) {
    const store::Accuracy& r = app.accuracy;
    const report::Figures& f = app.figures;
    const auto pct = [&](double v, const char* format) {
      return f.jobs ? fmt::format(fmt::runtime(format), v) : std::string("-");
    };
    fmt::print("{:<12} {:<32} {:>7} {:>8} {:>6} {:>10} {:>10} {:>10} {:>11.1f} {:>10.1f}\n",
               shown(r.app.user), shown(r.app.key), f.limited, f.extended, f.killed,
               pct(f.mean_abs_error_pct, "{:.1f}"), pct(f.mean_signed_error_pct, "{:+.1f}"),
               pct(f.max_abs_error_pct, "{:.1f}"), r.mean_predicted, r.mean_actual);
  }
  fmt::print("\nkilled: jobs ended TIMEOUT at a limit pskel set (the guard keeps it at 0); "
             "err%: |predicted - actual| / actual; signed%: (predicted - actual) / actual\n");
  return 0;
}

}  // namespace

Subcommand add_db_command(CLI::App& app) {
  auto o = std::make_shared<DbOptions>();
  auto target = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("db", "The prediction store: list, show, forget, export");
  cmd->require_subcommand(1);
  CLI::App* l = cmd->add_subcommand("list", "Applications, with their traces and predictions");
  CLI::App* s = cmd->add_subcommand("show", "Traces, predictions and outcomes of an application");
  CLI::App* f = cmd->add_subcommand("forget", "Delete an application and all it has stored");
  CLI::App* e = cmd->add_subcommand(
      "export", "Rewrite the export job_submit_pskel.so reads (partitions from scontrol)");
  add_common(l, *o);
  add_common(s, *o);
  add_common(f, *o);
  add_common(e, *o, false);
  s->add_option("APP", *target, "Application key or id")->required();
  f->add_option("APP", *target, "Application key or id")->required();
  return {cmd, [o, target, l, s, f]() {
    if (l->parsed()) return list(*o);
    if (s->parsed()) return show(*o, *target);
    if (f->parsed()) return forget(*o, *target);
    return write_export(*o);
  }};
}

Subcommand add_report_command(CLI::App& app) {
  auto o = std::make_shared<DbOptions>();
  auto html = std::make_shared<bool>(false);
  auto output = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Prediction accuracy per application (jobs whose limit pskel set)");
  add_common(cmd, *o);
  cmd->add_flag("--html", *html,
                "Write the report as one self-contained HTML page (plots inline, nothing fetched)");
  cmd->add_option("-o,--output", *output, "The page --html writes");
  return {cmd, [o, html, output]() {
    if (*html && output->empty()) return fail("report: --html needs -o FILE");
    if (!*html && !output->empty()) return fail("report: -o is for --html");
    return report(*o, *html ? *output : std::string());
  }};
}

}  // namespace pskel::cli

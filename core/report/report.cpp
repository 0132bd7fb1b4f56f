#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string_view>

#include "util/text.h"

namespace pskel::report {
namespace {

// A plot draws at most this many points (evenly picked, oldest to newest): a page of 10^5 jobs
// would otherwise be megabytes of circles that nobody can tell apart.
constexpr size_t kMaxPoints = 5000;

// Colours: predictions that were long (safe: the job had time to spare) and short (the limit
// came before the job's end, and only the guard's extension saved it).
constexpr const char* kLong = "#1f77b4";
constexpr const char* kShort = "#d62728";
constexpr const char* kGrid = "#dddddd";

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : one_line(text, 200)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double value, const char* format = "%.4g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string utc(int64_t unix_time, const char* format) {
  const std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[64];
  std::strftime(text, sizeof text, format, &tm);
  return text;
}

// About `count` round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int count = 5) {
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * magnitude) {
      step = m * magnitude;
      break;
    }
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

// The outcomes a plot draws: all of them, or kMaxPoints picked evenly.
std::vector<const store::Outcome*> drawn(const std::vector<const store::Outcome*>& all) {
  if (all.size() <= kMaxPoints) return all;
  std::vector<const store::Outcome*> some;
  for (size_t i = 0; i < kMaxPoints; ++i) some.push_back(all[i * all.size() / kMaxPoints]);
  return some;
}

// A plot area: data coordinates to SVG pixels.
struct Frame {
  static constexpr double kWidth = 460, kHeight = 320;
  static constexpr double kLeft = 64, kRight = 36, kTop = 14, kBottom = 46;
  double x0, x1, y0, y1;
  double x(double v) const { return kLeft + (v - x0) / (x1 - x0) * (kWidth - kLeft - kRight); }
  double y(double v) const {
    return kHeight - kBottom - (v - y0) / (y1 - y0) * (kHeight - kTop - kBottom);
  }
};

std::string svg_open(const char* css_class, const std::string& label) {
  return std::string("<svg class=\"") + css_class +
         "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(Frame::kWidth) +
         "\" height=\"" + number(Frame::kHeight) + "\" role=\"img\" " + "aria-label=\"" +
         escaped(label) + "\">\n";
}

std::string axes(const Frame& f, const std::vector<double>& xticks,
                 const std::vector<std::string>& xlabels, const std::vector<double>& yticks,
                 const std::string& xtitle, const std::string& ytitle) {
  std::string s;
  for (size_t i = 0; i < xticks.size(); ++i) {
    const double x = f.x(xticks[i]);
    s += "<line x1=\"" + number(x) + "\" y1=\"" + number(f.y(f.y0)) + "\" x2=\"" + number(x) +
         "\" y2=\"" + number(f.y(f.y1)) + "\" stroke=\"" + kGrid + "\"/>\n";
    s += "<text x=\"" + number(x) + "\" y=\"" + number(f.y(f.y0) + 16) +
         "\" text-anchor=\"middle\">" + escaped(xlabels[i]) + "</text>\n";
  }
  for (double v : yticks) {
    const double y = f.y(v);
    s += "<line x1=\"" + number(f.x(f.x0)) + "\" y1=\"" + number(y) + "\" x2=\"" +
         number(f.x(f.x1)) + "\" y2=\"" + number(y) + "\" stroke=\"" + kGrid + "\"/>\n";
    s += "<text x=\"" + number(f.x(f.x0) - 6) + "\" y=\"" + number(y + 4) +
         "\" text-anchor=\"end\">" + number(v) + "</text>\n";
  }
  s += "<rect x=\"" + number(f.x(f.x0)) + "\" y=\"" + number(f.y(f.y1)) + "\" width=\"" +
       number(f.x(f.x1) - f.x(f.x0)) + "\" height=\"" + number(f.y(f.y0) - f.y(f.y1)) +
       "\" fill=\"none\" stroke=\"#888\"/>\n";
  s += "<text x=\"" + number((f.x(f.x0) + f.x(f.x1)) / 2) + "\" y=\"" + number(Frame::kHeight - 8) +
       "\" text-anchor=\"middle\">" + escaped(xtitle) + "</text>\n";
  s += "<text transform=\"translate(14 " + number((f.y(f.y0) + f.y(f.y1)) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escaped(ytitle) + "</text>\n";
  return s;
}

std::string point(double x, double y, bool long_prediction, bool timeout,
                  const std::string& title) {
  return "<circle class=\"point\" cx=\"" + number(x) + "\" cy=\"" + number(y) +
         "\" r=\"4\" fill=\"" + (long_prediction ? kLong : kShort) + "\"" +
         (timeout ? " stroke=\"#000\" stroke-width=\"2\"" : "") + "><title>" + escaped(title) +
         "</title></circle>\n";
}

std::string point_title(const store::Outcome& o, double error_pct) {
  return "job " + std::to_string(o.job_id) + ": predicted " + number(o.predicted_seconds) +
         " s, ran " + number(o.actual_seconds) + " s (" + number(error_pct, "%+.1f") + " %), " +
         o.state;
}

// Predicted against actual run time, with the line y = x: a point above it was predicted long.
std::string scatter(const std::vector<const store::Outcome*>& outcomes) {
  double top = 1;
  for (const store::Outcome* o : outcomes)
    top = std::max({top, o->predicted_seconds, o->actual_seconds});
  top *= 1.05;
  const Frame f{0, top, 0, top};
  const std::vector<double> t = ticks(0, top);
  std::vector<std::string> labels;
  for (double v : t) labels.push_back(number(v));
  std::string s = svg_open("scatter", "predicted against actual run time");
  s += axes(f, t, labels, t, "actual run time (s)", "predicted (s)");
  s += "<line class=\"identity\" x1=\"" + number(f.x(0)) + "\" y1=\"" + number(f.y(0)) +
       "\" x2=\"" + number(f.x(top)) + "\" y2=\"" + number(f.y(top)) +
       "\" stroke=\"#555\" stroke-dasharray=\"6 4\" stroke-width=\"1.5\"/>\n";
  s += "<text x=\"" + number(f.x(top * 0.93)) + "\" y=\"" + number(f.y(top * 0.93) - 6) +
       "\" text-anchor=\"end\" fill=\"#555\">y = x</text>\n";
  for (const store::Outcome* o : drawn(outcomes)) {
    double error = 0;
    if (!signed_error_pct(*o, &error)) continue;
    s += point(f.x(o->actual_seconds), f.y(o->predicted_seconds), error >= 0, o->state == "TIMEOUT",
               point_title(*o, error));
  }
  return s + "</svg>\n";
}

// The signed error of each job against the time it ended, with the zero line.
std::string error_over_time(const std::vector<const store::Outcome*>& outcomes) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  double worst = 5;
  for (const store::Outcome* o : outcomes) {
    double error = 0;
    if (!signed_error_pct(*o, &error)) continue;
    first = std::min(first, o->recorded);
    last = std::max(last, o->recorded);
    worst = std::max(worst, std::abs(error) * 1.1);
  }
  if (first > last) first = last = 0;
  if (last - first < 3600) {  // one moment, or a few minutes: an hour around them
    first -= 1800;
    last += 1800;
  }
  const Frame f{static_cast<double>(first), static_cast<double>(last), -worst, worst};
  std::vector<double> xt;
  std::vector<std::string> labels;
  const bool days = last - first > 3 * 86400;
  for (int i = 0; i <= 3; ++i) {
    const int64_t at = first + (last - first) * i / 3;
    xt.push_back(static_cast<double>(at));
    labels.push_back(utc(at, days ? "%m-%d" : "%m-%d %H:%M"));
  }
  std::string s = svg_open("errors", "signed error over time");
  s += axes(f, xt, labels, ticks(-worst, worst), "job end (UTC)", "error (%)");
  s += "<line x1=\"" + number(f.x(f.x0)) + "\" y1=\"" + number(f.y(0)) + "\" x2=\"" +
       number(f.x(f.x1)) + "\" y2=\"" + number(f.y(0)) +
       "\" stroke=\"#555\" stroke-width=\"1.5\"/>\n";
  for (const store::Outcome* o : drawn(outcomes)) {
    double error = 0;
    if (!signed_error_pct(*o, &error)) continue;
    s += point(f.x(static_cast<double>(o->recorded)), f.y(error), error >= 0, o->state == "TIMEOUT",
               point_title(*o, error));
  }
  return s + "</svg>\n";
}

Figures figures_of(const std::vector<const store::Outcome*>& outcomes) {
  Figures fig;
  fig.limited = static_cast<int>(outcomes.size());
  double signed_sum = 0, abs_sum = 0;
  for (const store::Outcome* o : outcomes) {
    double error = 0;
    if (!signed_error_pct(*o, &error)) continue;
    ++fig.jobs;
    signed_sum += error;
    abs_sum += std::abs(error);
    fig.max_abs_error_pct = std::max(fig.max_abs_error_pct, std::abs(error));
  }
  if (fig.jobs > 0) {
    fig.mean_signed_error_pct = signed_sum / fig.jobs;
    fig.mean_abs_error_pct = abs_sum / fig.jobs;
  }
  return fig;
}

std::vector<const store::Outcome*> pointers(const std::vector<store::Outcome>& outcomes) {
  std::vector<const store::Outcome*> out;
  for (const store::Outcome& o : outcomes) out.push_back(&o);
  return out;
}

std::string figures_table(const Figures& f) {
  const auto pct = [](double v, bool sign) { return number(v, sign ? "%+.2f %%" : "%.2f %%"); };
  std::string s =
      "<table class=\"figures\"><tr><th>limits set</th><th>with a run time</th>"
      "<th>extended by the guard</th><th>killed at a pskel limit</th>"
      "<th>mean signed error</th><th>mean |error|</th><th>max |error|</th></tr>\n<tr>";
  for (const std::string& cell :
       {std::to_string(f.limited), std::to_string(f.jobs), std::to_string(f.extended),
        std::to_string(f.killed), f.jobs ? pct(f.mean_signed_error_pct, true) : "-",
        f.jobs ? pct(f.mean_abs_error_pct, false) : "-",
        f.jobs ? pct(f.max_abs_error_pct, false) : "-"})
    s += "<td>" + cell + "</td>";
  return s + "</tr></table>\n";
}

constexpr const char* kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1000px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; font-weight: 600; }
.guard-down { color: #b00; font-weight: 600; }
svg { margin: 4px 12px 4px 0; font-size: 11px; }
.plots { display: flex; flex-wrap: wrap; }
.note { color: #555; }
)css";

}  // namespace

bool signed_error_pct(const store::Outcome& o, double* pct) {
  if (!(o.actual_seconds > 0) || !std::isfinite(o.predicted_seconds)) return false;
  *pct = (o.predicted_seconds - o.actual_seconds) / o.actual_seconds * 100;
  return std::isfinite(*pct);
}

Report make_report(std::vector<AppReport> apps, std::string guard, bool guard_running,
                   int64_t generated) {
  Report r{std::move(guard), guard_running, generated, std::move(apps), {}};
  std::vector<const store::Outcome*> all;
  for (AppReport& app : r.apps) {
    std::sort(app.outcomes.begin(), app.outcomes.end(),
              [](const store::Outcome& a, const store::Outcome& b) {
                return a.recorded != b.recorded ? a.recorded < b.recorded : a.job_id < b.job_id;
              });
    app.figures = figures_of(pointers(app.outcomes));
    app.figures.extended = app.accuracy.extended;
    app.figures.killed = app.accuracy.killed_at_pskel_limit;
    for (const store::Outcome& o : app.outcomes) all.push_back(&o);
  }
  r.overall = figures_of(all);
  for (const AppReport& app : r.apps) {
    r.overall.extended += app.figures.extended;
    r.overall.killed += app.figures.killed;
  }
  std::stable_sort(r.apps.begin(), r.apps.end(), [](const AppReport& a, const AppReport& b) {
    if (a.figures.killed != b.figures.killed) return a.figures.killed > b.figures.killed;
    return a.figures.mean_abs_error_pct > b.figures.mean_abs_error_pct;
  });
  return r;
}

std::string report_html(const Report& r) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>pskel report</title>\n<style>" +
      std::string(kStyle) + "</style></head><body>\n";
  s += "<h1>pskel: predicted and actual run times</h1>\n";
  s += "<p class=\"note\">Generated " + utc(r.generated, "%Y-%m-%d %H:%M UTC") +
       ". Jobs whose time limit pskel set from a prediction. Error = (predicted - actual) / "
       "actual: above zero (blue) the job had time to spare; below zero (red) the limit came "
       "before its end and the guard had to extend it. A black ring: the job ended TIMEOUT.</p>\n";
  s += std::string("<p class=\"") + (r.guard_running ? "guard" : "guard-down") +
       "\">Guard: " + escaped(r.guard) + "</p>\n";
  std::vector<const store::Outcome*> all;
  for (const AppReport& app : r.apps)
    for (const store::Outcome& o : app.outcomes) all.push_back(&o);
  s += "<h2 id=\"overall\">All applications</h2>\n" + figures_table(r.overall);
  if (all.empty()) {
    s += "<p class=\"empty\">No job has had its limit set by pskel yet.</p>\n";
    return s + "</body></html>\n";
  }
  if (all.size() > kMaxPoints)
    s += "<p class=\"note\">The plots show " + std::to_string(kMaxPoints) + " of the " +
         std::to_string(all.size()) + " jobs, picked evenly; the figures count all.</p>\n";
  std::sort(all.begin(), all.end(), [](const store::Outcome* a, const store::Outcome* b) {
    return a->recorded < b->recorded;
  });
  s += "<div class=\"plots\">\n" + scatter(all) + error_over_time(all) + "</div>\n";
  s += "<h2>By application, worst first</h2>\n<table class=\"apps\"><tr><th>user</th>"
       "<th>application</th><th>limits set</th><th>killed</th><th>mean signed error</th>"
       "<th>mean |error|</th></tr>\n";
  for (size_t i = 0; i < r.apps.size(); ++i) {
    const AppReport& app = r.apps[i];
    s += "<tr><td>" + escaped(app.accuracy.app.user) + "</td><td><a href=\"#app" +
         std::to_string(i) + "\">" + escaped(app.accuracy.app.key) + "</a></td><td>" +
         std::to_string(app.figures.limited) + "</td><td>" + std::to_string(app.figures.killed) +
         "</td><td>" +
         (app.figures.jobs ? number(app.figures.mean_signed_error_pct, "%+.2f %%") : "-") +
         "</td><td>" +
         (app.figures.jobs ? number(app.figures.mean_abs_error_pct, "%.2f %%") : "-") +
         "</td></tr>\n";
  }
  s += "</table>\n";
  for (size_t i = 0; i < r.apps.size(); ++i) {
    const AppReport& app = r.apps[i];
    s += "<h3 id=\"app" + std::to_string(i) + "\">" + escaped(app.accuracy.app.user) + ": " +
         escaped(app.accuracy.app.key) + "</h3>\n" + figures_table(app.figures);
    if (app.figures.jobs > 0) {
      const auto outcomes = pointers(app.outcomes);
      s += "<div class=\"plots\">\n" + scatter(outcomes) + error_over_time(outcomes) + "</div>\n";
    }
  }
  return s + "</body></html>\n";
}

}  // namespace pskel::report

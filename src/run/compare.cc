#include "run/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include <fmt/ranges.h>

#include "core/error.h"

namespace replica {
namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool Matches(const std::string& name, const std::string& pattern) {
  if (!pattern.empty() && pattern.back() == '*')
    return name.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return name == pattern;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

struct ValueCompare {
  bool within = true;
  std::optional<double> abs_diff;  // when both numeric
};

ValueCompare CompareValues(const nlohmann::json& a, const nlohmann::json& b, double tolerance) {
  ValueCompare r;
  if (a.is_number_integer() && b.is_number_integer()) {
    // Exact integer comparison: a double would round counts above 2^53.
    const bool a_neg = a.is_number_integer() && !a.is_number_unsigned() && a.get<int64_t>() < 0;
    const bool b_neg = b.is_number_integer() && !b.is_number_unsigned() && b.get<int64_t>() < 0;
    const bool same = a_neg == b_neg && (a_neg ? a.get<int64_t>() == b.get<int64_t>()
                                               : a.get<uint64_t>() == b.get<uint64_t>());
    r.abs_diff = same ? 0.0 : std::fabs(a.get<double>() - b.get<double>());
    r.within = same || (tolerance > 0 && *r.abs_diff <= tolerance);
    return r;
  }
  auto na = MetricsLog::AsNumber(a), nb = MetricsLog::AsNumber(b);
  if (na && nb) {
    const bool identical = SameBits(*na, *nb) || (std::isnan(*na) && std::isnan(*nb));
    const double d = identical ? 0.0 : std::fabs(*na - *nb);
    if (!std::isnan(d)) r.abs_diff = d;
    r.within = identical || (tolerance > 0 && !std::isnan(d) && d <= tolerance);
    return r;
  }
  r.within = a == b;
  if (r.within) r.abs_diff = 0.0;
  return r;
}

const nlohmann::json* Find(const std::map<std::string, nlohmann::json>& row, const std::string& n) {
  auto it = row.find(n);
  return it == row.end() ? nullptr : &it->second;
}

std::set<std::string> Names(const MetricsLog& log) {
  std::set<std::string> names;
  for (const auto& [step, row] : log.steps)
    for (const auto& [name, value] : row) names.insert(name);
  return names;
}

// True when every value of `name` in both logs is text that is not a number's spelling.
bool IsLabel(const MetricsLog& a, const MetricsLog& b, const std::string& name) {
  for (const MetricsLog* log : {&a, &b}) {
    for (const auto& [step, row] : log->steps) {
      const nlohmann::json* v = Find(row, name);
      if (v && (!v->is_string() || MetricsLog::AsNumber(*v))) return false;
    }
  }
  return true;
}

}  // namespace

bool IsTimingMetric(const std::string& name) {
  const size_t dot = name.rfind('.');
  const std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
  return EndsWith(last, "_s") || last.find("_per_s") != std::string::npos ||
         last.find("time") != std::string::npos || last.find("mfu") != std::string::npos ||
         last.find("throughput") != std::string::npos || last.find("flops_per") != std::string::npos ||
         last.find("gflops") != std::string::npos || last == "eta" || last.find("rss") != std::string::npos;
}

CompareReport CompareRuns(const MetricsLog& a, const MetricsLog& b, const CompareOptions& options) {
  CompareReport r;
  r.path_a = a.path;
  r.path_b = b.path;
  r.format_a = a.format;
  r.format_b = b.format;
  r.tolerance = options.tolerance;
  Require(options.tolerance >= 0 && !std::isnan(options.tolerance),
          "--tolerance: must be a non-negative number");
  r.steps_a = static_cast<int64_t>(a.steps.size());
  r.steps_b = static_cast<int64_t>(b.steps.size());
  std::vector<int64_t> shared;
  for (const auto& [step, row] : a.steps)
    (b.steps.count(step) ? shared : r.only_in_a).push_back(step);
  for (const auto& [step, row] : b.steps)
    if (!a.steps.count(step)) r.only_in_b.push_back(step);
  r.steps_compared = static_cast<int64_t>(shared.size());

  const std::set<std::string> names_a = Names(a), names_b = Names(b);
  std::set<std::string> both, any;
  for (const auto& n : names_a) {
    any.insert(n);
    if (names_b.count(n)) both.insert(n);
    else r.metrics_only_in_a.push_back(n);
  }
  for (const auto& n : names_b) {
    any.insert(n);
    if (!names_a.count(n)) r.metrics_only_in_b.push_back(n);
  }
  std::set<std::string> compared, reported;
  if (options.metrics.empty()) {
    for (const auto& n : both) (IsTimingMetric(n) ? reported : compared).insert(n);
  } else {
    for (const std::string& pattern : options.metrics) {
      size_t matched = 0;
      for (const auto& n : any)
        if (Matches(n, pattern)) compared.insert(n), ++matched;
      Require(matched > 0, "--metrics: '{}' matches no metric in {} or {}", pattern, a.path,
              b.path);
    }
    for (const auto& n : both)
      if (IsTimingMetric(n) && !compared.count(n)) reported.insert(n);
  }

  std::map<std::string, MetricDiff> diffs;
  for (const auto& n : compared) diffs[n].name = n;
  for (int64_t step : shared) {
    const auto& row_a = a.steps.at(step);
    const auto& row_b = b.steps.at(step);
    StepDiff sd;
    sd.step = step;
    sd.diffs = nlohmann::json::object();
    bool any_diff = false;
    for (const auto& n : compared) {
      const nlohmann::json* va = Find(row_a, n);
      const nlohmann::json* vb = Find(row_b, n);
      if (!va && !vb) continue;
      MetricDiff& md = diffs[n];
      ++md.steps_compared;
      ValueCompare vc;
      if (va && vb) {
        vc = CompareValues(*va, *vb, options.tolerance);
      } else {
        vc.within = false;
        ++(va ? md.missing_b : md.missing_a);
      }
      if (vc.abs_diff) {
        md.max_abs_diff = std::max(md.max_abs_diff, *vc.abs_diff);
        ++md.pairs;
      }
      const nlohmann::json ja = va ? *va : nlohmann::json("<missing>");
      const nlohmann::json jb = vb ? *vb : nlohmann::json("<missing>");
      if (!vc.within) {
        any_diff = true;
        ++md.differing_steps;
        if (!md.first_diff_step) {
          md.first_diff_step = step;
          md.first_a = ja;
          md.first_b = jb;
        }
        if (!r.first_diff_step) {
          r.first_diff_step = step;
          r.first_diff_metric = n;
        }
      }
      if (!vc.within || options.per_step_all) {
        sd.diffs[n] = {{"a", ja}, {"b", jb},
                       {"abs_diff", vc.abs_diff ? nlohmann::json(*vc.abs_diff) : nlohmann::json()}};
      }
    }
    if (any_diff || options.per_step_all) {
      if (r.per_step.size() < options.max_steps_listed) r.per_step.push_back(std::move(sd));
      else r.per_step_truncated = true;
    }
  }
  for (auto& [n, md] : diffs) {
    (IsLabel(a, b, n) ? r.labels : r.compared).push_back(std::move(md));
  }

  for (const auto& n : reported) {
    MetricDiff md;
    md.name = n;
    double sa = 0, sb = 0;
    int64_t count = 0;
    for (int64_t step : shared) {
      const nlohmann::json* va = Find(a.steps.at(step), n);
      const nlohmann::json* vb = Find(b.steps.at(step), n);
      if (!va || !vb) continue;
      auto na = MetricsLog::AsNumber(*va), nb = MetricsLog::AsNumber(*vb);
      if (!na || !nb || !std::isfinite(*na) || !std::isfinite(*nb)) continue;
      sa += *na;
      sb += *nb;
      md.max_abs_diff = std::max(md.max_abs_diff, std::fabs(*na - *nb));
      ++count;
    }
    md.steps_compared = count;
    if (count) {
      md.mean_a = sa / count;
      md.mean_b = sb / count;
    }
    r.reported.push_back(std::move(md));
  }

  CompareCheck check{"metrics", true, ""};
  int64_t differing = 0, missing = 0;
  for (const MetricDiff& md : r.compared) differing += md.differing_steps;
  for (const MetricDiff& md : r.labels) differing += md.differing_steps;
  for (const MetricDiff& md : r.compared) missing += md.missing_a + md.missing_b;
  for (const MetricDiff& md : r.labels) missing += md.missing_a + md.missing_b;
  if (shared.empty()) {
    check = {"metrics", false, "the runs share no step"};
  } else if (r.compared.empty()) {
    check = {"metrics", false, "the runs share no deterministic metric"};
  } else if (differing > 0) {
    check = {"metrics", false,
             fmt::format("{} metric value(s) differ beyond tolerance {}{}; first at step {} ({})",
                         differing - missing, options.tolerance,
                         missing ? fmt::format(", {} missing in one run", missing) : "",
                         *r.first_diff_step, r.first_diff_metric)};
  } else if (!options.allow_missing_steps && (!r.only_in_a.empty() || !r.only_in_b.empty())) {
    check = {"metrics", false,
             fmt::format("{} step(s) only in A, {} only in B", r.only_in_a.size(),
                         r.only_in_b.size())};
  } else {
    check.detail = fmt::format("{} metric(s) equal within {} at {} step(s)", r.compared.size(),
                               options.tolerance, shared.size());
  }
  r.checks.push_back(check);
  for (const CompareCheck& c : r.checks) r.pass = r.pass && c.pass;
  return r;
}

nlohmann::json CompareReport::ToJson() const {
  auto steps_list = [](const std::vector<int64_t>& v) {
    nlohmann::json j = nlohmann::json::array();
    for (size_t i = 0; i < v.size() && i < 1000; ++i) j.push_back(v[i]);
    return j;
  };
  nlohmann::json metrics = nlohmann::json::object();
  for (const MetricDiff& md : compared) {
    metrics[md.name] = {{"steps", md.steps_compared},
                        {"differing_steps", md.differing_steps},
                        {"missing_in_a", md.missing_a},
                        {"missing_in_b", md.missing_b},
                        {"max_abs_diff", md.max_abs_diff},
                        {"first_diff_step", md.first_diff_step ? nlohmann::json(*md.first_diff_step)
                                                               : nlohmann::json()}};
    if (md.first_diff_step) {
      metrics[md.name]["first_diff_a"] = md.first_a;
      metrics[md.name]["first_diff_b"] = md.first_b;
    }
  }
  nlohmann::json labels_json = nlohmann::json::object();
  for (const MetricDiff& md : labels) {
    labels_json[md.name] = {{"steps", md.steps_compared},
                            {"differing_steps", md.differing_steps},
                            {"first_diff_step", md.first_diff_step
                                                    ? nlohmann::json(*md.first_diff_step)
                                                    : nlohmann::json()}};
    if (md.first_diff_step) {
      labels_json[md.name]["first_diff_a"] = md.first_a;
      labels_json[md.name]["first_diff_b"] = md.first_b;
    }
  }
  nlohmann::json timings = nlohmann::json::object();
  for (const MetricDiff& md : reported)
    timings[md.name] = {{"steps", md.steps_compared}, {"mean_a", md.mean_a}, {"mean_b", md.mean_b},
                        {"max_abs_diff", md.max_abs_diff}};
  nlohmann::json per = nlohmann::json::array();
  for (const StepDiff& sd : per_step) per.push_back({{"step", sd.step}, {"diffs", sd.diffs}});
  nlohmann::json checks_json = nlohmann::json::array();
  for (const CompareCheck& c : checks)
    checks_json.push_back({{"name", c.name}, {"pass", c.pass}, {"detail", c.detail}});
  nlohmann::json first = nullptr;
  if (first_diff_step) first = {{"step", *first_diff_step}, {"metric", first_diff_metric}};
  return {{"run_a", path_a},
          {"run_b", path_b},
          {"format_a", format_a},
          {"format_b", format_b},
          {"tolerance", tolerance},
          {"steps", {{"a", steps_a}, {"b", steps_b}, {"compared", steps_compared},
                     {"only_in_a", steps_list(only_in_a)}, {"only_in_b", steps_list(only_in_b)}}},
          {"first_diff", first},
          {"metrics", metrics},
          {"labels", labels_json},
          {"timings", timings},
          {"metrics_only_in_a", metrics_only_in_a},
          {"metrics_only_in_b", metrics_only_in_b},
          {"per_step", per},
          {"per_step_truncated", per_step_truncated},
          {"checks", checks_json},
          {"pass", pass}};
}

std::string CompareReport::ToText() const {
  auto format = [](const std::string& f) {
    return f.empty() || f == MetricsLog().format ? std::string() : " (" + f + ")";
  };
  std::string s = fmt::format("A: {}{}\nB: {}{}\ntolerance: {}{}\n", path_a, format(format_a),
                              path_b, format(format_b), tolerance,
                              tolerance == 0 ? " (bit-identical)" : "");
  s += fmt::format("steps: A {}, B {}, compared {}", steps_a, steps_b, steps_compared);
  if (!only_in_a.empty() || !only_in_b.empty())
    s += fmt::format(" ({} only in A, {} only in B)", only_in_a.size(), only_in_b.size());
  s += "\n";
  auto list = [](const std::vector<int64_t>& v) {
    std::vector<int64_t> head(v.begin(), v.begin() + static_cast<ptrdiff_t>(std::min<size_t>(v.size(), 10)));
    return fmt::format("{}{}", fmt::join(head, ", "), v.size() > 10 ? ", ..." : "");
  };
  if (!only_in_a.empty()) s += fmt::format("steps missing in B: {}\n", list(only_in_a));
  if (!only_in_b.empty()) s += fmt::format("steps missing in A: {}\n", list(only_in_b));
  s += "\n";
  size_t width = 6;
  for (const MetricDiff& md : compared) width = std::max(width, md.name.size());
  for (const MetricDiff& md : reported) width = std::max(width, md.name.size());
  for (const MetricDiff& md : labels) width = std::max(width, md.name.size());
  // "differing" counts steps where both runs have the metric and the values differ; "missing"
  // the steps where one run lacks it; max_abs_diff is "-" when no step has both values.
  auto missing = [](const MetricDiff& md) -> std::string {
    if (md.missing_a == 0 && md.missing_b == 0) return "-";
    if (md.missing_b == 0) return fmt::format("{} in A", md.missing_a);
    if (md.missing_a == 0) return fmt::format("{} in B", md.missing_b);
    return fmt::format("{} A, {} B", md.missing_a, md.missing_b);
  };
  s += fmt::format("{:<{}}  {:>12}  {:>9}  {:>10}  {:>10}\n", "metric", width, "max_abs_diff",
                   "differing", "missing", "first_diff");
  for (const MetricDiff& md : compared)
    s += fmt::format("{:<{}}  {:>12}  {:>9}  {:>10}  {:>10}\n", md.name, width,
                     md.pairs ? fmt::format("{:.6g}", md.max_abs_diff) : "-",
                     md.differing_steps - md.missing_a - md.missing_b, missing(md),
                     md.first_diff_step ? std::to_string(*md.first_diff_step) : "-");
  if (!labels.empty()) {
    s += fmt::format("\nlabels (text, compared for equality):\n{:<{}}  {:>9}  {:>10}\n", "label",
                     width, "differing", "first_diff");
    for (const MetricDiff& md : labels)
      s += fmt::format("{:<{}}  {:>9}  {:>10}\n", md.name, width, md.differing_steps,
                       md.first_diff_step ? std::to_string(*md.first_diff_step) : "-");
  }
  if (!reported.empty()) {
    s += fmt::format("\ntimings (reported, not compared):\n{:<{}}  {:>12}  {:>12}\n", "metric",
                     width, "mean_a", "mean_b");
    for (const MetricDiff& md : reported)
      s += fmt::format("{:<{}}  {:>12.6g}  {:>12.6g}\n", md.name, width, md.mean_a, md.mean_b);
  }
  if (!metrics_only_in_a.empty())
    s += fmt::format("\nonly in A (not compared): {}\n", fmt::join(metrics_only_in_a, ", "));
  if (!metrics_only_in_b.empty())
    s += fmt::format("\nonly in B (not compared): {}\n", fmt::join(metrics_only_in_b, ", "));
  if (first_diff_step) {
    s += fmt::format("\nfirst difference: step {}\n", *first_diff_step);
    for (const StepDiff& sd : per_step) {
      if (sd.step != *first_diff_step) continue;
      for (const auto& [name, d] : sd.diffs.items()) {
        auto value = [](const nlohmann::json& v) {
          return v == "<missing>" ? std::string("missing") : v.dump();
        };
        s += fmt::format("  {}: A {}  B {}\n", name, value(d["a"]), value(d["b"]));
      }
    }
  }
  s += "\n";
  for (const CompareCheck& c : checks)
    s += fmt::format("{}: {} — {}\n", c.name, c.pass ? "PASS" : "FAIL", c.detail);
  return s;
}

}  // namespace replica

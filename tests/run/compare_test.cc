// replica compare's core: bit-identical by default, tolerance, timings reported not compared,
// first differing step, missing steps and metrics, eval values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "core/error.h"
#include "run/compare.h"

namespace replica {
namespace {

CompareOptions Tolerance(double t) {
  CompareOptions o;
  o.tolerance = t;
  return o;
}
CompareOptions Metrics(std::vector<std::string> m) {
  CompareOptions o;
  o.metrics = std::move(m);
  return o;
}

MetricsLog Log(std::vector<nlohmann::json> lines) {
  MetricsLog log;
  log.path = "mem";
  for (const auto& j : lines) {
    auto& row = log.steps[j["step"].get<int64_t>()];
    for (const auto& [k, v] : j.items())
      if (k != "step") row[k] = v;
  }
  return log;
}

std::vector<nlohmann::json> Trajectory(double perturb_at_step = -1, double delta = 0) {
  std::vector<nlohmann::json> lines;
  for (int s = 1; s <= 10; ++s) {
    double loss = 10.0 / s + (s == perturb_at_step ? delta : 0.0);
    lines.push_back({{"step", s}, {"loss", loss}, {"grad_norm", 1.0 / s}, {"lr", 1e-3},
                     {"tokens", int64_t{4096} * s}, {"skipped", false},
                     {"step_time_s", 0.1 * s}, {"tokens_per_s", 4096.0 / (0.1 * s)},
                     {"mfu", 0.3}});
  }
  return lines;
}

TEST(Compare, IdenticalRunsPassAndTimingsAreNotCompared) {
  auto a = Trajectory();
  auto b = Trajectory();
  for (auto& j : b) j["step_time_s"] = j["step_time_s"].get<double>() * 2;  // slower machine
  CompareReport r = CompareRuns(Log(a), Log(b), {});
  EXPECT_TRUE(r.pass) << r.ToText();
  EXPECT_EQ(r.steps_compared, 10);
  std::vector<std::string> compared;
  for (const auto& m : r.compared) compared.push_back(m.name);
  EXPECT_EQ(compared, (std::vector<std::string>{"grad_norm", "loss", "lr", "skipped", "tokens"}));
  ASSERT_EQ(r.reported.size(), 3u);  // mfu, step_time_s, tokens_per_s
  EXPECT_FALSE(r.first_diff_step.has_value());
  nlohmann::json j = r.ToJson();
  EXPECT_EQ(j["pass"], true);
  EXPECT_EQ(j["metrics"]["loss"]["max_abs_diff"], 0.0);
  EXPECT_TRUE(j["first_diff"].is_null());
  EXPECT_TRUE(j["timings"].contains("step_time_s"));
}

TEST(Compare, OneUlpIsADifferenceAtToleranceZero) {
  const double loss7 = 10.0 / 7;
  auto b = Trajectory(7, std::nextafter(loss7, 100.0) - loss7);
  CompareReport r = CompareRuns(Log(Trajectory()), Log(b), {});
  EXPECT_FALSE(r.pass);
  ASSERT_TRUE(r.first_diff_step.has_value());
  EXPECT_EQ(*r.first_diff_step, 7);
  EXPECT_EQ(r.first_diff_metric, "loss");
  ASSERT_EQ(r.per_step.size(), 1u);
  EXPECT_EQ(r.per_step[0].step, 7);
  const MetricDiff& loss = r.compared[1];
  EXPECT_EQ(loss.name, "loss");
  EXPECT_EQ(loss.differing_steps, 1);
  EXPECT_GT(loss.max_abs_diff, 0);
  EXPECT_LT(loss.max_abs_diff, 1e-15);
  // Accepted with a tolerance above the difference.
  EXPECT_TRUE(CompareRuns(Log(Trajectory()), Log(b), Tolerance(1e-12)).pass);
}

TEST(Compare, ReportsFirstDiffAcrossMetricsAndMaxAbsDiff) {
  auto b = Trajectory(4, 0.5);
  b[8]["grad_norm"] = 3.0;  // step 9
  CompareReport r = CompareRuns(Log(Trajectory()), Log(b), Tolerance(0.1));
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(*r.first_diff_step, 4);
  for (const auto& m : r.compared) {
    if (m.name == "loss") {
      EXPECT_DOUBLE_EQ(m.max_abs_diff, 0.5);
    }
    if (m.name == "grad_norm") {
      EXPECT_EQ(*m.first_diff_step, 9);
    }
  }
}

TEST(Compare, TimingsAreComparedOnlyWhenListed) {
  auto b = Trajectory();
  b[2]["step_time_s"] = 99.0;
  EXPECT_TRUE(CompareRuns(Log(Trajectory()), Log(b), {}).pass);
  CompareReport r = CompareRuns(Log(Trajectory()), Log(b), Metrics({"step_time_s"}));
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(*r.first_diff_step, 3);
  EXPECT_EQ(r.compared.size(), 1u);
  EXPECT_THROW(CompareRuns(Log(Trajectory()), Log(b), Metrics({"no_such_metric"})), Error);
}

TEST(Compare, MissingStepsFailUnlessAllowed) {
  auto a = Trajectory();
  auto b = Trajectory();
  b.resize(6);
  CompareReport r = CompareRuns(Log(a), Log(b), {});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.only_in_a, (std::vector<int64_t>{7, 8, 9, 10}));
  CompareOptions allow;
  allow.allow_missing_steps = true;
  EXPECT_TRUE(CompareRuns(Log(a), Log(b), allow).pass);
}

TEST(Compare, MetricMissingAtOneStepIsADifference) {
  auto b = Trajectory();
  b[4].erase("grad_norm");
  CompareReport r = CompareRuns(Log(Trajectory()), Log(b), {});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(*r.first_diff_step, 5);
  EXPECT_EQ(r.first_diff_metric, "grad_norm");
  EXPECT_EQ(r.per_step[0].diffs["grad_norm"]["b"], "<missing>");
}

TEST(Compare, EvalMetricsAndNonFiniteValues) {
  auto a = Trajectory();
  auto b = Trajectory();
  a.push_back({{"step", 10}, {"eval.heldout.ppl", 12.5}, {"eval.heldout.time_s", 1.0}});
  b.push_back({{"step", 10}, {"eval.heldout.ppl", 12.5}, {"eval.heldout.time_s", 2.0}});
  a[0]["loss"] = "NaN";
  b[0]["loss"] = "NaN";
  // Log() merges the eval line into step 10's row, as ReadMetrics does.
  CompareReport r = CompareRuns(Log(a), Log(b), {});
  EXPECT_TRUE(r.pass) << r.ToText();
  bool has_eval = false;
  for (const auto& m : r.compared) has_eval |= m.name == "eval.heldout.ppl";
  EXPECT_TRUE(has_eval);
  b.back()["eval.heldout.ppl"] = 12.75;
  EXPECT_FALSE(CompareRuns(Log(a), Log(b), {}).pass);
  EXPECT_FALSE(CompareRuns(Log(a), Log(b), Metrics({"eval.*"})).pass);
  EXPECT_TRUE(CompareRuns(Log(a), Log(b), Metrics({"loss", "lr"})).pass);
}

// Text values such as eval.<set>.kind are labels: listed apart from the numeric metrics, with no
// max_abs_diff, and a differing label still fails the comparison.
TEST(Compare, TextValuesAreLabelsNotMetrics) {
  auto with_kind = [](const char* kind) {
    auto lines = Trajectory();
    lines.push_back({{"step", 10}, {"eval", {{"set", {{"kind", kind}, {"ppl", 12.5}}}}}});
    return lines;
  };
  auto flatten = [](std::vector<nlohmann::json> lines) {
    // As ReadMetrics flattens an eval line: eval.<set>.<metric>.
    for (auto& j : lines)
      if (j.contains("eval")) {
        for (const auto& [set, m] : j["eval"].items())
          for (const auto& [k, v] : m.items()) j["eval." + set + "." + k] = v;
        j.erase("eval");
      }
    return lines;
  };
  CompareReport same = CompareRuns(Log(flatten(with_kind("perplexity"))),
                                   Log(flatten(with_kind("perplexity"))), {});
  EXPECT_TRUE(same.pass) << same.ToText();
  for (const auto& m : same.compared) EXPECT_NE(m.name, "eval.set.kind");
  ASSERT_EQ(same.labels.size(), 1u);
  EXPECT_EQ(same.labels[0].name, "eval.set.kind");
  EXPECT_TRUE(same.ToJson()["labels"].contains("eval.set.kind"));
  EXPECT_FALSE(same.ToJson()["metrics"].contains("eval.set.kind"));

  CompareReport diff = CompareRuns(Log(flatten(with_kind("perplexity"))),
                                   Log(flatten(with_kind("multiple_choice"))), {});
  EXPECT_FALSE(diff.pass);
  ASSERT_EQ(diff.labels.size(), 1u);
  EXPECT_EQ(diff.labels[0].differing_steps, 1);
  const std::string text = diff.ToText();
  EXPECT_NE(text.find("labels (text, compared for equality)"), std::string::npos) << text;
  // The numeric table does not list the label with a meaningless "0" difference.
  const std::string table = text.substr(0, text.find("labels ("));
  EXPECT_EQ(table.find("eval.set.kind"), std::string::npos) << text;
}

TEST(Compare, LargeIntegersComparedExactly) {
  auto a = Trajectory();
  auto b = Trajectory();
  a[0]["tokens"] = int64_t{9007199254740993};  // 2^53 + 1: equal to 2^53 as a double
  b[0]["tokens"] = int64_t{9007199254740992};
  EXPECT_FALSE(CompareRuns(Log(a), Log(b), {}).pass);
}

TEST(Compare, TimingNames) {
  for (const char* n : {"step_time_s", "tokens_per_s", "mfu", "eval.c4.time_s", "data_wait_s",
                        "tokens_per_s_per_rank", "achieved_gflops", "checkpoint_time"})
    EXPECT_TRUE(IsTimingMetric(n)) << n;
  for (const char* n : {"loss", "ce_loss", "z_loss", "grad_norm", "lr", "tokens", "skipped",
                        "eval.c4.ppl", "eval.mmlu.accuracy"})
    EXPECT_FALSE(IsTimingMetric(n)) << n;
}

// A value present in one run only is "missing", not a zero difference: the table says which run
// lacks it and max_abs_diff is "-" when no step has both values.
TEST(Compare, MissingValuesAreNamedMissing) {
  auto a = Trajectory();
  auto b = Trajectory();
  b[4].erase("grad_norm");
  a.push_back({{"step", 11}, {"eval.heldout.ppl", 12.5}});
  b.push_back({{"step", 11}, {"loss", 0.9}});
  b[9]["eval.heldout.ppl"] = 13.0;  // at step 10, where A has none
  CompareReport r = CompareRuns(Log(a), Log(b), {});
  EXPECT_FALSE(r.pass);
  std::map<std::string, const MetricDiff*> by_name;
  for (const MetricDiff& md : r.compared) by_name[md.name] = &md;
  ASSERT_TRUE(by_name.count("grad_norm") && by_name.count("eval.heldout.ppl"));
  EXPECT_EQ(by_name["grad_norm"]->missing_b, 1);
  EXPECT_EQ(by_name["grad_norm"]->missing_a, 0);
  EXPECT_EQ(by_name["eval.heldout.ppl"]->missing_a, 1);
  EXPECT_EQ(by_name["eval.heldout.ppl"]->missing_b, 1);
  EXPECT_EQ(by_name["eval.heldout.ppl"]->pairs, 0);
  EXPECT_EQ(by_name["loss"]->missing_a, 1);
  const std::string text = r.ToText();
  EXPECT_NE(text.find("missing"), std::string::npos) << text;
  EXPECT_NE(text.find("1 in B"), std::string::npos) << text;
  EXPECT_NE(text.find("1 in A"), std::string::npos) << text;
  EXPECT_NE(text.find("grad_norm: A 0.2  B missing"), std::string::npos) << text;
  // eval.heldout.ppl: no step with both values, so no numeric difference to show.
  const size_t row = text.find("\neval.heldout.ppl ");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row + 1, text.find('\n', row + 1) - row - 1);
  std::istringstream fields(line);
  std::string name, max_abs_diff, differing;
  fields >> name >> max_abs_diff >> differing;
  EXPECT_EQ(max_abs_diff, "-") << line;
  EXPECT_EQ(differing, "0") << line;  // no value differs: both are missing somewhere
  EXPECT_NE(line.find("1 A, 1 B"), std::string::npos) << line;
  EXPECT_NE(r.checks[0].detail.find("missing in one run"), std::string::npos) << r.checks[0].detail;
  nlohmann::json j = r.ToJson();
  EXPECT_EQ(j["metrics"]["grad_norm"]["missing_in_b"], 1);
}

}  // namespace
}  // namespace replica

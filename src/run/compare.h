// `replica compare RUN_A RUN_B` (docs/design.md §5): are two runs the same trajectory?
//
// For every step present in both metrics.jsonl files, every shared deterministic metric (loss,
// ce_loss, z_loss, grad_norm, lr, tokens, skipped, eval.<set>.<metric>, ...) is compared. Timing
// metrics (IsTimingMetric: step_time_s, tokens_per_s, mfu, anything ending in "_s", ...) differ
// between identical runs, so they are reported (means) but not compared unless named in
// `metrics`. Tolerance 0 (the default) means bit-identical doubles; T > 0 accepts |a - b| <= T.
// A run that lacks a step the other has also fails the check unless allow_missing_steps.
//
// The report is a list of named checks; the run passes iff every check passes. Today there is one
// ("metrics": the equality above). Further checks — e.g. an eval gate ("B's eval.<set>.ppl is not
// worse than A's by more than X") — are added as a field of CompareOptions, a function that
// appends one CompareCheck, and a CLI flag; ToJson/ToText print them without changes.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run/metrics_reader.h"

namespace replica {

bool IsTimingMetric(const std::string& name);

struct CompareOptions {
  double tolerance = 0;               // absolute; 0 = bit-identical
  std::vector<std::string> metrics;   // exact names or prefixes ending in '*'; empty = all shared
                                      // deterministic metrics
  bool allow_missing_steps = false;   // compare only shared steps without failing on the rest
  bool per_step_all = false;          // list every shared step in the report, not only differing
  size_t max_steps_listed = 1000;
};

struct MetricDiff {
  std::string name;
  int64_t steps_compared = 0;        // shared steps where at least one run has the metric
  int64_t differing_steps = 0;       // beyond tolerance (incl. missing in one run, non-numeric)
  int64_t missing_a = 0, missing_b = 0;  // of those, shared steps where only the other run has it
  int64_t pairs = 0;                 // shared steps where both runs have a numeric value
  double max_abs_diff = 0;           // over steps where both values are numeric
  std::optional<int64_t> first_diff_step;
  nlohmann::json first_a, first_b;   // values at first_diff_step ("<missing>" if absent)
  double mean_a = 0, mean_b = 0;     // for reported (timing) metrics
};

struct StepDiff {
  int64_t step = 0;
  nlohmann::json diffs;  // name -> {"a", "b", "abs_diff"}
};

struct CompareCheck {
  std::string name;
  bool pass = true;
  std::string detail;
};

struct CompareReport {
  std::string path_a, path_b;
  std::string format_a, format_b;  // MetricsLog::format
  double tolerance = 0;
  int64_t steps_a = 0, steps_b = 0, steps_compared = 0;
  std::vector<int64_t> only_in_a, only_in_b;              // steps
  std::vector<MetricDiff> compared;                       // the checked numeric metrics
  // Checked text values such as eval.<set>.kind: equal or not, no numeric difference.
  std::vector<MetricDiff> labels;
  std::vector<MetricDiff> reported;                       // timings: shown, not checked
  std::vector<std::string> metrics_only_in_a, metrics_only_in_b;
  std::optional<int64_t> first_diff_step;
  std::string first_diff_metric;
  std::vector<StepDiff> per_step;                         // differing steps (or all, see options)
  bool per_step_truncated = false;
  std::vector<CompareCheck> checks;
  bool pass = true;

  nlohmann::json ToJson() const;
  std::string ToText() const;
};

// Error (exit 2) if a name in options.metrics matches no metric of either run.
CompareReport CompareRuns(const MetricsLog& a, const MetricsLog& b, const CompareOptions& options);

}  // namespace replica

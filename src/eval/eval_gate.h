// The eval gate of `replica compare`: two runs of the same recipe should reach
// the same held-out numbers. A candidate whose held-out metrics are BETTER than the reference's
// beyond a tolerance is flagged as suspicious (possible contamination), not celebrated; so is a
// candidate whose canary alarm fired. Worse numbers are compare's business (it reports every
// difference), not this gate's.
//   lower is better:  ce_loss, ppl, bpb      higher is better: acc, len_norm_acc
// Inputs are the parsed lines of each run's metrics.jsonl; eval lines are {"step", "eval": {set:
// {metric: value}}}. Only steps and sets present in both runs are compared.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace replica::eval {

struct EvalGateOptions {
  double tolerance = 0.0;  // absolute, in each metric's own units
};

struct SuspiciousMetric {
  int64_t step = 0;
  std::string set, metric;
  double reference = 0, candidate = 0;
  double improvement = 0;  // > tolerance: how much "better" the candidate is
};

struct EvalGateResult {
  int64_t compared = 0;  // metric values compared
  std::vector<SuspiciousMetric> suspicious;
  std::vector<int64_t> canary_alarm_steps;  // candidate eval steps whose canary alarm fired
  bool pass() const { return suspicious.empty() && canary_alarm_steps.empty(); }
  // {pass, compared, tolerance, suspicious: [{step, set, metric, reference, candidate,
  //  improvement}], canary_alarm_steps}
  nlohmann::json ToJson(double tolerance) const;
};

EvalGateResult CheckEvalGate(const std::vector<nlohmann::json>& reference_lines,
                             const std::vector<nlohmann::json>& candidate_lines,
                             const EvalGateOptions& options);

// Reads two metrics.jsonl files (or run directories holding one). Errors name file:line.
EvalGateResult CheckEvalGateFiles(const std::string& reference, const std::string& candidate,
                                  const EvalGateOptions& options);

}  // namespace replica::eval

// The skip-step rule of OLMo-core's SkipStepAdamW (optim/skip_step_optimizer.py, as the Olmo 3
// recipe uses it): a step's update is skipped when its loss or its pre-clip gradient norm lies more
// than `sigma` standard deviations above the mean of the previous values (up to `window` of them).
// The rule is active once `min_history` values, counting the current one, are recorded (OLMo-core:
// rolling_interval_length // 2 = 64). Skipped steps' values still enter the history.
//
//   proceed ⇔ (loss − mean(L)) ≤ σ·std(L)  ∧  (gnorm − mean(G)) ≤ σ·std(G)
// with std unbiased (torch.std), in fp64. A NaN loss or norm makes the comparison false: skipped.
//
// Unlike OLMo-core, the history is part of the checkpointed training state, so a resumed run makes
// the same decisions as one that never stopped.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

namespace replica {

struct SkipStepConfig {
  bool enabled = true;
  int64_t window = 128;
  int64_t min_history = 64;
  double sigma = 6.0;
};

class SkipStepRule {
 public:
  explicit SkipStepRule(const SkipStepConfig& config) : config_(config) {}

  // Records (loss, grad_norm) and returns true when the update should be applied.
  bool Observe(double loss, double grad_norm);

  const std::deque<double>& losses() const { return losses_; }
  const std::deque<double>& grad_norms() const { return grad_norms_; }
  // Restores a checkpointed history (oldest first). Keeps at most `window` values of each.
  void Restore(const std::vector<double>& losses, const std::vector<double>& grad_norms);

 private:
  SkipStepConfig config_;
  std::deque<double> losses_, grad_norms_;  // previous values, oldest first, at most `window`
};

}  // namespace replica

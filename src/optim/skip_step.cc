#include "optim/skip_step.h"

#include <cmath>

#include "core/error.h"

namespace replica {
namespace {

// Mean and unbiased standard deviation, summed oldest first.
void MeanStd(const std::deque<double>& xs, double* mean, double* std) {
  double s = 0;
  for (double x : xs) s += x;
  *mean = s / static_cast<double>(xs.size());
  double ss = 0;
  for (double x : xs) ss += (x - *mean) * (x - *mean);
  *std = std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

bool WithinSigma(const std::deque<double>& history, double value, double sigma) {
  double mean = 0, std = 0;
  MeanStd(history, &mean, &std);
  return (value - mean) <= sigma * std;
}

}  // namespace

bool SkipStepRule::Observe(double loss, double grad_norm) {
  bool proceed = true;
  // OLMo-core counts the current value in the history length it compares with min_history.
  if (config_.enabled && static_cast<int64_t>(losses_.size()) + 1 >= config_.min_history &&
      losses_.size() >= 2) {
    proceed = WithinSigma(losses_, loss, config_.sigma) &&
              WithinSigma(grad_norms_, grad_norm, config_.sigma);
  }
  losses_.push_back(loss);
  grad_norms_.push_back(grad_norm);
  while (static_cast<int64_t>(losses_.size()) > config_.window) losses_.pop_front();
  while (static_cast<int64_t>(grad_norms_.size()) > config_.window) grad_norms_.pop_front();
  return proceed;
}

void SkipStepRule::Restore(const std::vector<double>& losses, const std::vector<double>& norms) {
  Require(losses.size() == norms.size(),
          "skip-step history: {} losses but {} grad norms (expected equal lengths)", losses.size(),
          norms.size());
  losses_.assign(losses.begin(), losses.end());
  grad_norms_.assign(norms.begin(), norms.end());
  while (static_cast<int64_t>(losses_.size()) > config_.window) losses_.pop_front();
  while (static_cast<int64_t>(grad_norms_.size()) > config_.window) grad_norms_.pop_front();
}

}  // namespace replica

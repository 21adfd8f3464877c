#include "infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace replica {

int32_t ArgMax(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) best = logits[i] > logits[best] ? i : best;
  return static_cast<int32_t>(best);
}

Sampler::Sampler(const SamplingOptions& o) : o_(o), rng_(o.seed) {
  Require(o.temperature >= 0 && std::isfinite(o.temperature),
          "--temperature must be a finite number >= 0 (0 = greedy; the larger, the closer to "
          "uniform), got {}", o.temperature);
  Require(o.top_k >= 0, "--top-k must be >= 0 (0 = no limit), got {}", o.top_k);
  Require(o.top_p > 0 && o.top_p <= 1, "--top-p must be in (0, 1], got {}", o.top_p);
}

int32_t Sampler::Next(std::span<const float> logits) {
  if (o_.temperature == 0) return ArgMax(logits);
  const int64_t V = static_cast<int64_t>(logits.size());
  order_.resize(V);
  std::iota(order_.begin(), order_.end(), 0);
  const int64_t k = o_.top_k > 0 ? std::min(o_.top_k, V) : V;
  auto more_likely = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), more_likely);
  // Softmax of logits / T over the top k, in double.
  probs_.resize(k);
  const double mx = logits[order_[0]] / o_.temperature;
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += probs_[i] = std::exp(logits[order_[i]] / o_.temperature - mx);
  // Top-p: keep the smallest prefix whose mass reaches top_p (at least one token).
  int64_t keep = k;
  if (o_.top_p < 1) {
    double mass = 0;
    for (int64_t i = 0; i < k; ++i) {
      mass += probs_[i] / sum;
      if (mass >= o_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (int64_t i = 0; i < keep; ++i) kept += probs_[i];
  const double r = std::uniform_real_distribution<double>(0.0, kept)(rng_);
  double acc = 0;
  for (int64_t i = 0; i < keep; ++i) {
    acc += probs_[i];
    if (r < acc) return order_[i];
  }
  return order_[keep - 1];
}

}  // namespace replica

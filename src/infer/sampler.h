// Picking the next token from logits: greedy (temperature 0), or sampling from
// softmax(logits / temperature) restricted to the top_k most likely tokens and then to the
// smallest set whose probability reaches top_p (the order transformers applies them in:
// temperature, top-k, top-p). Random draws come from a seeded std::mt19937_64, so a seed fixes
// the whole continuation. Ties in ranking go to the smaller token id.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace replica {

struct SamplingOptions {
  double temperature = 0;  // 0 = greedy (argmax)
  int64_t top_k = 0;       // 0 = no limit
  double top_p = 1.0;      // 1 = no limit; in (0, 1]
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Error naming the option when temperature < 0, top_k < 0 or top_p outside (0, 1].
  explicit Sampler(const SamplingOptions& options);
  int32_t Next(std::span<const float> logits);

 private:
  SamplingOptions o_;
  std::mt19937_64 rng_;
  std::vector<int32_t> order_;
  std::vector<double> probs_;
};

// The index of the largest logit (the smallest index among equal maxima).
int32_t ArgMax(std::span<const float> logits);

}  // namespace replica

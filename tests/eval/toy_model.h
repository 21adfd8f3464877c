// A toy language model for evaluator tests: logits[t][v] = W[token_t][v] (a random bigram table),
// scored in double. It provides both a LossFn (what the evaluators call) and direct log-probs
// (what the tests compare against), computed independently of the evaluators' bookkeeping.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "eval/scorer.h"

namespace replica::eval::testing {

class ToyBigram {
 public:
  explicit ToyBigram(int64_t vocab, uint64_t seed = 1) : V_(vocab), w_(vocab * vocab) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> nd(0.0, 2.0);
    for (double& x : w_) x = nd(rng);
  }
  int64_t vocab() const { return V_; }
  // log p(next | prev)
  double LogProb(int32_t prev, int32_t next) const {
    const double* row = &w_[prev * V_];
    double m = row[0];
    for (int64_t v = 1; v < V_; ++v) m = std::max(m, row[v]);
    double s = 0;
    for (int64_t v = 0; v < V_; ++v) s += std::exp(row[v] - m);
    return row[next] - m - std::log(s);
  }
  LossFn AsLossFn() const {
    return [this](const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T) {
      CrossEntropySums s;
      for (int64_t i = 0; i < B * T; ++i) {
        if (labels[i] == kIgnoreLabel) continue;
        s.ce_sum -= LogProb(tokens[i], labels[i]);
        s.tokens += 1;
      }
      return s;
    };
  }

 private:
  int64_t V_;
  std::vector<double> w_;
};

}  // namespace replica::eval::testing

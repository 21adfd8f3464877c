// Paired canaries (docs/reference/decontamination-and-eval.md §5.2). Set A — random token sequences — is
// registered as evaluation data (data/eval/canary_registered.jsonl), so any leak of eval data
// into training carries it along; its twin B is drawn the same way from a seed derived from A's
// content and exists nowhere (no file, never in training). Unseen, both cost about the same
// (≈ ln V nats per token or more); a model that has trained on A finds A easier. Each eval reports
// the per-document mean CE of both and a Welch z statistic of the gap; the alarm fires when A is
// easier than B by more than `alarm_z` standard errors.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "eval/eval_set.h"
#include "eval/scorer.h"

namespace replica::eval {

// `count` sequences of `length` ids drawn uniformly from [0, vocab) with mt19937_64(seed)
// (Lemire's multiply-shift for the range, so the result is the same on every platform).
EvalSet MakeCanarySet(const std::string& name, uint64_t seed, int64_t count, int64_t length,
                      int64_t vocab);

// The twin of a registered set: same count and length, seed = XXH3 of A's token ids.
EvalSet MakeCanaryTwin(const EvalSet& registered, int64_t vocab);

struct CanaryResult {
  int64_t docs = 0;
  double registered_ce = 0, twin_ce = 0;  // mean over documents of per-token CE
  double gap = 0;                         // twin_ce - registered_ce (> 0: A easier)
  double z = 0;                           // gap / standard error (Welch)
  bool alarm = false;
  nlohmann::json ToJson() const;
};

// Scores both sets document by document (batch 1, no EOS appended).
CanaryResult EvaluateCanaries(const EvalSet& registered, const EvalSet& twin, const LossFn& loss,
                              int64_t seq_len, double alarm_z);

}  // namespace replica::eval

// What the evaluators need from a model: OLMo-core's loss on a padded batch. Given tokens and
// labels [B, T] (label -100 = ignored), return the sums of cross-entropy over the labelled
// positions (CrossEntropySums, model/olmo3.h). Olmo3Model::ForwardLoss is exactly this, so a trainer passes
//   [&](auto* t, auto* l, int64_t B, int64_t T) { return model.ForwardLoss(t, l, B, T); }
// and tests pass an independent reference. Nothing here forms a [B, T, V] logits tensor.
#pragma once
#include <cstdint>
#include <functional>

#include "model/olmo3.h"

namespace replica::eval {

using LossFn = std::function<CrossEntropySums(const int32_t* tokens, const int32_t* labels, int64_t B,
                                      int64_t T)>;

// Largest batch shape a LossFn accepts (the model's preallocated maximum).
struct BatchShape {
  int64_t max_batch = 1;
  int64_t max_seq = 0;
};

}  // namespace replica::eval

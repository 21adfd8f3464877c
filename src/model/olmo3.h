// The Olmo 3 decoder on flat buffers (docs/design.md §2, §3): parameters and gradients each live in one
// FlatBuffer laid out by ModelConfig::BuildLayout(); activations are preallocated for a maximum
// micro-batch shape, so a step allocates nothing.
#pragma once
#include <cstdint>
#include <memory>

#include "model/model_config.h"
#include "ops/cpu/cross_entropy.h"
#include "ops/cpu/precision.h"
#include "tensor/flat_buffer.h"

namespace replica {

class Olmo3Model {
 public:
  Olmo3Model(const ModelConfig& config, int64_t max_batch, int64_t max_seq);
  ~Olmo3Model();

  const ModelConfig& config() const;
  // What every matmul is fed (ops/cpu/precision.h); fp32 unless set. Parameters, gradients,
  // activations and everything outside the matmuls stay fp32 in either mode.
  Precision precision() const;
  void set_precision(Precision precision);
  const ParamLayout& layout() const;
  FlatBuffer& params();
  FlatBuffer& grads();

  // Forward and backward on tokens/labels [B, T] (B <= max_batch, T <= max_seq). Gradients of
  //   grad_scale · Σ_tokens (CE + z_loss_multiplier · lse²)
  // are ACCUMULATED (+=) into grads(). Returns the unscaled sums.
  CrossEntropySums ForwardBackward(const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T,
                           double grad_scale, double z_loss_multiplier);
  // Loss only: no logits tensor of [B, T, V] is formed.
  CrossEntropySums ForwardLoss(const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T);
  // Full logits [B, T, V] into `logits` (for parity and evaluation).
  void ForwardLogits(const int32_t* tokens, int64_t B, int64_t T, float* logits);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace replica

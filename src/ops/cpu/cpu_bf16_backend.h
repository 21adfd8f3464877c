// The bf16 mixed-precision CPU backend (docs/precision.md): the fp32 CPU backend with every
// matmul-bearing op fed bf16 operands and accumulating in fp32 — the linear layers (forward and
// both backward products), attention's QKᵀ and PV (forward and backward) and the LM head (loss,
// loss with its backward, and logits): CpuFp32Backend's ops, each calling the op of the same name
// with Precision::kBf16, so that op's header states its numerics and determinism. Norms, RoPE,
// SwiGLU, the embedding, softmax statistics, cross-entropy, z-loss and the buffer math are fp32.
//
// Both CPU backends are registered as device "cpu" (ops/registry.h): SelectBackend("cpu", kFp32)
// is CpuBackend(), SelectBackend("cpu", kBf16) the one CpuBf16Backend. Both live for the whole
// process.
#pragma once
#include "ops/cpu/cpu_backend.h"
#include "ops/precision.h"

namespace replica {

class CpuBf16Backend : public CpuFp32Backend {
 public:
  CpuBf16Backend() : CpuFp32Backend(Precision::kBf16) {}
  const char* name() const override { return "cpu-bf16"; }
  // The step bracket holds a Bf16WeightScope (ops/cpu/bf16_weights.h): each matmul weight is
  // converted to bf16 once per optimizer step; NoteWeightsWritten marks copies stale.
  std::unique_ptr<StepBracket> BeginStep() const override;
  void NoteWeightsWritten(const void* begin, size_t bytes) const override;
  int64_t WeightCopiesMade() const override;  // Bf16WeightConversions()
  // The fp32 update; the weights change, so every bf16 copy of a weight is stale.
  void AdamWUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                   const AdamWCoefficients& c) const override;
};

}  // namespace replica

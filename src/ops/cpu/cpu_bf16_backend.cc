#include "ops/cpu/cpu_bf16_backend.h"

#include "ops/cpu/bf16_weights.h"
#include "ops/registry.h"

namespace replica {
namespace {

struct Bf16WeightsBracket final : Backend::StepBracket {
  Bf16WeightScope scope;
};

const Backend& Bf16Instance() {
  static const CpuBf16Backend backend;
  return backend;
}

}  // namespace

std::unique_ptr<Backend::StepBracket> CpuBf16Backend::BeginStep() const {
  return std::make_unique<Bf16WeightsBracket>();
}

void CpuBf16Backend::NoteWeightsWritten(const void* begin, size_t bytes) const {
  replica::NoteWeightsWritten(begin, bytes);
}

int64_t CpuBf16Backend::WeightCopiesMade() const { return Bf16WeightConversions(); }

void CpuBf16Backend::AdamWUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                                 const AdamWCoefficients& c) const {
  NoteWeightsUpdated();
  CpuFp32Backend::AdamWUpdate(p, g, m, v, n, c);
}

REPLICA_REGISTER_BACKEND(cpu_fp32, "cpu", Precision::kFp32, CpuBackend())
REPLICA_REGISTER_BACKEND(cpu_bf16, "cpu", Precision::kBf16, Bf16Instance())

}  // namespace replica

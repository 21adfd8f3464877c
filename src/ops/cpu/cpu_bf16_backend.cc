#include "ops/cpu/cpu_bf16_backend.h"

#include "ops/registry.h"

namespace replica {
namespace {

const Backend& Bf16Instance() {
  static const CpuBf16Backend backend;
  return backend;
}

}  // namespace

REPLICA_REGISTER_BACKEND(cpu_fp32, "cpu", Precision::kFp32, CpuBackend())
REPLICA_REGISTER_BACKEND(cpu_bf16, "cpu", Precision::kBf16, Bf16Instance())

}  // namespace replica

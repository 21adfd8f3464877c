#include "ops/cpu/cpu_bf16_backend.h"

namespace replica {

const Backend& BackendFor(Precision precision) {
  static const CpuBf16Backend bf16;
  return precision == Precision::kBf16 ? static_cast<const Backend&>(bf16) : CpuBackend();
}

}  // namespace replica

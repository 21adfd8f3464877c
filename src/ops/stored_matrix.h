// A read-only matrix kept in the element type it was stored in (fp32, or bf16 / f16 as a
// checkpoint or Hugging Face file holds it): what the inference ops of the table
// (Backend::MatVec, Backend::EmbeddingForwardStored) read, so a decode step streams each weight
// byte once instead of widening the weights to an fp32 copy first. Row-major [rows, cols].
#pragma once
#include <cstdint>

#include "tensor/dtype.h"

namespace replica {

struct StoredMatrix {
  DType dtype = DType::kF32;
  const void* data = nullptr;
  int64_t rows = 0, cols = 0;
};

}  // namespace replica

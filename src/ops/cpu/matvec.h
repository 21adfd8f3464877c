// Matrix-vector products for one-token decoding, reading the weight in the dtype it is stored in
// (fp32, or bf16 widened to fp32 in registers), so a decode step streams each weight byte once.
// Arithmetic is fp32. Each output row is owned by one thread and summed in a fixed order: element
// k of a row goes to partial sum k mod 32 (whatever the SIMD width), the 32 partials are added
// left to right, and products and sums are separately rounded (no FMA), so results are identical
// for every thread count and every SIMD target.
#pragma once
#include <cstdint>

#include "tensor/dtype.h"

namespace replica {

// Partial sums per row (element k goes to partial k mod 32).
inline constexpr int64_t kMatVecLanes = 32;

// W [rows, cols] in `dtype` (F32 or BF16; Error otherwise); x [cols]; y [rows] = W x (overwritten).
void MatVec(DType dtype, const void* W, const float* x, int64_t rows, int64_t cols, float* y);

// The same sums in plain scalar code (for the tests).
void MatVecReference(DType dtype, const void* W, const float* x, int64_t rows, int64_t cols,
                     float* y);

}  // namespace replica

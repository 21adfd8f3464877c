// Matrix-vector products for one-token decoding, reading the weight in the dtype it is stored in
// (fp32, or bf16 widened to fp32 in registers), so a decode step streams each weight byte once.
// Arithmetic is fp32. Each output row is owned by one thread and summed in a fixed order: element
// k of a row goes to partial sum k mod 32 (whatever the SIMD width), the 32 partials are added
// left to right, and products and sums are separately rounded (no FMA), so results are identical
// for every thread count and every SIMD target.
// Precision::kBf16 (the bf16 backend's decoding): x and the weights are rounded to bf16 before
// the products (a BF16-stored weight already is; an F32 one is rounded row by row as it is read),
// products are then exact and the same fp32 sums follow, so the step is a bf16-input,
// fp32-accumulate product like the bf16 LinearForward, in this fixed order.
#pragma once
#include <cstdint>

#include "ops/precision.h"
#include "tensor/dtype.h"

namespace replica {

// Partial sums per row (element k goes to partial k mod 32).
inline constexpr int64_t kMatVecLanes = 32;

// W [rows, cols] in `dtype` (F32 or BF16; Error otherwise); x [cols]; y [rows] = W x (overwritten).
void MatVec(DType dtype, const void* W, const float* x, int64_t rows, int64_t cols, float* y,
            Precision precision = Precision::kFp32);

// The same sums in plain scalar code (for the tests).
void MatVecReference(DType dtype, const void* W, const float* x, int64_t rows, int64_t cols,
                     float* y, Precision precision = Precision::kFp32);

}  // namespace replica

// The AdamW element update (optim/adamw.h gives the math and the order of operations), SIMD in
// double through Highway. Every operation is a separately rounded IEEE double multiply, add,
// subtract, divide or square root in the scalar order (no fused multiply-add), so the vector code
// gives exactly the bits of AdamWElementsReference, on any vector width and thread count.
// p, g, m and v are distinct arrays of n floats.
#pragma once
#include <cstdint>

#include "ops/adamw_coefficients.h"

namespace replica {

// For i < n: g' = g·coef; p = p·keep; m = β1·m + (1−β1)·g'; v = β2·v + (1−β2)·g'·g';
// p = p − step_size·m / (√v / bias2_sqrt + eps); all in double, stored to fp32 once.
void AdamWElements(float* p, const float* g, float* m, float* v, int64_t n,
                   const AdamWCoefficients& c);
void AdamWElementsReference(float* p, const float* g, float* m, float* v, int64_t n,
                            const AdamWCoefficients& c);

}  // namespace replica

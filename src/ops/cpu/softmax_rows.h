// Row kernels of the fused LM head's softmax (ops/cpu/cross_entropy.h), SIMD through Highway.
//
// Results do not depend on the vector width: the exponential is computed lane by lane with the same
// polynomial (Highway's Exp), and the sum of a row goes into kSumLanes fixed partial sums (element
// v goes to partial v % kSumLanes, in increasing v): per whole sub-block of kSubBlock elements in
// fp32 (16 terms per partial, a few ulp), added into double partials, which are finally added in
// partial order. Elements past the last whole sub-block go straight into the double partials. Rows are owned by one thread, so nothing depends on the thread count either.
#pragma once
#include <cstdint>

namespace replica {

constexpr int64_t kSumLanes = 16;
constexpr int64_t kSubBlock = 256;

// max over l[0, n).
float RowMax(const float* l, int64_t n);

// l[v] = exp(l[v] - shift) in place for v < n; returns Σ_v l[v] (after) in the order above.
double ExpShiftSumInPlace(float* l, int64_t n, float shift);

// Softmax numerator and denominator in one pass over memory: l[v] = exp(l[v] - shift) in place and
// returns Σ_v l[v] (same order as above), with *shift_out = shift. The shift is any value with
// max(l) - kShiftHeadroom <= shift <= max(l) -- softmax does not depend on it, and within that range
// no term overflows and none that matters underflows -- chosen block by block (kShiftBlock
// elements, each max-reduced and exponentiated while in cache): the first block's max, raised to a
// later block's max only when that exceeds it by more than kShiftHeadroom (then everything so far
// is rescaled, a rare path). A pure function of the row.
constexpr int64_t kShiftBlock = 1024;  // a multiple of kSubBlock
constexpr float kShiftHeadroom = 64.0f;
double ExpSumAutoShiftInPlace(float* l, int64_t n, float* shift_out);

// l[v] *= scale for v < n.
void ScaleRow(float* l, int64_t n, float scale);

// The order of ExpShiftSumInPlace's sum, scalar, on already exponentiated values (for tests).
double FixedOrderSumReference(const float* e, int64_t n);

}  // namespace replica

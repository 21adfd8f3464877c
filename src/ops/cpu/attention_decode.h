// Attention of one decoding step: one query position against a layer's key/value cache
// (DecodeAttentionShape, ops/attention_shape.h). Per head, in fp32: the scaled scores
// q·k_j / sqrt(hd) over the visible positions in position order, their maximum, exp(s - max)
// summed in double, and out = Σ_j (exp_j / Σ) v_j added in position order. Each head is computed by
// one thread, so the result does not depend on the thread count.
// Precision::kBf16 (the bf16 backend's decoding): q, k and v are rounded to bf16 and so is each
// exp(s − max) before it weights v (the sum is of the unrounded values), out = Σ_j bf16(exp_j) v_j
// divided by the sum at the end: the bf16 AttentionForward's rounding of a row (attention.h).
#pragma once
#include <cstdint>

#include "ops/attention_shape.h"
#include "ops/precision.h"

namespace replica {

// q [H, hd]; k_cache, v_cache [capacity, KV*hd]; writes out [H, hd]. scores is scratch of
// H · capacity floats.
void AttentionDecode(const DecodeAttentionShape& s, const float* q, const float* k_cache,
                     const float* v_cache, float* out, float* scores,
                     Precision precision = Precision::kFp32);

}  // namespace replica

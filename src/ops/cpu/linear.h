// Bias-free linear layer y = x W^T with W stored [out, in] (HF layout), on the deterministic tiled
// Sgemm (gemm.h). The backward uses the GEMM's transpose flags, never a transposed copy. With
// Precision::kBf16 every GEMM (forward and both backward products) takes bf16-rounded operands
// and accumulates in fp32 (gemm_bf16.h); outputs and gradients stay fp32.
// Sgemm (gemm.h). The backward uses the GEMM's transpose flags, never a transposed copy.
// Outputs (y, dx, dW) must not alias any input. Bit-identical for any thread count (gemm.h).
#pragma once
#include <array>
#include <cstdint>

#include "ops/cpu/gemm_bf16.h"
#include "ops/precision.h"

namespace replica {

// x [N, in]; W [out, in]; y [N, out]          y = x W^T   (y is overwritten)
void LinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out, float* y,
                   Precision precision = Precision::kFp32);
// Backward of the line above; accumulates (+=):
//   dx [N, in]  += dy W          (skipped when dx is null, e.g. nothing upstream needs it)
//   dW [out,in] += dy^T x
void LinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                    int64_t out, float* dx, float* dW, Precision precision = Precision::kFp32);

// The GEMMs the two run, as they call them: the forward's y = x Wᵀ, the backward's dx = dy W and
// dW = dyᵀ x (the weight is operand B of the first two).
std::array<GemmShape, 3> LinearGemms(int64_t N, int64_t in, int64_t out);

// Plain triple-loop references (double accumulation) for the tests.
void LinearForwardReference(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                            float* y);
void LinearBackwardReference(const float* x, const float* W, const float* dy, int64_t N,
                             int64_t in, int64_t out, float* dx, float* dW);

}  // namespace replica

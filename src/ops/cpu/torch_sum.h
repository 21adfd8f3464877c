// fp32 sums in the order ATen's CPU sum kernel (aten/src/ATen/native/cpu/SumKernel.cpp, cascade
// sum over 8-float vectors: the kernel has an AVX2 build only) adds them, for the ops of bf16-fsdp (fsdp_bf16.h) whose
// bf16 rounding depends on the last bit of such a sum (a norm's mean square, its backward's row
// and column sums). The order is fixed by the sizes alone, so results do not depend on the
// machine or the thread count.
#pragma once
#include <cstdint>

namespace replica {

// Σ x[0, n) as torch.sum over a contiguous last dimension of n elements.
float TorchInnerSum(const float* x, int64_t n);
// Σ exp(x[i] − shift) in the same order, each term std::exp's (logsumexp's sum; torch's exp is
// MKL's vector exp, which glibc's matches in 99% of fp32 values).
float TorchInnerSumExp(const float* x, int64_t n, float shift);
// out[c] = Σ_r x[r·cols + c] as torch.sum over the leading dimensions of a contiguous
// [rows, cols] tensor (the rows coalesced into one reduced dimension).
void TorchOuterSum(const float* x, int64_t rows, int64_t cols, float* out);

}  // namespace replica

// bf16 GEMMs in the fp32 orders of ATen's own CPU loops (aten/src/ATen/native/cpu/BlasKernel.cpp),
// which torch runs for bf16 matmuls on CPUs where it does not hand them to oneDNN (those without
// AVX-512 BW, VL and DQ; TorchCpuPath::kReference in fsdp_bf16.h). The operands hold bf16 values,
// so every product is exact in fp32 and only the order of the fp32 adds decides a result; each
// function states that order. Results do not depend on the thread count.
#pragma once
#include <cstdint>

namespace replica {

// C[i][j] = dot(A row i, B row j) over K (A [M, K] and B [N, K], rows contiguous), each dot as
// ATen's dot_with_fp32_arith on 8-lane fp32 vectors forms it: the first K − K % 64 terms into 64
// accumulators (term k into accumulator k % 64), folded 32 apart, then 16, 8, 4, 2, 1; then
// whole 16-term chunks of the rest into 8 accumulators (term k into k % 8), folded 4, 2, 1 and
// added; then the last K % 16 terms one by one. (torch's x Wᵀ of a bf16 linear layer.)
void AtenDotGemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                 int64_t ldb, float* C, int64_t ldc);

// C[i][j] = Σ_k A[i][k] B[k][j] (A [M, K], B [K, N], rows contiguous) as ATen's sum() forms it:
// four partial sums, term k into sum k % 4 while whole groups of four remain, the rest into sum
// 0, then ((s0 + s1) + s2) + s3. (torch's dy W, the input gradient of a bf16 linear layer.)
void AtenIlp4Gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float* C, int64_t ldc);

// C[i][j] += Σ_k A[k][i] B[k][j] (A [K, M], B [K, N], rows contiguous), one accumulator per
// output that starts at C's value and takes the terms in k order. (torch's dyᵀ x, the weight
// gradient of a bf16 linear layer, with C zero.)
void AtenSeqGemmTnAccumulate(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                             const float* B, int64_t ldb, float* C, int64_t ldc);

}  // namespace replica

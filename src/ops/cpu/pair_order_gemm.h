// GEMMs whose every output is one fp32 accumulator walking k in a fixed order, each product
// rounded to fp32 and then added (no FMA); for bf16-valued operands each product is exact. Two
// orders: the pair order of pair_order_sum.h (1, 0, 3, 2, ..., a last odd term alone: how oneDNN's
// bf16 dot product adds a bf16-output GEMM's terms, which bf16-fsdp follows) and index order
// (0, 1, 2, ...: torch's flash-attention kernel's fp32 dots).
//
// The kernels compute many outputs at once (SIMD lanes across columns of C, a few rows of C per
// pass; PairOrderGemm also splits rows over threads), but each output is still one accumulator
// walking k in its order, so its bits equal the scalar reference's for every SIMD target and
// thread count.
#pragma once
#include <cstdint>

namespace replica {

enum class SumOrder { kPair, kIndex };

// C[M, N] (row stride ldc) = op(A)[M, K] op(B)[K, N] in the pair order; op(A) = A (row stride lda)
// or, with ta, A stored [K, M]; op(B) = B [K, N] (row stride ldb) or, with tb, B stored [N, K].
// C is overwritten. Rows of C are split over OpenMP threads when the product is large.
void PairOrderGemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float* C, int64_t ldc);

// The same product in `order` on the calling thread, allocating nothing (for callers that are
// already one task of a parallel loop): op(A)[i][k] = A[i * a_row + k * a_col] (any strides),
// op(B)[k][j] = B[k * ldb + j] (columns contiguous).
void OrderedGemmRows(SumOrder order, int64_t M, int64_t N, int64_t K, const float* A,
                     int64_t a_row, int64_t a_col, const float* B, int64_t ldb, float* C,
                     int64_t ldc);

// Scalar references, one output at a time (for the tests).
void PairOrderGemmReference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
                            int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc);
void OrderedGemmRowsReference(SumOrder order, int64_t M, int64_t N, int64_t K, const float* A,
                              int64_t a_row, int64_t a_col, const float* B, int64_t ldb, float* C,
                              int64_t ldc);

}  // namespace replica

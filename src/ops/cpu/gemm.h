// Deterministic multi-threaded SGEMM on OpenBLAS. OpenBLAS's own threading is not bit-identical
// across thread counts (how it splits the output decides which edge kernels touch which elements),
// so replica runs OpenBLAS single-threaded and parallelises here: C is cut into tiles whose size
// depends only on the GEMM's shape, each tile is one single-threaded sgemm over the whole K, and
// OpenMP hands tiles to threads. Every element of C is then computed by the same call with the same
// operands whatever the thread count (docs/design.md §2.3). C must not overlap A or B.
#pragma once
#include <cstdint>

namespace replica {

// Row-major C[M,N] = alpha · op(A) op(B) + beta · C, op(X) = X or Xᵀ as in cblas_sgemm.
void Sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
           int64_t ldc);

// Forces OpenBLAS to one thread (idempotent, cheap); Sgemm calls it before its parallel region.
void UseSingleThreadedBlas();

}  // namespace replica

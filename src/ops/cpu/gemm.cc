#include "ops/cpu/gemm.h"
#include "core/profile.h"

#include <cblas.h>

#include <algorithm>

namespace replica {
namespace {

// Below this many multiply-adds one call on one thread is cheaper than tiling.
constexpr int64_t kSmallGemm = int64_t{1} << 18;
// Tiles start at kTileM × kTileN and halve (down to kMinTile) until there are kMinTiles of them.
constexpr int64_t kTileM = 256, kTileN = 512, kMinTile = 64, kMinTiles = 16;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

void UseSingleThreadedBlas() {
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

void Sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
           int64_t ldc) {
  ProfileScope profile_scope(ProfileCategory::kGemm);
  if (M <= 0 || N <= 0) return;
  UseSingleThreadedBlas();
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  if (M * N * K <= kSmallGemm) {
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  int64_t tm = std::min(kTileM, M), tn = std::min(kTileN, N);
  while (CeilDiv(M, tm) * CeilDiv(N, tn) < kMinTiles && (tm > kMinTile || tn > kMinTile)) {
    if (tn >= tm && tn > kMinTile) {
      tn = std::max(kMinTile, tn / 2);
    } else {
      tm = std::max(kMinTile, tm / 2);
    }
  }
  const int64_t tiles_m = CeilDiv(M, tm), tiles_n = CeilDiv(N, tn);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tiles_m * tiles_n; ++t) {
    const int64_t i0 = (t / tiles_n) * tm, j0 = (t % tiles_n) * tn;
    const int64_t m = std::min(tm, M - i0), n = std::min(tn, N - j0);
    const float* a = trans_a ? A + i0 : A + i0 * lda;  // rows i0.. of op(A)
    const float* b = trans_b ? B + j0 * ldb : B + j0;  // columns j0.. of op(B)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, K, alpha, a, lda, b, ldb, beta, C + i0 * ldc + j0,
                ldc);
  }
}

}  // namespace replica

// The ordered GEMMs on Highway (run-time target dispatch); see pair_order_gemm.h for the orders.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/cpu/pair_order_gemm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// After foreach_target.h:
#include <hwy/highway.h>

#include <algorithm>
#include <vector>

#include "core/profile.h"
#include "ops/cpu/pair_order_gemm.h"
#include "ops/cpu/pair_order_sum.h"

HWY_BEFORE_NAMESPACE();
namespace replica {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Rows of C per pass and vectors of C's columns per pass: kRows × kVecs accumulators stay in
// registers while k walks its order once for all of them.
constexpr int64_t kRows = 4;
constexpr int64_t kVecs = 2;

// The k of the t-th term: in the pair order pairs swapped, a last odd term alone.
template <bool kPair>
HWY_INLINE int64_t TermIndex(int64_t t, int64_t last) {
  if constexpr (kPair) return t == last ? t : (t ^ 1);
  return t;
}

// Rows [i0, i0 + rows) of C, rows <= kRows.
template <bool kPair>
HWY_INLINE void RowBlock(int64_t i0, int64_t rows, int64_t N, int64_t K, const float* A,
                         int64_t a_row, int64_t a_col, const float* B, int64_t ldb, float* C,
                         int64_t ldc) {
  const DF d;
  const int64_t n = static_cast<int64_t>(hn::Lanes(d));
  const int64_t last = K % 2 == 1 ? K - 1 : -1;
  int64_t j = 0;
  for (; j + kVecs * n <= N; j += kVecs * n) {
    VF acc[kRows][kVecs];
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t v = 0; v < kVecs; ++v) acc[r][v] = hn::Zero(d);
    for (int64_t t = 0; t < K; ++t) {
      const int64_t k = TermIndex<kPair>(t, last);
      VF b[kVecs];
      for (int64_t v = 0; v < kVecs; ++v) b[v] = hn::LoadU(d, B + k * ldb + j + v * n);
      for (int64_t r = 0; r < rows; ++r) {
        const VF x = hn::Set(d, A[(i0 + r) * a_row + k * a_col]);
        for (int64_t v = 0; v < kVecs; ++v) acc[r][v] = hn::Add(acc[r][v], hn::Mul(x, b[v]));
      }
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < kVecs; ++v) hn::StoreU(acc[r][v], d, C + (i0 + r) * ldc + j + v * n);
  }
  for (; j < N; ++j)  // the columns past the last full pass, one output at a time
    for (int64_t r = 0; r < rows; ++r) {
      float acc = 0;
      for (int64_t t = 0; t < K; ++t) {
        const int64_t k = TermIndex<kPair>(t, last);
        acc += A[(i0 + r) * a_row + k * a_col] * B[k * ldb + j];
      }
      C[(i0 + r) * ldc + j] = acc;
    }
}

template <bool kPair>
void Rows(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_row, int64_t a_col,
          const float* B, int64_t ldb, float* C, int64_t ldc, bool parallel) {
  const int64_t blocks = (M + kRows - 1) / kRows;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i0 = blk * kRows;
    RowBlock<kPair>(i0, std::min(kRows, M - i0), N, K, A, a_row, a_col, B, ldb, C, ldc);
  }
}

}  // namespace

void PairOrderRows(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_row, int64_t a_col,
                   const float* B, int64_t ldb, float* C, int64_t ldc, bool parallel) {
  Rows<true>(M, N, K, A, a_row, a_col, B, ldb, C, ldc, parallel);
}
void IndexOrderRows(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_row,
                    int64_t a_col, const float* B, int64_t ldb, float* C, int64_t ldc,
                    bool parallel) {
  Rows<false>(M, N, K, A, a_row, a_col, B, ldb, C, ldc, parallel);
}

}  // namespace HWY_NAMESPACE
}  // namespace replica
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace replica {
HWY_EXPORT(PairOrderRows);
HWY_EXPORT(IndexOrderRows);

void PairOrderGemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float* C, int64_t ldc) {
  ProfileScope profile_scope(ProfileCategory::kGemm);
  // The kernel reads op(B) a row of N columns per term; a transposed B is copied that way first.
  std::vector<float> packed;
  if (tb) {
    packed.resize(static_cast<size_t>(K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) packed[static_cast<size_t>(k * N + j)] = B[j * ldb + k];
    B = packed.data();
    ldb = N;
  }
  const int64_t a_row = ta ? 1 : lda, a_col = ta ? lda : 1;
  HWY_DYNAMIC_DISPATCH(PairOrderRows)(M, N, K, A, a_row, a_col, B, ldb, C, ldc,
                                      M * N * K >= (int64_t{1} << 20));
}

void OrderedGemmRows(SumOrder order, int64_t M, int64_t N, int64_t K, const float* A,
                     int64_t a_row, int64_t a_col, const float* B, int64_t ldb, float* C,
                     int64_t ldc) {
  if (order == SumOrder::kPair)
    HWY_DYNAMIC_DISPATCH(PairOrderRows)(M, N, K, A, a_row, a_col, B, ldb, C, ldc, false);
  else
    HWY_DYNAMIC_DISPATCH(IndexOrderRows)(M, N, K, A, a_row, a_col, B, ldb, C, ldc, false);
}

void PairOrderGemmReference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
                            int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      C[i * ldc + j] = PairOrderSum(K, [&](int64_t k) {
        return (ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
      });
}

void OrderedGemmRowsReference(SumOrder order, int64_t M, int64_t N, int64_t K, const float* A,
                              int64_t a_row, int64_t a_col, const float* B, int64_t ldb, float* C,
                              int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      auto term = [&](int64_t k) { return A[i * a_row + k * a_col] * B[k * ldb + j]; };
      if (order == SumOrder::kPair) {
        C[i * ldc + j] = PairOrderSum(K, term);
      } else {
        float acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += term(k);
        C[i * ldc + j] = acc;
      }
    }
}

}  // namespace replica
#endif  // HWY_ONCE

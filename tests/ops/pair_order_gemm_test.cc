// The ordered GEMMs (ops/cpu/pair_order_gemm.h): the SIMD, row-blocked (and for PairOrderGemm
// threaded) kernels give the bits of the one-output-at-a-time references for every transpose,
// stride and ragged shape (row blocks and column vectors cut short, odd K), in the pair and the
// index order, for bf16-valued operands and for arbitrary fp32 ones.
#include "ops/cpu/pair_order_gemm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <random>
#include <vector>

#include "ops/cpu/bf16_round.h"

namespace replica {
namespace {

std::vector<float> Random(size_t n, bool bf16, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = bf16 ? RoundToBf16(dist(rng)) : dist(rng);
  return v;
}

void ExpectSameBits(bool ta, bool tb, int64_t M, int64_t N, int64_t K, bool bf16,
                    std::mt19937& rng) {
  // Strides one wider than the rows they hold, so a kernel that assumed packed rows would read
  // the wrong elements.
  const int64_t lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 1, ldc = N + 3;
  const std::vector<float> A = Random(static_cast<size_t>((ta ? K : M) * lda), bf16, rng);
  const std::vector<float> B = Random(static_cast<size_t>((tb ? N : K) * ldb), bf16, rng);
  std::vector<float> fast(static_cast<size_t>(M * ldc), -7.0f), ref = fast;
  PairOrderGemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, fast.data(), ldc);
  PairOrderGemmReference(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, ref.data(), ldc);
  EXPECT_EQ(0, std::memcmp(fast.data(), ref.data(), fast.size() * sizeof(float)))
      << "ta " << ta << " tb " << tb << " M " << M << " N " << N << " K " << K << " bf16 " << bf16;
}

TEST(PairOrderGemm, SameBitsAsTheReferenceForEveryShapeAndTranspose) {
  std::mt19937 rng(11);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t M : {1, 3, 4, 5, 9})
        for (int64_t N : {1, 7, 16, 17, 40})
          for (int64_t K : {1, 2, 3, 8, 31})
            for (bool bf16 : {true, false}) ExpectSameBits(ta, tb, M, N, K, bf16, rng);
}

TEST(PairOrderGemm, SameBitsOnEveryThreadCountAboveTheParallelThreshold) {
  std::mt19937 rng(12);
  const int before = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    ExpectSameBits(false, true, 67, 130, 129, true, rng);  // 67·130·129 > 2^20 multiply-adds
    ExpectSameBits(true, false, 130, 67, 129, false, rng);
  }
  omp_set_num_threads(before);
}

TEST(OrderedGemmRows, SameBitsAsTheReferenceInBothOrdersForAnyStrides) {
  std::mt19937 rng(13);
  for (SumOrder order : {SumOrder::kPair, SumOrder::kIndex})
    for (bool a_transposed : {false, true})
      for (int64_t M : {1, 4, 6})
        for (int64_t N : {3, 16, 35})
          for (int64_t K : {1, 5, 32}) {
            // op(A)[i][k] at A[i·a_row + k·a_col], rows of a wider buffer either way round.
            const int64_t a_row = a_transposed ? 1 : K + 2, a_col = a_transposed ? M + 3 : 1;
            const int64_t ldb = N + 1, ldc = N + 2;
            const std::vector<float> A = Random(static_cast<size_t>((M + 3) * (K + 2)), true, rng);
            const std::vector<float> B = Random(static_cast<size_t>(K * ldb), false, rng);
            std::vector<float> fast(static_cast<size_t>(M * ldc), -7.0f), ref = fast;
            OrderedGemmRows(order, M, N, K, A.data(), a_row, a_col, B.data(), ldb, fast.data(), ldc);
            OrderedGemmRowsReference(order, M, N, K, A.data(), a_row, a_col, B.data(), ldb,
                                     ref.data(), ldc);
            EXPECT_EQ(0, std::memcmp(fast.data(), ref.data(), fast.size() * sizeof(float)))
                << "order " << static_cast<int>(order) << " a_transposed " << a_transposed
                << " M " << M << " N " << N << " K " << K;
          }
}

// The order is the pair order, not left to right: terms whose sum depends on the order.
TEST(PairOrderGemm, AddsTheTermsInPairOrder) {
  // Terms 1e8, 1, -1e8, 1 (as products with B = 1): pair order 1, 1e8, 1, -1e8 gives
  // ((1 + 1e8) + 1) - 1e8 = 0 in fp32, left to right ((1e8 + 1) - 1e8) + 1 = 1.
  const std::vector<float> A = {1e8f, 1.0f, -1e8f, 1.0f}, B = {1, 1, 1, 1};
  float c = -1, r = -1;
  PairOrderGemm(false, false, 1, 1, 4, A.data(), 4, B.data(), 1, &c, 1);
  PairOrderGemmReference(false, false, 1, 1, 4, A.data(), 4, B.data(), 1, &r, 1);
  EXPECT_EQ(c, 0.0f);
  EXPECT_EQ(r, 0.0f);
  OrderedGemmRows(SumOrder::kIndex, 1, 1, 4, A.data(), 4, 1, B.data(), 1, &c, 1);
  EXPECT_EQ(c, 1.0f);
}

}  // namespace
}  // namespace replica

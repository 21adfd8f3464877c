// bf16-input GEMM: rounding to bf16 (ties to even, NaN, Inf, agreement with the storage
// conversion), every route (emulated, oneDNN f32 on rounded operands, oneDNN bf16 where the CPU
// has it) against the scalar reference for all transpose flags, alpha and beta; bit-identical
// results across thread counts; and that bf16 is really not fp32.
#include "ops/cpu/gemm_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/half.h"
#include "core/threads.h"
#include "op_test_util.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/isa.h"

namespace replica {
namespace {
using testing::BitEqual;
using testing::RandomVector;
using testing::RelErr;

TEST(RoundToBf16, TiesToEvenAndSpecialValues) {
  EXPECT_EQ(RoundToBf16(1.0f), 1.0f);
  EXPECT_EQ(RoundToBf16(1.0f + 0x1p-8f), 1.0f);                       // tie: to the even 1.0
  EXPECT_EQ(RoundToBf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);         // tie: to the even 1 + 2^-6
  EXPECT_EQ(RoundToBf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // above the tie: up
  EXPECT_EQ(RoundToBf16(-3.0f), -3.0f);
  EXPECT_TRUE(std::isnan(RoundToBf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(RoundToBf16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  // The largest finite float rounds up to Inf, as a bf16 conversion does.
  EXPECT_EQ(RoundToBf16(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  // Agrees with the storage conversion of core/half.h on many values.
  auto x = RandomVector(10000, 3, 100.0f);
  std::vector<float> r(x.size());
  RoundToBf16(x.data(), r.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(r[i], Bf16ToF32(F32ToBf16(x[i]))) << x[i];
}

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                        const float*, int64_t, float, float*, int64_t);

void OneDnnF32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
               int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  GemmBf16OneDnn(false, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void OneDnnBf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  GemmBf16OneDnn(true, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void Active(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
            int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  GemmBf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Every transpose combination, alpha/beta, shapes that cut into uneven tiles, leading dimensions
// larger than the rows.
void CheckAgainstReference(GemmFn fn, const char* name) {
  const int64_t M = 150, N = 330, K = 97;
  for (int flags = 0; flags < 4; ++flags) {
    const bool ta = flags & 1, tb = flags & 2;
    const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
    auto A = RandomVector((ta ? K : M) * lda, 10 + flags);
    auto B = RandomVector((tb ? N : K) * ldb, 20 + flags);
    for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.5f, 1.0f}}) {
      auto C = RandomVector(M * ldc, 30 + flags), Cr = C;
      fn(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
      GemmBf16Reference(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, Cr.data(), ldc);
      // Products of bf16 values are exact in fp32; only the fp32 sums round.
      EXPECT_LT(RelErr(C, Cr), 2e-6) << name << " ta=" << ta << " tb=" << tb << " beta=" << beta;
    }
  }
}

TEST(GemmBf16, EmulatedMatchesReference) {
  CheckAgainstReference(GemmBf16Emulated, "emulated");
}
TEST(GemmBf16, OneDnnTilesMatchReference) {
  CheckAgainstReference(OneDnnF32, "onednn f32");
}
TEST(GemmBf16, OneDnnBf16MatchesReferenceWhereAvailable) {
  if (!OneDnnBf16MatmulAvailable()) GTEST_SKIP() << "no oneDNN bf16 matmul on this CPU";
  CheckAgainstReference(OneDnnBf16, "onednn bf16");
}
TEST(GemmBf16, ActiveRouteMatchesReference) {
  CheckAgainstReference(Active, Bf16GemmRouteName(ActiveBf16GemmRoute()));
  // oneDNN on AMX, and on AMD's AVX512-BF16; emulated elsewhere.
  const CpuFeatures& cpu = DetectCpu();
  const bool want_onednn =
      OneDnnBf16MatmulAvailable() &&
      (HasBf16MatrixUnits() || (ActiveIsa() == Isa::kAvx512 && cpu.avx512_bf16 && cpu.amd));
  EXPECT_EQ(ActiveBf16GemmRoute() == Bf16GemmRoute::kOneDnn, want_onednn);
}

TEST(GemmBf16, BitIdenticalAcrossThreadCounts) {
  const int64_t M = 700, N = 520, K = 300;
  auto A = RandomVector(M * K, 1), B = RandomVector(K * N, 2);
  std::vector<std::pair<GemmFn, const char*>> routes = {
      {GemmBf16Emulated, "emulated"}, {OneDnnF32, "onednn f32"}, {Active, "active"}};
  if (OneDnnBf16MatmulAvailable()) routes.push_back({OneDnnBf16, "onednn bf16"});
  for (auto [fn, name] : routes) {
    std::vector<float> C[3];
    for (int t = 0; t < 3; ++t) {
      SetNumThreads(t + 1);
      C[t].assign(M * N, 1.0f);
      fn(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 1.0f, C[t].data(), N);
    }
    SetNumThreads(0);
    EXPECT_TRUE(BitEqual(C[0], C[1])) << name;
    EXPECT_TRUE(BitEqual(C[0], C[2])) << name;
  }
}

TEST(GemmBf16, DiffersFromFp32ByBf16Rounding) {
  const int64_t M = 64, N = 64, K = 256;
  auto A = RandomVector(M * K, 5), B = RandomVector(K * N, 6);
  std::vector<float> c32(M * N), c16(M * N);
  Sgemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, c32.data(), N);
  Gemm(Precision::kBf16, false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, c16.data(),
       N);
  const double rel = RelErr(c16, c32);
  EXPECT_GT(rel, 1e-4);  // bf16 has 8 significant bits: ~2^-9 relative per operand
  EXPECT_LT(rel, 1e-2);
  // Pre-rounded operands give exactly the same inputs, so the emulated route equals Sgemm on them.
  std::vector<float> Ar(A.size()), Br(B.size()), c(M * N);
  RoundToBf16(A.data(), Ar.data(), static_cast<int64_t>(A.size()));
  RoundToBf16(B.data(), Br.data(), static_cast<int64_t>(B.size()));
  Sgemm(false, false, M, N, K, 1.0f, Ar.data(), K, Br.data(), N, 0.0f, c.data(), N);
  std::vector<float> ce(M * N);
  GemmBf16Emulated(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, ce.data(), N);
  EXPECT_TRUE(BitEqual(c, ce));
}

TEST(Precision, ParsesAndRefusesByName) {
  EXPECT_EQ(ParsePrecision("fp32", "x"), Precision::kFp32);
  EXPECT_EQ(ParsePrecision("bf16", "x"), Precision::kBf16);
  try {
    ParsePrecision("fp16", "config key 'compute.precision'");
    FAIL() << "fp16 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("compute.precision"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp16"), std::string::npos) << e.what();
  }
}

TEST(Isa, ResolvesAutoAndRefusesWhatTheCpuLacks) {
  const CpuFeatures& f = DetectCpu();
  EXPECT_EQ(ResolveIsa("auto", "--isa"), f.Best());
  EXPECT_THROW(ResolveIsa("sse9", "--isa"), Error);
  for (auto [name, isa] : {std::pair{"avx2", Isa::kAvx2}, std::pair{"avx512", Isa::kAvx512},
                           std::pair{"amx", Isa::kAmx}}) {
    if (isa <= f.Best()) {
      EXPECT_EQ(ResolveIsa(name, "--isa"), isa);
    } else {
      try {
        ResolveIsa(name, "--isa");
        FAIL() << name << " accepted on a CPU whose best is " << IsaName(f.Best());
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--isa"), std::string::npos) << e.what();
      }
    }
  }
  // Features nest: AMX implies AVX-512 implies AVX2.
  EXPECT_TRUE(!f.amx_bf16 || f.avx512);
  EXPECT_TRUE(!f.avx512 || f.avx2);
}

}  // namespace
}  // namespace replica

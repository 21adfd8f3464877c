// The bf16-fsdp ops (ops/cpu/fsdp_bf16.h): every output is a bf16 value; gradients accumulate as
// torch and OLMo-core add them (an activation gradient rounded after the add, a parameter
// gradient summed in fp32), exactly; attention follows torch's key blocks against the bf16
// reference where one block holds the row; results are bit-identical across thread counts.
// Following OLMo-core's own bf16 numbers is checked against OLMo-core's fixture
// (tests/model/olmo_core_bf16_fsdp_test.cc) and in the follow test.
#include <gtest/gtest.h>

#include <cmath>

#include "core/threads.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/fsdp_bf16.h"
#include "op_test_util.h"

namespace replica {
namespace {
using testing::BitEqual;
using testing::RandomVector;

std::vector<float> Rounded(std::vector<float> x) {
  RoundToBf16(x.data(), x.data(), static_cast<int64_t>(x.size()));
  return x;
}
bool AllBf16(const std::vector<float>& x) {
  for (float v : x)
    if (RoundToBf16(v) != v) return false;
  return true;
}
// What an accumulating op must leave: R(init + fresh) for activation gradients, init + fresh for
// parameter gradients, where fresh is the op's result from a zero start (a bf16 value).
void ExpectActivationAdd(const std::vector<float>& got, const std::vector<float>& init,
                         const std::vector<float>& fresh, const char* what) {
  ASSERT_EQ(got.size(), init.size());
  EXPECT_TRUE(AllBf16(fresh)) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], RoundToBf16(init[i] + fresh[i])) << what << " at " << i;
}
void ExpectParamAdd(const std::vector<float>& got, const std::vector<float>& init,
                    const std::vector<float>& fresh, const char* what) {
  ASSERT_EQ(got.size(), init.size());
  EXPECT_TRUE(AllBf16(fresh)) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], init[i] + fresh[i]) << what << " at " << i;
}

TEST(FsdpBf16, LinearRoundsOutputAndAccumulatesAsTorch) {
  const int64_t N = 37, in = 48, out = 20;
  auto x = Rounded(RandomVector(N * in, 1)), W = RandomVector(out * in, 2, 0.2f);
  auto dy = Rounded(RandomVector(N * out, 3));
  std::vector<float> y(N * out);
  FsdpLinearForward(x.data(), W.data(), N, in, out, y.data());
  EXPECT_TRUE(AllBf16(y));
  std::vector<float> dx0(N * in, 0.0f), dW0(out * in, 0.0f);
  FsdpLinearBackward(x.data(), W.data(), dy.data(), N, in, out, dx0.data(), dW0.data());
  const auto dx_init = Rounded(RandomVector(N * in, 4)), dW_init = RandomVector(out * in, 5);
  auto dx = dx_init, dW = dW_init;
  FsdpLinearBackward(x.data(), W.data(), dy.data(), N, in, out, dx.data(), dW.data());
  ExpectActivationAdd(dx, dx_init, dx0, "dx");
  ExpectParamAdd(dW, dW_init, dW0, "dW");
}

TEST(FsdpBf16, NormRopeSwiGLUEmbeddingRoundAndAccumulate) {
  const int64_t rows = 9, n = 40;
  auto x = Rounded(RandomVector(rows * n, 6)), w = RandomVector(n, 7, 0.5f);
  auto res = Rounded(RandomVector(rows * n, 8)), dy = Rounded(RandomVector(rows * n, 9));
  std::vector<float> y(rows * n), ya(rows * n), rstd(rows);
  FsdpRMSNormForward(x.data(), w.data(), rows, n, 1e-6, y.data(), rstd.data());
  FsdpRMSNormAddForward(x.data(), w.data(), res.data(), rows, n, 1e-6, ya.data(), rstd.data());
  EXPECT_TRUE(AllBf16(y));
  for (size_t i = 0; i < ya.size(); ++i) ASSERT_EQ(ya[i], RoundToBf16(res[i] + y[i])) << i;
  std::vector<float> dx0(rows * n, 0.0f), dw0(n, 0.0f);
  FsdpRMSNormBackward(x.data(), w.data(), rstd.data(), dy.data(), rows, n, dx0.data(), dw0.data());
  const auto dx_init = Rounded(RandomVector(rows * n, 10)), dw_init = RandomVector(n, 11);
  auto dx = dx_init, dw = dw_init;
  FsdpRMSNormBackward(x.data(), w.data(), rstd.data(), dy.data(), rows, n, dx.data(), dw.data());
  ExpectActivationAdd(dx, dx_init, dx0, "norm dx");
  ExpectParamAdd(dw, dw_init, dw0, "norm dw");

  const int64_t B = 2, T = 6, heads = 3, hd = 8, m = B * T * heads * hd;
  const RopeTable table = MakeRopeTable(T, hd, 10000.0);
  auto q = Rounded(RandomVector(m, 12)), dq = Rounded(RandomVector(m, 13));
  std::vector<float> qr(m), dr0(m, 0.0f);
  FsdpRopeForward(table, q.data(), B, T, heads, nullptr, qr.data());
  EXPECT_TRUE(AllBf16(qr));
  FsdpRopeBackward(table, dq.data(), B, T, heads, nullptr, dr0.data());
  const auto dr_init = Rounded(RandomVector(m, 14));
  auto dr = dr_init;
  FsdpRopeBackward(table, dq.data(), B, T, heads, nullptr, dr.data());
  ExpectActivationAdd(dr, dr_init, dr0, "rope dx");

  auto g = Rounded(RandomVector(m, 15, 3.0f)), u = Rounded(RandomVector(m, 16));
  std::vector<float> s(m), dg0(m, 0.0f), du0(m, 0.0f);
  FsdpSwiGLUForward(g.data(), u.data(), m, s.data());
  EXPECT_TRUE(AllBf16(s));
  FsdpSwiGLUBackward(g.data(), u.data(), dq.data(), m, dg0.data(), du0.data());
  const auto dg_init = Rounded(RandomVector(m, 17)), du_init = Rounded(RandomVector(m, 18));
  auto dg = dg_init, du = du_init;
  FsdpSwiGLUBackward(g.data(), u.data(), dq.data(), m, dg.data(), du.data());
  ExpectActivationAdd(dg, dg_init, dg0, "swiglu dg");
  ExpectActivationAdd(du, du_init, du0, "swiglu du");

  const int64_t N = 50, D = 12, V = 7;
  std::vector<int32_t> tokens(N);
  for (int64_t i = 0; i < N; ++i) tokens[i] = static_cast<int32_t>((i * i + 3 * i) % 5);
  auto tab = RandomVector(V * D, 19), dout = Rounded(RandomVector(N * D, 20));
  std::vector<float> e(N * D), dt0(V * D, 0.0f);
  FsdpEmbeddingForward(tab.data(), tokens.data(), N, D, e.data());
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < D; ++j) ASSERT_EQ(e[i * D + j], RoundToBf16(tab[tokens[i] * D + j]));
  FsdpEmbeddingBackward(tokens.data(), dout.data(), N, V, D, dt0.data());
  // Each token's row: the positions added in order, each sum rounded.
  for (int64_t v = 0; v < V; ++v)
    for (int64_t j = 0; j < D; ++j) {
      float acc = 0;
      for (int64_t i = 0; i < N; ++i)
        if (tokens[i] == v) acc = RoundToBf16(acc + dout[i * D + j]);
      ASSERT_EQ(dt0[v * D + j], acc) << v << " " << j;
    }
  const auto dt_init = RandomVector(V * D, 21);
  auto dt = dt_init;
  FsdpEmbeddingBackward(tokens.data(), dout.data(), N, V, D, dt.data());
  ExpectParamAdd(dt, dt_init, dt0, "embedding");
}

// With the whole row in one key block (T <= kFsdpAttentionKeyBlock) the running max is the row
// max, so the output is the bf16 reference's (P = R(exp(s − row max)), unrounded sums) rounded
// once, up to torch's fast exp (fexp_u20: within 1.2e-4 of exp, so about one P in twenty rounds
// the other way) and the reference's double sums.
TEST(FsdpBf16, AttentionOneKeyBlockIsTheBf16ReferenceRounded) {
  for (const AttentionShape& a :
       std::vector<AttentionShape>{{2, 70, 4, 2, 16, 0}, {1, 130, 4, 1, 8, 32}}) {
    const int64_t nq = a.B * a.T * a.H * a.hd, nk = a.B * a.T * a.KV * a.hd;
    auto q = Rounded(RandomVector(nq, 22)), k = Rounded(RandomVector(nk, 23));
    auto v = Rounded(RandomVector(nk, 24));
    std::vector<float> o(nq), lse(a.B * a.H * a.T), oref(nq), lref(lse.size());
    FsdpAttentionForward(a, q.data(), k.data(), v.data(), o.data(), lse.data());
    AttentionForwardReference(a, q.data(), k.data(), v.data(), oref.data(), lref.data(),
                              Precision::kBf16);
    EXPECT_TRUE(AllBf16(o));
    int64_t equal = 0;
    for (int64_t i = 0; i < nq; ++i) {
      const float r = RoundToBf16(oref[i]);
      equal += o[i] == r;
      // One bf16 ulp, or where a sum cancels, a few flipped roundings of a P (each ≤ 2^-8 p |v|).
      ASSERT_LE(std::abs(o[i] - r), std::abs(r) * 0x1p-7f + 4e-3f) << i;
    }
    EXPECT_GE(static_cast<double>(equal) / nq, 0.9) << equal << " of " << nq;
    for (size_t i = 0; i < lse.size(); ++i) ASSERT_NEAR(lse[i], lref[i], 1.2e-4 + 1e-6 * std::abs(lref[i]));
  }
}

// Beyond one key block the running max changes what P is rounded against; the output stays
// attention to bf16 accuracy (against the fp32 op), the lse to fp32 accuracy.
TEST(FsdpBf16, AttentionSeveralKeyBlocksStayAttention) {
  const AttentionShape a{1, 2 * kFsdpAttentionKeyBlock + 37, 2, 1, 8, 700};
  const int64_t nq = a.B * a.T * a.H * a.hd, nk = a.B * a.T * a.KV * a.hd;
  auto q = Rounded(RandomVector(nq, 25, 2.0f)), k = Rounded(RandomVector(nk, 26, 2.0f));
  auto v = Rounded(RandomVector(nk, 27));
  std::vector<float> o(nq), lse(a.B * a.H * a.T), o32(nq), l32(lse.size());
  FsdpAttentionForward(a, q.data(), k.data(), v.data(), o.data(), lse.data());
  AttentionForward(a, q.data(), k.data(), v.data(), o32.data(), l32.data());
  EXPECT_LT(testing::RelErr(o, o32), 1e-2);
  for (size_t i = 0; i < lse.size(); ++i) ASSERT_NEAR(lse[i], l32[i], 1e-4 * (1 + std::abs(l32[i])));
  std::vector<float> dout = Rounded(RandomVector(nq, 28)), dq(nq, 0.0f), dk(nk, 0.0f),
                     dv(nk, 0.0f), dq32(nq, 0.0f), dk32(nk, 0.0f), dv32(nk, 0.0f);
  FsdpAttentionBackward(a, q.data(), k.data(), v.data(), o.data(), lse.data(), dout.data(),
                        dq.data(), dk.data(), dv.data());
  AttentionBackward(a, q.data(), k.data(), v.data(), o32.data(), l32.data(), dout.data(),
                    dq32.data(), dk32.data(), dv32.data());
  EXPECT_LT(testing::RelErr(dq, dq32), 3e-2);
  EXPECT_LT(testing::RelErr(dk, dk32), 3e-2);
  EXPECT_LT(testing::RelErr(dv, dv32), 3e-2);
  EXPECT_TRUE(AllBf16(dq) && AllBf16(dk) && AllBf16(dv));
}

TEST(FsdpBf16, BitIdenticalAcrossThreadCounts) {
  const AttentionShape a{2, 200, 4, 2, 16, 64};
  const int64_t nq = a.B * a.T * a.H * a.hd, nk = a.B * a.T * a.KV * a.hd;
  auto q = Rounded(RandomVector(nq, 29)), k = Rounded(RandomVector(nk, 30));
  auto v = Rounded(RandomVector(nk, 31)), dout = Rounded(RandomVector(nq, 32));
  const int64_t N = 400, in = 64, out = 96;
  auto x = Rounded(RandomVector(N * in, 33)), W = RandomVector(out * in, 34, 0.2f);
  auto w = RandomVector(in, 35), dy = Rounded(RandomVector(N * in, 36));
  std::vector<std::vector<float>> got[2];
  for (int t = 0; t < 2; ++t) {
    SetNumThreads(t + 1);
    std::vector<float> o(nq), lse(a.B * a.H * a.T), dq(nq, 0.0f), dk(nk, 0.0f), dv(nk, 0.0f);
    FsdpAttentionForward(a, q.data(), k.data(), v.data(), o.data(), lse.data());
    FsdpAttentionBackward(a, q.data(), k.data(), v.data(), o.data(), lse.data(), dout.data(),
                          dq.data(), dk.data(), dv.data());
    std::vector<float> y(N * out), dx(N * in, 0.0f), dW(out * in, 0.0f), yn(N * in), rs(N),
        dxn(N * in, 0.0f), dw(in, 0.0f);
    FsdpLinearForward(x.data(), W.data(), N, in, out, y.data());
    FsdpLinearBackward(x.data(), W.data(), y.data(), N, in, out, dx.data(), dW.data());
    FsdpRMSNormForward(x.data(), w.data(), N, in, 1e-6, yn.data(), rs.data());
    FsdpRMSNormBackward(x.data(), w.data(), rs.data(), dy.data(), N, in, dxn.data(), dw.data());
    got[t] = {o, lse, dq, dk, dv, y, dx, dW, yn, dxn, dw};
  }
  SetNumThreads(0);
  for (size_t i = 0; i < got[0].size(); ++i) EXPECT_TRUE(BitEqual(got[0][i], got[1][i])) << i;
}

}  // namespace
}  // namespace replica


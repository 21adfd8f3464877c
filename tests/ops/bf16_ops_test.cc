// The ops in bf16 precision (docs/precision.md): linear, attention and the fused LM-head loss with
// bf16-rounded matmul operands and fp32 accumulation, each against its scalar reference that rounds
// the inputs to bf16 and sums in double; bf16 results differ from fp32 by bf16 rounding (the mode
// is really on); and bit-identical results across thread counts (and attention backward schemes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/threads.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/cross_entropy.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/linear.h"
#include "op_test_util.h"

namespace replica {
namespace {
using testing::BitEqual;
using testing::RandomVector;
using testing::RelErr;

std::vector<float> Rounded(std::vector<float> x) {
  RoundToBf16(x.data(), x.data(), static_cast<int64_t>(x.size()));
  return x;
}

TEST(LinearBf16, MatchesReferenceOnRoundedInputs) {
  const int64_t N = 45, in = 70, out = 33;
  auto x = RandomVector(N * in, 1), W = RandomVector(out * in, 2, 0.1f);
  auto dy = RandomVector(N * out, 3);
  std::vector<float> y(N * out), yr(N * out), y32(N * out);
  LinearForward(x.data(), W.data(), N, in, out, y.data(), Precision::kBf16);
  LinearForwardReference(Rounded(x).data(), Rounded(W).data(), N, in, out, yr.data());
  LinearForward(x.data(), W.data(), N, in, out, y32.data());
  EXPECT_LT(RelErr(y, yr), 2e-6);
  EXPECT_GT(RelErr(y, y32), 1e-4);  // the rounding is really applied
  auto dx0 = RandomVector(N * in, 4), dW0 = RandomVector(out * in, 5);
  std::vector<float> dx = dx0, dW = dW0, dxr = dx0, dWr = dW0;
  LinearBackward(x.data(), W.data(), dy.data(), N, in, out, dx.data(), dW.data(), Precision::kBf16);
  // Backward: dx += bf16(dy) bf16(W), dW += bf16(dy)ᵀ bf16(x).
  LinearBackwardReference(Rounded(x).data(), Rounded(W).data(), Rounded(dy).data(), N, in, out,
                          dxr.data(), dWr.data());
  EXPECT_LT(RelErr(dx, dxr), 2e-6);
  EXPECT_LT(RelErr(dW, dWr), 2e-6);
}

TEST(LinearBf16, BitIdenticalAcrossThreadCounts) {
  const int64_t N = 300, in = 256, out = 384;
  auto x = RandomVector(N * in, 6), W = RandomVector(out * in, 7), dy = RandomVector(N * out, 8);
  std::vector<float> y[3], dx[3], dW[3];
  for (int t = 0; t < 3; ++t) {
    SetNumThreads(t + 1);
    y[t].resize(N * out);
    dx[t].assign(N * in, 0.0f);
    dW[t].assign(out * in, 0.0f);
    LinearForward(x.data(), W.data(), N, in, out, y[t].data(), Precision::kBf16);
    LinearBackward(x.data(), W.data(), dy.data(), N, in, out, dx[t].data(), dW[t].data(),
                   Precision::kBf16);
  }
  SetNumThreads(0);
  for (int t = 1; t < 3; ++t) {
    EXPECT_TRUE(BitEqual(y[0], y[t]));
    EXPECT_TRUE(BitEqual(dx[0], dx[t]));
    EXPECT_TRUE(BitEqual(dW[0], dW[t]));
  }
}

double MaxRel(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

struct AttnRun {
  std::vector<float> out, lse, dq, dk, dv;
};

AttnRun RunAttention(const AttentionShape& s, const std::vector<float>& q,
                     const std::vector<float>& k, const std::vector<float>& v,
                     const std::vector<float>& dout, Precision p,
                     AttentionBackwardScheme scheme = AttentionBackwardScheme::kAuto) {
  AttnRun r;
  r.out.assign(q.size(), 0.0f);
  r.lse.assign(s.B * s.H * s.T, 0.0f);
  r.dq.assign(q.size(), 0.0f);
  r.dk.assign(k.size(), 0.0f);
  r.dv.assign(v.size(), 0.0f);
  AttentionForward(s, q.data(), k.data(), v.data(), r.out.data(), r.lse.data(), p);
  AttentionBackwardWithScheme(s, q.data(), k.data(), v.data(), r.out.data(), r.lse.data(),
                              dout.data(), r.dq.data(), r.dk.data(), r.dv.data(), scheme, p);
  return r;
}

const AttentionShape kAttnShapes[] = {
    {1, 37, 2, 2, 16, 0}, {2, 129, 6, 2, 16, 32}, {1, 200, 3, 1, 64, 64}, {2, 70, 4, 1, 16, 0}};

TEST(AttentionBf16, ForwardMatchesBf16ReferenceAndBackwardTracksFp32) {
  for (const AttentionShape& s : kAttnShapes) {
    SCOPED_TRACE("T=" + std::to_string(s.T) + " H=" + std::to_string(s.H) +
                 " KV=" + std::to_string(s.KV) + " hd=" + std::to_string(s.hd));
    const size_t nq = s.B * s.T * s.H * s.hd, nkv = s.B * s.T * s.KV * s.hd;
    auto q = RandomVector(nq, 1), k = RandomVector(nkv, 2), v = RandomVector(nkv, 3);
    auto dout = RandomVector(nq, 4);
    const AttnRun fast = RunAttention(s, q, k, v, dout, Precision::kBf16);
    std::vector<float> out_ref(nq), lse_ref(s.B * s.H * s.T), out32(nq), lse32(lse_ref.size());
    AttentionForwardReference(s, q.data(), k.data(), v.data(), out_ref.data(), lse_ref.data(),
                              Precision::kBf16);
    AttentionForwardReference(s, q.data(), k.data(), v.data(), out32.data(), lse32.data());
    // lse: scores from the same rounded q, k, summed in fp32 vs double.
    EXPECT_LT(MaxRel(fast.lse, lse_ref), 1e-5);
    // out: P rounded at the running max vs the row max, so bf16 resolution (2^-8), not fp32.
    const double err_ref = MaxRel(fast.out, out_ref), err32 = MaxRel(fast.out, out32);
    EXPECT_LT(err_ref, 4e-3);
    EXPECT_GT(err32, 1e-4);  // bf16 is really on
    // The backward against the exact fp32 gradients: within bf16 error.
    std::vector<float> dq(nq, 0.0f), dk(nkv, 0.0f), dv(nkv, 0.0f);
    AttentionBackwardReference(s, q.data(), k.data(), v.data(), out32.data(), lse32.data(),
                               dout.data(), dq.data(), dk.data(), dv.data());
    EXPECT_LT(MaxRel(fast.dq, dq), 3e-2);
    EXPECT_LT(MaxRel(fast.dk, dk), 3e-2);
    EXPECT_LT(MaxRel(fast.dv, dv), 3e-2);
    EXPECT_GT(MaxRel(fast.dv, dv), 1e-5);
  }
}

TEST(AttentionBf16, BitIdenticalAcrossThreadsAndSchemes) {
  const AttentionShape s{2, 150, 4, 2, 32, 40};
  const size_t nq = s.B * s.T * s.H * s.hd, nkv = s.B * s.T * s.KV * s.hd;
  auto q = RandomVector(nq, 5), k = RandomVector(nkv, 6), v = RandomVector(nkv, 7);
  auto dout = RandomVector(nq, 8);
  SetNumThreads(1);
  const AttnRun base = RunAttention(s, q, k, v, dout, Precision::kBf16);
  for (int threads : {2, 3}) {
    SetNumThreads(threads);
    for (auto scheme : {AttentionBackwardScheme::kAuto, AttentionBackwardScheme::kPerKvHead,
                        AttentionBackwardScheme::kTwoPass}) {
      const AttnRun r = RunAttention(s, q, k, v, dout, Precision::kBf16, scheme);
      EXPECT_TRUE(BitEqual(r.out, base.out)) << threads;
      EXPECT_TRUE(BitEqual(r.lse, base.lse)) << threads;
      EXPECT_TRUE(BitEqual(r.dq, base.dq)) << threads << " scheme " << static_cast<int>(scheme);
      EXPECT_TRUE(BitEqual(r.dk, base.dk)) << threads << " scheme " << static_cast<int>(scheme);
      EXPECT_TRUE(BitEqual(r.dv, base.dv)) << threads << " scheme " << static_cast<int>(scheme);
    }
  }
  SetNumThreads(0);
}

std::vector<int32_t> Labels(int64_t n, int64_t V) {
  std::vector<int32_t> y(n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = (i % 5 == 2) ? kIgnoreLabel : static_cast<int32_t>((i * 37) % V);
  return y;
}

TEST(LmHeadLossBf16, MatchesBf16Reference) {
  const int64_t N = 29, D = 24, V = 101;
  auto x = RandomVector(N * D, 1), W = RandomVector(V * D, 2, 0.3f);
  auto y = Labels(N, V);
  const double scale = 1.0 / 23, zmul = 0.1;
  std::vector<float> dxr(N * D, 0.5f), dWr(V * D, 0.5f);
  const CrossEntropySums ref = LmHeadLossReference(x.data(), W.data(), y.data(), N, D, V, scale,
                                                   zmul, dxr.data(), dWr.data(), Precision::kBf16);
  const CrossEntropySums ref32 = LmHeadLossReference(x.data(), W.data(), y.data(), N, D, V, scale,
                                                     zmul, nullptr, nullptr);
  for (int64_t scratch : {V, 4 * V, int64_t{1} << 20}) {
    LmHeadWorkspace ws(CpuBackend(), N, V, scratch);
    std::vector<float> dx(N * D, 0.5f), dW(V * D, 0.5f);
    const CrossEntropySums s = LmHeadLossForwardBackward(
        x.data(), W.data(), y.data(), N, D, V, scale, zmul, ws, dx.data(), dW.data(),
        Precision::kBf16);
    EXPECT_EQ(s.tokens, ref.tokens);
    // The logits come from the same rounded operands: fp32 sums against double.
    EXPECT_NEAR(s.ce_sum, ref.ce_sum, 1e-6 * ref.ce_sum);
    EXPECT_NEAR(s.lse_sq_sum, ref.lse_sq_sum, 1e-6 * ref.lse_sq_sum);
    EXPECT_GT(std::fabs(s.ce_sum - ref32.ce_sum), 1e-6 * ref32.ce_sum);  // not fp32
    // Gradients: the fast path rounds exp(l − shift) and coef·x, the reference the whole dlogit.
    EXPECT_LT(RelErr(dx, dxr), 5e-3) << scratch;
    EXPECT_LT(RelErr(dW, dWr), 5e-3) << scratch;
    const CrossEntropySums f = LmHeadLossForward(x.data(), W.data(), y.data(), N, D, V, ws,
                                                 Precision::kBf16);
    EXPECT_EQ(f.ce_sum, s.ce_sum);
  }
}

TEST(LmHeadLossBf16, BitIdenticalAcrossThreadCounts) {
  const int64_t N = 200, D = 64, V = 3000;
  auto x = RandomVector(N * D, 3), W = RandomVector(V * D, 4, 0.3f);
  auto y = Labels(N, V);
  std::vector<float> dx[3], dW[3];
  double ce[3];
  for (int t = 0; t < 3; ++t) {
    SetNumThreads(t + 1);
    LmHeadWorkspace ws(CpuBackend(), N, V);
    dx[t].assign(N * D, 0.0f);
    dW[t].assign(V * D, 0.0f);
    ce[t] = LmHeadLossForwardBackward(x.data(), W.data(), y.data(), N, D, V, 1.0 / N, 1e-4, ws,
                                      dx[t].data(), dW[t].data(), Precision::kBf16)
                .ce_sum;
  }
  SetNumThreads(0);
  for (int t = 1; t < 3; ++t) {
    EXPECT_EQ(ce[0], ce[t]);
    EXPECT_TRUE(BitEqual(dx[0], dx[t]));
    EXPECT_TRUE(BitEqual(dW[0], dW[t]));
  }
}

}  // namespace
}  // namespace replica

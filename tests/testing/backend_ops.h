// Every op of the ops table (ops/backend.h) on one backend against the fp32 CPU reference, in the
// style of llama.cpp's test-backend-ops: each op's forward outputs and, for the model ops, its
// gradients, on shapes that cover the edge cases (one row, odd sizes, sizes off the SIMD width,
// one position, a window wider than the sequence and of one key, MQA and GQA, a head dim of 2,
// every label ignored, blocks longer than the data). A backend whose matmuls are fed bf16 is held
// to bf16 resolution on the ops that carry a matmul; every other result to fp32 resolution.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/half.h"
#include "ops/backend.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/rope.h"
#include "ops/op_test_util.h"
#include "ops/stored_matrix.h"

namespace replica::testing {

// ‖a − b‖ ≤ tol · max(‖b‖, √n): relative to the reference, and to unit-RMS values where the
// reference is near zero (e.g. dq and dk when each query sees one key).
inline void ExpectClose(const std::string& what, const std::vector<float>& a,
                        const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(std::isfinite(a[i])) << what << " [" << i << "]";
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  EXPECT_LE(std::sqrt(num), tol * std::max(std::sqrt(den), std::sqrt(double(a.size())))) << what;
}

// The same for an accumulated output: what each added to `init`.
inline void ExpectAdded(const std::string& what, const std::vector<float>& a,
                        const std::vector<float>& b, const std::vector<float>& init, double tol) {
  std::vector<float> da(a.size()), db(b.size());
  for (size_t i = 0; i < a.size() && i < init.size(); ++i) da[i] = a[i] - init[i];
  for (size_t i = 0; i < b.size() && i < init.size(); ++i) db[i] = b[i] - init[i];
  ExpectClose(what, da, db, tol);
}

// `rounds_every_tensor`: the backend stores every op's output as a bf16 value (bf16-fsdp), so the
// ops without a matmul differ from fp32 by bf16 rounding too (a few rounding steps of 2^-9).
inline void ExpectBackendMatchesCpu(const Backend& be, bool rounds_every_tensor = false) {
  const Backend& ref = CpuBackend();
  const bool bf16 = be.matmul_precision() == Precision::kBf16;
  const double mm = bf16 ? 3e-2 : 1e-5;                 // ops with a matmul
  const double ew = rounds_every_tensor ? 1.5e-2 : 1e-6;  // everything else
  const std::string tag = std::string(be.name()) + ": ";
  uint64_t seed = 1;
  auto rnd = [&](size_t n, float scale = 1.0f) { return RandomVector(n, seed++, scale); };

  // Linear: x [N, in], W [out, in].
  for (auto [N, in, out] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {1, 3, 5}, {7, 33, 17},
                                                               {64, 16, 48}}) {
    const std::string s = tag + "Linear N" + std::to_string(N) + " in" + std::to_string(in) +
                          " out" + std::to_string(out);
    auto x = rnd(N * in), W = rnd(out * in, 0.3f), dy = rnd(N * out);
    std::vector<float> y(N * out), yr(N * out);
    be.LinearForward(x.data(), W.data(), N, in, out, y.data());
    ref.LinearForward(x.data(), W.data(), N, in, out, yr.data());
    ExpectClose(s + " forward", y, yr, mm);
    auto dx = rnd(N * in), dW = rnd(out * in), dxr = dx, dWr = dW;  // accumulates
    const auto dx0 = dx, dW0 = dW;
    be.LinearBackward(x.data(), W.data(), dy.data(), N, in, out, dx.data(), dW.data());
    ref.LinearBackward(x.data(), W.data(), dy.data(), N, in, out, dxr.data(), dWr.data());
    ExpectAdded(s + " dx", dx, dxr, dx0, mm);
    ExpectAdded(s + " dW", dW, dWr, dW0, mm);
    std::vector<float> dW2(out * in), dW2r(out * in);
    be.LinearBackward(x.data(), W.data(), dy.data(), N, in, out, nullptr, dW2.data());
    ref.LinearBackward(x.data(), W.data(), dy.data(), N, in, out, nullptr, dW2r.data());
    ExpectClose(s + " dW without dx", dW2, dW2r, mm);
  }

  // RMSNorm (plain, fused with the residual add, backward): x [rows, n].
  for (auto [rows, n] : std::vector<std::array<int64_t, 2>>{{1, 1}, {1, 7}, {5, 33}, {16, 64}}) {
    const std::string s = tag + "RMSNorm rows" + std::to_string(rows) + " n" + std::to_string(n);
    auto x = rnd(rows * n), w = rnd(n, 0.5f), res = rnd(rows * n), dy = rnd(rows * n);
    std::vector<float> y(rows * n), yr(rows * n), rs(rows), rsr(rows);
    be.RMSNormForward(x.data(), w.data(), rows, n, 1e-6, y.data(), rs.data());
    ref.RMSNormForward(x.data(), w.data(), rows, n, 1e-6, yr.data(), rsr.data());
    ExpectClose(s + " forward", y, yr, ew);
    ExpectClose(s + " rstd", rs, rsr, ew);
    std::vector<float> in_place = x;  // y may alias x
    be.RMSNormForward(in_place.data(), w.data(), rows, n, 1e-6, in_place.data(), rs.data());
    EXPECT_EQ(in_place, y) << s << " forward in place";
    be.RMSNormAddForward(x.data(), w.data(), res.data(), rows, n, 1e-6, y.data(), rs.data());
    ref.RMSNormAddForward(x.data(), w.data(), res.data(), rows, n, 1e-6, yr.data(), rsr.data());
    ExpectClose(s + " add forward", y, yr, ew);
    auto dx = rnd(rows * n), dw = rnd(n), dxr = dx, dwr = dw;
    const auto dx0 = dx, dw0 = dw;
    be.RMSNormBackward(x.data(), w.data(), rsr.data(), dy.data(), rows, n, dx.data(), dw.data());
    ref.RMSNormBackward(x.data(), w.data(), rsr.data(), dy.data(), rows, n, dxr.data(), dwr.data());
    ExpectAdded(s + " dx", dx, dxr, dx0, ew);
    ExpectAdded(s + " dw", dw, dwr, dw0, ew);
  }

  // RoPE: x [B, T, heads, hd]; T = 1 and T = the table size.
  for (auto [B, T, heads, hd] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 2}, {2, 5, 3, 8},
                                                                    {1, 16, 2, 16}}) {
    const std::string s = tag + "Rope T" + std::to_string(T) + " hd" + std::to_string(hd);
    // Each backend reads the table it builds (Backend::FillRopeTable).
    const RopeTable table = MakeRopeTable(be, 16, hd, RopeParams::Plain(10000.0));
    const RopeTable table_ref = MakeRopeTable(ref, 16, hd, RopeParams::Plain(10000.0));
    const int64_t n = B * T * heads * hd;
    auto x = rnd(n), dy = rnd(n);
    std::vector<float> y(n), yr(n);
    be.RopeForward(table, x.data(), B, T, heads, nullptr, y.data());
    ref.RopeForward(table_ref, x.data(), B, T, heads, nullptr, yr.data());
    ExpectClose(s + " forward", y, yr, ew);
    auto dx = rnd(n), dxr = dx;
    const auto dx0 = dx;
    be.RopeBackward(table, dy.data(), B, T, heads, nullptr, dx.data());
    ref.RopeBackward(table_ref, dy.data(), B, T, heads, nullptr, dxr.data());
    ExpectAdded(s + " dx", dx, dxr, dx0, ew);
    // Given positions (packed documents, a decoding step): each row's own, here reversed.
    std::vector<int32_t> pos(B * T);
    for (int64_t r = 0; r < B * T; ++r) pos[r] = static_cast<int32_t>(T - 1 - r % T);
    be.RopeForward(table, x.data(), B, T, heads, pos.data(), y.data());
    ref.RopeForward(table_ref, x.data(), B, T, heads, pos.data(), yr.data());
    ExpectClose(s + " forward at positions", y, yr, ew);
    dx = dx0, dxr = dx0;
    be.RopeBackward(table, dy.data(), B, T, heads, pos.data(), dx.data());
    ref.RopeBackward(table_ref, dy.data(), B, T, heads, pos.data(), dxr.data());
    ExpectAdded(s + " dx at positions", dx, dxr, dx0, ew);
  }

  // Attention: MHA, GQA, MQA; full, a window of 1, a window wider than T; T = 1.
  for (const AttentionShape& a : std::vector<AttentionShape>{{1, 1, 1, 1, 2, 0},
                                                             {2, 9, 4, 2, 8, 0},
                                                             {1, 17, 4, 1, 16, 1},
                                                             {1, 33, 2, 2, 4, 64},
                                                             {2, 40, 6, 3, 8, 7}}) {
    const std::string s = tag + "Attention T" + std::to_string(a.T) + " H" + std::to_string(a.H) +
                          " KV" + std::to_string(a.KV) + " window" + std::to_string(a.window);
    const int64_t nq = a.B * a.T * a.H * a.hd, nk = a.B * a.T * a.KV * a.hd;
    auto q = rnd(nq), k = rnd(nk), v = rnd(nk), dout = rnd(nq);
    std::vector<float> o(nq), orf(nq), lse(a.B * a.H * a.T), lser(lse.size());
    be.AttentionForward(a, q.data(), k.data(), v.data(), o.data(), lse.data());
    ref.AttentionForward(a, q.data(), k.data(), v.data(), orf.data(), lser.data());
    ExpectClose(s + " out", o, orf, mm);
    ExpectClose(s + " lse", lse, lser, mm);
    auto dq = rnd(nq), dk = rnd(nk), dv = rnd(nk), dqr = dq, dkr = dk, dvr = dv;
    const auto dq0 = dq, dk0 = dk, dv0 = dv;
    be.AttentionBackward(a, q.data(), k.data(), v.data(), orf.data(), lser.data(), dout.data(),
                         dq.data(), dk.data(), dv.data());
    ref.AttentionBackward(a, q.data(), k.data(), v.data(), orf.data(), lser.data(), dout.data(),
                          dqr.data(), dkr.data(), dvr.data());
    ExpectAdded(s + " dq", dq, dqr, dq0, mm);
    ExpectAdded(s + " dk", dk, dkr, dk0, mm);
    ExpectAdded(s + " dv", dv, dvr, dv0, mm);
  }

  // SwiGLU and the buffer math: lengths 1, off the SIMD width, and long.
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{33}, int64_t{4099}}) {
    const std::string s = tag + "n" + std::to_string(n) + " ";
    auto g = rnd(n, 3.0f), u = rnd(n), ds = rnd(n);
    std::vector<float> y(n), yr(n);
    be.SwiGLUForward(g.data(), u.data(), n, y.data());
    ref.SwiGLUForward(g.data(), u.data(), n, yr.data());
    ExpectClose(s + "SwiGLU forward", y, yr, ew);
    auto dg = rnd(n), du = rnd(n), dgr = dg, dur = du;
    const auto dg0 = dg, du0 = du;
    be.SwiGLUBackward(g.data(), u.data(), ds.data(), n, dg.data(), du.data());
    ref.SwiGLUBackward(g.data(), u.data(), ds.data(), n, dgr.data(), dur.data());
    ExpectAdded(s + "SwiGLU dg", dg, dgr, dg0, ew);
    ExpectAdded(s + "SwiGLU du", du, dur, du0, ew);

    auto a = rnd(n), b = rnd(n), ar = a;
    be.Zero(a.data(), n);
    EXPECT_EQ(a, std::vector<float>(n, 0.0f)) << s << "Zero";
    be.Copy(a.data(), b.data(), n);
    EXPECT_EQ(a, b) << s << "Copy";
    a = ar;
    be.AddInto(a.data(), b.data(), n);
    ref.AddInto(ar.data(), b.data(), n);
    ExpectClose(s + "AddInto", a, ar, ew);
    auto src = b, srcr = b;
    be.MoveAndZero(a.data(), src.data(), n);
    ref.MoveAndZero(ar.data(), srcr.data(), n);
    EXPECT_EQ(a, b) << s << "MoveAndZero dst";
    EXPECT_EQ(src, std::vector<float>(n, 0.0f)) << s << "MoveAndZero src";
    be.Scale(a.data(), n, 0.37);
    ref.Scale(ar.data(), n, 0.37);
    ExpectClose(s + "Scale", a, ar, ew);
    for (int64_t block : {int64_t{1}, int64_t{8}, int64_t{5000}}) {
      const int64_t parts = (n + block - 1) / block;
      std::vector<double> p(parts), pr(parts);
      be.SumSquaresPartials(b.data(), n, block, p.data());
      ref.SumSquaresPartials(b.data(), n, block, pr.data());
      for (int64_t i = 0; i < parts; ++i)
        EXPECT_NEAR(p[i], pr[i], 1e-12 * std::abs(pr[i])) << s << "SumSquaresPartials " << block;
    }
    auto p = rnd(n), gr = rnd(n), m = rnd(n, 0.1f), v = rnd(n, 0.1f);
    for (float& x : v) x = x * x;
    auto pr = p, mr = m, vr = v;
    const AdamWCoefficients c{0.5, 1 - 1e-3 * 0.1, 0.9, 0.95, 1e-3 / 0.1, std::sqrt(1 - 0.95), 1e-8};
    be.AdamWUpdate(p.data(), gr.data(), m.data(), v.data(), n, c);
    ref.AdamWUpdate(pr.data(), gr.data(), mr.data(), vr.data(), n, c);
    ExpectClose(s + "AdamW p", p, pr, ew);
    ExpectClose(s + "AdamW m", m, mr, ew);
    ExpectClose(s + "AdamW v", v, vr, ew);
  }

  // Inference over stored weights. Each op against the same backend's training op on the same
  // values (the stored matrix widened to fp32): the embedding exactly; the matrix-vector product
  // to fp32 summation order (the same operand rounding, another order of the fp32 sums; bf16
  // storage of the output where the backend rounds every tensor); the cached attention to the
  // matmul tolerance (the bf16 forward rounds exp against a running maximum, the decode step
  // against the row's). And both against the fp32 CPU backend, to the matmul tolerance.
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (auto [rows, cols] : std::vector<std::array<int64_t, 2>>{{1, 1}, {5, 7}, {33, 70}}) {
      const std::string s = tag + DTypeName(dt) + " rows" + std::to_string(rows) + " cols" +
                            std::to_string(cols) + " ";
      const auto w = rnd(rows * cols, 0.3f);
      std::vector<uint16_t> half(w.size());
      std::vector<float> wide(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        half[i] = dt == DType::kBF16 ? F32ToBf16(w[i]) : F32ToF16(w[i]);
        wide[i] = dt == DType::kF32    ? w[i]
                  : dt == DType::kBF16 ? Bf16ToF32(half[i])
                                       : F16ToF32(half[i]);
      }
      const StoredMatrix m{dt, dt == DType::kF32 ? static_cast<const void*>(w.data()) : half.data(),
                           rows, cols};
      const int64_t N = 2 * rows + 1;
      std::vector<int32_t> tokens(N);
      for (int64_t i = 0; i < N; ++i) tokens[i] = static_cast<int32_t>((i * 3) % rows);
      std::vector<float> e(N * cols), er(N * cols);
      be.EmbeddingForwardStored(m, tokens.data(), N, e.data());
      ref.EmbeddingForward(wide.data(), tokens.data(), N, cols, er.data());
      EXPECT_EQ(e, er) << s << "EmbeddingForwardStored";
      if (dt == DType::kF16) continue;  // a decode step's matrices are F32 or BF16
      const auto x = rnd(cols);
      std::vector<float> y(rows), yl(rows), yr(rows);
      be.MatVec(m, x.data(), y.data());
      be.LinearForward(x.data(), wide.data(), 1, cols, rows, yl.data());
      ref.MatVec(m, x.data(), yr.data());
      ExpectClose(s + "MatVec vs Linear", y, yl, rounds_every_tensor ? ew : 1e-5);
      ExpectClose(s + "MatVec vs the CPU backend", y, yr, bf16 ? mm : ew);
    }
  }
  // The cached attention of the last position against AttentionForward's last row, with the
  // keys and values laid in a ring of `capacity` slots (position p in slot p % capacity).
  for (auto [T, H, KV, hd, window] : std::vector<std::array<int64_t, 5>>{
           {1, 1, 1, 2, 0}, {9, 4, 2, 8, 0}, {17, 4, 1, 16, 1}, {33, 2, 2, 4, 64}, {40, 6, 3, 8, 7}}) {
    const std::string s = tag + "AttentionDecode T" + std::to_string(T) + " window" +
                          std::to_string(window) + " ";
    const AttentionShape a{1, T, H, KV, hd, window};
    const int64_t KVd = KV * hd, capacity = window > 0 ? std::min(window, T) : T;
    auto q = rnd(T * H * hd), k = rnd(T * KVd), v = rnd(T * KVd);
    std::vector<float> o(T * H * hd), lse(H * T);
    be.AttentionForward(a, q.data(), k.data(), v.data(), o.data(), lse.data());
    std::vector<float> kc(capacity * KVd), vc(capacity * KVd);
    for (int64_t p = std::max<int64_t>(0, T - capacity); p < T; ++p) {
      std::copy(k.begin() + p * KVd, k.begin() + (p + 1) * KVd, kc.begin() + (p % capacity) * KVd);
      std::copy(v.begin() + p * KVd, v.begin() + (p + 1) * KVd, vc.begin() + (p % capacity) * KVd);
    }
    const DecodeAttentionShape d{H, KV, hd, window, capacity, T - 1};
    std::vector<float> out(H * hd), outr(H * hd), sc(H * capacity);
    be.AttentionDecode(d, q.data() + (T - 1) * H * hd, kc.data(), vc.data(), out.data(), sc.data());
    ref.AttentionDecode(d, q.data() + (T - 1) * H * hd, kc.data(), vc.data(), outr.data(),
                        sc.data());
    ExpectClose(s + "vs AttentionForward", out,
                std::vector<float>(o.begin() + (T - 1) * H * hd, o.end()), mm);
    ExpectClose(s + "vs the CPU backend", out, outr, bf16 ? mm : ew);
  }

  // Embedding (repeated tokens) and the LM head (labels ignored: none, some, all).
  for (auto [N, D, V] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {6, 7, 5}, {40, 16, 300}}) {
    const std::string s = tag + "N" + std::to_string(N) + " D" + std::to_string(D) + " V" +
                          std::to_string(V) + " ";
    std::vector<int32_t> tokens(N);
    for (int64_t i = 0; i < N; ++i) tokens[i] = static_cast<int32_t>((i * 7) % std::min<int64_t>(V, 3));
    auto table = rnd(V * D), dout = rnd(N * D);
    std::vector<float> e(N * D), er(N * D);
    be.EmbeddingForward(table.data(), tokens.data(), N, D, e.data());
    ref.EmbeddingForward(table.data(), tokens.data(), N, D, er.data());
    if (rounds_every_tensor)
      ExpectClose(s + "Embedding forward", e, er, ew);
    else
      EXPECT_EQ(e, er) << s << "Embedding forward";
    auto dt = rnd(V * D), dtr = dt;
    const auto dt0 = dt;
    be.EmbeddingBackward(tokens.data(), dout.data(), N, V, D, dt.data());
    ref.EmbeddingBackward(tokens.data(), dout.data(), N, V, D, dtr.data());
    ExpectAdded(s + "Embedding dtable", dt, dtr, dt0, ew);

    auto x = rnd(N * D), W = rnd(V * D, 0.3f);
    std::vector<float> lg(N * V), lgr(N * V);
    be.LmHeadLogits(x.data(), W.data(), N, D, V, lg.data());
    ref.LmHeadLogits(x.data(), W.data(), N, D, V, lgr.data());
    ExpectClose(s + "LmHeadLogits", lg, lgr, mm);
    for (int ignore : {0, 2, 1}) {  // none; every other row; all
      std::vector<int32_t> labels(N);
      for (int64_t i = 0; i < N; ++i)
        labels[i] = (ignore == 1 || (ignore == 2 && i % 2 == 1)) ? kIgnoreLabel
                                                                  : static_cast<int32_t>((i * 5) % V);
      const std::string sl = s + "LmHead ignore" + std::to_string(ignore) + " ";
      LmHeadWorkspace ws(be, N, V, 64), wsr(ref, N, V, 64);  // small scratch: several chunks
      const CrossEntropySums f = be.LmHeadLossForward(x.data(), W.data(), labels.data(), N, D, V, ws);
      const CrossEntropySums fr =
          ref.LmHeadLossForward(x.data(), W.data(), labels.data(), N, D, V, wsr);
      EXPECT_EQ(f.tokens, fr.tokens) << sl;
      EXPECT_NEAR(f.ce_sum, fr.ce_sum, mm * (1 + std::abs(fr.ce_sum))) << sl << "ce";
      EXPECT_NEAR(f.lse_sq_sum, fr.lse_sq_sum, mm * (1 + std::abs(fr.lse_sq_sum))) << sl << "lse²";
      auto dx = rnd(N * D), dW = rnd(V * D), dxr = dx, dWr = dW;
      const auto dx0 = dx, dW0 = dW;
      const CrossEntropySums b = be.LmHeadLossForwardBackward(
          x.data(), W.data(), labels.data(), N, D, V, 0.25, 1e-4, ws, dx.data(), dW.data());
      const CrossEntropySums br = ref.LmHeadLossForwardBackward(
          x.data(), W.data(), labels.data(), N, D, V, 0.25, 1e-4, wsr, dxr.data(), dWr.data());
      EXPECT_EQ(b.tokens, br.tokens) << sl;
      EXPECT_NEAR(b.ce_sum, br.ce_sum, mm * (1 + std::abs(br.ce_sum))) << sl << "ce (fwd+bwd)";
      ExpectAdded(sl + "dx", dx, dxr, dx0, mm);
      ExpectAdded(sl + "dW", dW, dWr, dW0, mm);
    }
  }
}

}  // namespace replica::testing

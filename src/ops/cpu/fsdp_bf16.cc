// The bf16-fsdp ops other than attention (fsdp_bf16.h): each computes as the fp32 op of this
// folder does, on rounded parameters, and rounds where torch's bf16 tensors are stored.
#include "ops/cpu/fsdp_bf16.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/profile.h"
#include "ops/cpu/aten_gemm.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/pair_order_gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/rope.h"
#include "ops/cpu/torch_cross_entropy.h"
#include "ops/cpu/torch_sum.h"

namespace replica {
namespace {

inline float R(float x) { return RoundToBf16(x); }

// Scratch that lives with the calling thread and grows to the largest call (the ops are not
// re-entered on a thread). Zeroed on request.
float* Scratch(std::vector<float>& buffer, int64_t n, bool zero) {
  if (static_cast<int64_t>(buffer.size()) < n) {  // exactly n, so it holds its largest call's
    buffer.clear();
    buffer.shrink_to_fit();
    buffer.resize(static_cast<size_t>(n));
  }
  if (zero) std::fill_n(buffer.data(), n, 0.0f);
  return buffer.data();
}
thread_local std::vector<float> tls_a, tls_b, tls_c, tls_w, tls_m, tls_z;

// acc = R(acc + R(t)): a second gradient added to a bf16 activation gradient.
void AddActivationGrad(float* acc, const float* t, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) acc[i] = R(acc[i] + R(t[i]));
}
// acc += R(t): a parameter's bf16 gradient added to its fp32 sum.
void AddParamGrad(float* acc, const float* t, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) acc[i] += R(t[i]);
}
// The rounded copy of a parameter (what FSDP gathers in bf16), in `scratch`: tls_w for norm
// weights, tls_m for matmul weights, so a norm and a matmul weight can be held at once.
const float* Rounded(std::vector<float>& scratch, const float* w, int64_t n) {
  float* r = Scratch(scratch, n, false);
  RoundToBf16(w, r, n);
  return r;
}

// OLMo-core's RMSNorm statistic in torch's fp32: rsqrt(x.pow(2).mean(-1) + eps), the mean a
// torch sum (torch_sum.h) divided by n.
float RowRstd(const float* x, int64_t n, double eps, float* squares) {
  for (int64_t j = 0; j < n; ++j) squares[j] = x[j] * x[j];
  const float var = TorchInnerSum(squares, n) / static_cast<float>(n);
  return 1.0f / std::sqrt(var + static_cast<float>(eps));
}

template <bool kResidual>
void NormRows(const float* x, const float* w, const float* residual, int64_t rows, int64_t n,
              double eps, float* y, float* rstd) {
  ProfileScope profile_scope(ProfileCategory::kNorm);
  const float* wr = Rounded(tls_w, w, n);
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    thread_local std::vector<float> squares;
    if (static_cast<int64_t>(squares.size()) < n) squares.resize(static_cast<size_t>(n));
    const float s = RowRstd(xr, n, eps, squares.data());
    rstd[r] = s;
    for (int64_t j = 0; j < n; ++j) {
      const float normed = R(wr[j] * (xr[j] * s));
      yr[j] = kResidual ? R(residual[r * n + j] + normed) : normed;
    }
  }
}

// Vectorized<float>'s width in torch's kernels on this CPU (log_softmax's lanes).
int TorchLossLanes() {
  return TorchCpuPathInUse() == TorchCpuPath::kReference ? 8 : kTorchLossLanes;
}

// The three products of a bf16 linear layer in the orders of the path torch takes on this CPU:
// y = x Wᵀ [N, out], dx = dy W [N, in], dW = dyᵀ x [out, in] (overwritten).
void LinearProduct(const float* x, const float* w, int64_t N, int64_t in, int64_t out, float* y) {
  if (TorchCpuPathInUse() == TorchCpuPath::kReference)
    AtenDotGemm(N, out, in, x, in, w, in, y, out);
  else
    PairOrderGemm(false, true, N, out, in, x, in, w, in, y, out);
}
void InputGradProduct(const float* dy, const float* w, int64_t N, int64_t in, int64_t out,
                      float* dx) {
  if (TorchCpuPathInUse() == TorchCpuPath::kReference)
    AtenIlp4Gemm(N, in, out, dy, out, w, in, dx, in);
  else
    PairOrderGemm(false, false, N, in, out, dy, out, w, in, dx, in);
}
void WeightGradProduct(const float* dy, const float* x, int64_t N, int64_t in, int64_t out,
                       float* dw) {
  if (TorchCpuPathInUse() == TorchCpuPath::kReference) {
    std::fill_n(dw, out * in, 0.0f);
    AtenSeqGemmTnAccumulate(out, in, N, dy, out, x, in, dw, in);
  } else {
    PairOrderGemm(true, false, out, in, N, dy, out, x, in, dw, in);
  }
}

}  // namespace

void FsdpLinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                       float* y) {
  LinearProduct(x, Rounded(tls_m, W, out * in), N, in, out, y);
  RoundToBf16(y, y, N * out);
}

void FsdpLinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                        int64_t out, float* dx, float* dW) {
  if (dx) {
    float* t = Scratch(tls_a, N * in, false);
    InputGradProduct(dy, Rounded(tls_m, W, out * in), N, in, out, t);
    AddActivationGrad(dx, t, N * in);
  }
  float* t = Scratch(tls_b, out * in, false);
  WeightGradProduct(dy, x, N, in, out, t);
  AddParamGrad(dW, t, out * in);
}

void FsdpRMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                        float* y, float* rstd) {
  NormRows<false>(x, w, nullptr, rows, n, eps, y, rstd);
}

void FsdpRMSNormAddForward(const float* x, const float* w, const float* residual, int64_t rows,
                           int64_t n, double eps, float* y, float* rstd) {
  NormRows<true>(x, w, residual, rows, n, eps, y, rstd);
}

void FsdpRMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                         int64_t rows, int64_t n, float* dx, float* dw) {
  ProfileScope profile_scope(ProfileCategory::kNorm);
  const float* wr = Rounded(tls_w, w, n);
  // The autograd of y = w·(x·rs), rs = (mean x² + eps)^-1/2, op by op as torch evaluates it:
  // gy = g·w; dx = gy·rs + (((−0.5·Σ gy·x)·rs³) / n)·(2x); dw = Σ_rows g·(x·rs). The sums are
  // torch's (torch_sum.h).
  std::vector<float> gy_x_all(static_cast<size_t>(rows * n)), gxn(static_cast<size_t>(rows * n));
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* gr = dy + r * n;
    const float s = rstd[r];
    float* gyx = gy_x_all.data() + r * n;
    float* gn = gxn.data() + r * n;
    for (int64_t j = 0; j < n; ++j) {
      gyx[j] = (gr[j] * wr[j]) * xr[j];
      gn[j] = gr[j] * (xr[j] * s);
    }
    const float grs = TorchInnerSum(gyx, n);
    const float gt = (-0.5f * grs) * ((s * s) * s);
    const float gx2 = gt / static_cast<float>(n);
    float* dxr = dx + r * n;
    for (int64_t j = 0; j < n; ++j) {
      const float t = (gr[j] * wr[j]) * s + gx2 * (2.0f * xr[j]);
      dxr[j] = R(dxr[j] + R(t));
    }
  }
  std::vector<float> sums(static_cast<size_t>(n));
  TorchOuterSum(gxn.data(), rows, n, sums.data());
  for (int64_t j = 0; j < n; ++j) dw[j] += R(sums[j]);
}

std::vector<float> TorchRopeInvFreq(const RopeParams& params, int64_t head_dim) {
  RopeInvFreq(params, head_dim);  // validates head_dim and params
  const int64_t half = head_dim / 2;
  const float theta = static_cast<float>(params.theta);
  std::vector<float> ext(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) {
    const float e = static_cast<float>(2 * j) / static_cast<float>(head_dim);
    ext[j] = 1.0f / std::pow(theta, e);
  }
  if (params.type == RopeType::kDefault) return ext;
  // YaRNRoPEScalingConfig.compute_scaled_inv_freq: the correction range from Python floats
  // (floor, ceil; high clamped to half - 1), then the blend in fp32.
  const double L = static_cast<double>(params.original_max_position_embeddings);
  auto dim_from_rot = [&](double rotations) {
    return static_cast<double>(head_dim) * std::log(L / (rotations * 2.0 * M_PI)) /
           (2.0 * std::log(params.theta));
  };
  const int64_t low = std::max<int64_t>(static_cast<int64_t>(std::floor(dim_from_rot(params.beta_fast))), 0);
  const int64_t high =
      std::min<int64_t>(static_cast<int64_t>(std::ceil(dim_from_rot(params.beta_slow))), half - 1);
  const float span = high > low ? static_cast<float>(high - low) : 1e-3f;
  const float factor = static_cast<float>(params.factor);
  std::vector<float> inv(ext.size());
  for (int64_t j = 0; j < half; ++j) {
    const float interpolation = ext[j] / factor;
    const float ramp =
        std::clamp((static_cast<float>(j) - static_cast<float>(low)) / span, 0.0f, 1.0f);
    const float a = interpolation * ramp;
    const float b = ext[j] * (1.0f - ramp);
    inv[j] = a + b;
  }
  return inv;
}

void TorchRopeTableEntries(const RopeParams& params, int64_t max_positions, int64_t head_dim,
                           float* cos, float* sin) {
  if (params.type == RopeType::kYarn && !params.truncate) {  // not expressible in OLMo-core
    RopeTableEntries(params, max_positions, head_dim, cos, sin);
    return;
  }
  Require(max_positions >= 0, "RoPE: table size must be >= 0, got {}", max_positions);
  const std::vector<float> inv = TorchRopeInvFreq(params, head_dim);
  const int64_t half = head_dim / 2;
  const float m = static_cast<float>(params.Scale());
  for (int64_t j = 0; j < half; ++j) {
    for (int64_t pos = 0; pos < max_positions; ++pos) {
      const float angle = static_cast<float>(pos) * inv[j];
      cos[pos * half + j] = params.type == RopeType::kYarn ? std::cos(angle) * m : std::cos(angle);
      sin[pos * half + j] = params.type == RopeType::kYarn ? std::sin(angle) * m : std::sin(angle);
    }
  }
}

void FsdpRopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                     const int32_t* positions,
                     float* y) {
  RopeForward(table, x, B, T, heads, positions, y);
  RoundToBf16(y, y, B * T * heads * table.head_dim);
}

void FsdpRopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T,
                      int64_t heads, const int32_t* positions, float* dx) {
  const int64_t n = B * T * heads * table.head_dim;
  float* t = Scratch(tls_a, n, true);
  RopeBackward(table, dy, B, T, heads, positions, t);
  AddActivationGrad(dx, t, n);
}

namespace {
// ATen's silu and its backward on a bf16 tensor, in fp32: x / (1 + e^-x), and
// g · σ · (1 + x (1 − σ)) evaluated left to right.
inline float Silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float SiluBackward(float g, float x) {
  const float sg = 1.0f / (1.0f + std::exp(-x));
  return g * sg * (1.0f + x * (1.0f - sg));
}
}  // namespace

void FsdpSwiGLUForward(const float* g, const float* u, int64_t n, float* s) {
  ProfileScope profile_scope(ProfileCategory::kSwiGLU);
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) s[i] = R(R(Silu(g[i])) * u[i]);
}

void FsdpSwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                        float* du) {
  ProfileScope profile_scope(ProfileCategory::kSwiGLU);
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) {
    const float a = R(Silu(g[i]));
    const float da = R(ds[i] * u[i]);
    du[i] = R(du[i] + R(ds[i] * a));
    dg[i] = R(dg[i] + R(SiluBackward(da, g[i])));
  }
}

void FsdpEmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D,
                          float* out) {
#pragma omp parallel for schedule(static) if (N * D >= kMinParallelWork)
  for (int64_t i = 0; i < N; ++i) RoundToBf16(table + int64_t{tokens[i]} * D, out + i * D, D);
}

void FsdpEmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V,
                           int64_t D, float* dtable) {
  // Rows of the bf16 gradient table, each token's positions added in position order; only rows
  // of tokens that occur are touched. One pass per token row keeps the order fixed for any
  // thread count: positions are grouped by token first (a stable counting sort).
  std::vector<int64_t> start(static_cast<size_t>(V) + 1, 0), order(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) ++start[static_cast<size_t>(tokens[i]) + 1];
  for (int64_t v = 0; v < V; ++v) start[v + 1] += start[v];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < N; ++i) order[static_cast<size_t>(fill[tokens[i]]++)] = i;
#pragma omp parallel for schedule(dynamic, 16) if (N * D >= kMinParallelWork)
  for (int64_t v = 0; v < V; ++v) {
    if (start[v] == start[v + 1]) continue;
    std::vector<float> row(static_cast<size_t>(D), 0.0f);
    for (int64_t p = start[v]; p < start[v + 1]; ++p) {
      const float* src = dout + order[static_cast<size_t>(p)] * D;
      for (int64_t j = 0; j < D; ++j) row[j] = R(row[j] + src[j]);
    }
    float* dst = dtable + v * D;
    for (int64_t j = 0; j < D; ++j) dst[j] += row[j];
  }
}

namespace {

// One chunk's rounded logits [rows, V] in ws.logits(), and per row, in torch's fp32
// (torch_cross_entropy.h): the max in row_max(), log Σ exp(x − max) in row_sum(), −log_softmax at
// the label in ce() and logsumexp in lse(); wr is the rounded LM head.
void ChunkLogitsAndLoss(const float* x, const float* wr, const int32_t* labels, int64_t r0,
                        int64_t rows, int64_t D, int64_t V, LmHeadWorkspace& ws) {
  float* logits = ws.logits();
  LinearProduct(x + r0 * D, wr, rows, D, V, logits);
  RoundToBf16(logits, logits, rows * V);
  const int lanes = TorchLossLanes();
#pragma omp parallel for schedule(static) if (rows * V >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* lr = logits + r * V;
    float mx = 0;
    const float logsum = TorchLogSoftmaxLogSum(lr, V, lanes, &mx);
    ws.row_max()[r] = mx;
    ws.row_sum()[r] = logsum;
    ws.lse()[r] = TorchLogsumexp(lr, V);
    const int32_t y = labels[r0 + r];
    ws.ce()[r] = y == kIgnoreLabel ? 0.0f : -((lr[y] - mx) - logsum);
  }
}

// OLMo-core's two loss sums over all N rows, in torch's orders: nll_loss's cascade of the rows'
// −log_softmax (row order) and torch.sum of lse² · mask.
struct TorchLossSums {
  explicit TorchLossSums(int64_t N) : nll(N), lse_sq(Scratch(tls_z, N, true)), rows(N) {}
  void AddChunk(const int32_t* labels, int64_t r0, int64_t n, LmHeadWorkspace& ws) {
    for (int64_t r = 0; r < n; ++r) {
      const bool ignored = labels[r0 + r] == kIgnoreLabel;
      nll.Add(r0 + r, ignored, static_cast<float>(ws.ce()[r]));
      const auto lse = static_cast<float>(ws.lse()[r]);
      lse_sq[r0 + r] = ignored ? 0.0f : lse * lse;
      tokens += !ignored;
    }
  }
  CrossEntropySums Sums() const {
    CrossEntropySums s;
    s.ce_sum = nll.Total();
    s.lse_sq_sum = TorchInnerSum(lse_sq, rows);
    s.tokens = tokens;
    s.fp32 = true;
    return s;
  }
  TorchNllSum nll;
  float* lse_sq;
  int64_t rows, tokens = 0;
};

}  // namespace

CrossEntropySums FsdpLmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                       int64_t N, int64_t D, int64_t V, LmHeadWorkspace& ws) {
  ProfileScope profile_scope(ProfileCategory::kLmHeadLoss);
  Require(V == ws.vocab(), "LM head: vocab {} does not match workspace {}", V, ws.vocab());
  const float* wr = Rounded(tls_m, W, V * D);
  TorchLossSums sums(N);
  for (int64_t r0 = 0; r0 < N; r0 += ws.chunk_rows()) {
    const int64_t rows = std::min(ws.chunk_rows(), N - r0);
    ChunkLogitsAndLoss(x, wr, labels, r0, rows, D, V, ws);
    sums.AddChunk(labels, r0, rows, ws);
  }
  return sums.Sums();
}

CrossEntropySums FsdpLmHeadLossForwardBackward(const float* x, const float* W,
                                               const int32_t* labels, int64_t N, int64_t D,
                                               int64_t V, double grad_scale, double z_mul,
                                               LmHeadWorkspace& ws, float* dx, float* dW) {
  ProfileScope profile_scope(ProfileCategory::kLmHeadLoss);
  Require(V == ws.vocab(), "LM head: vocab {} does not match workspace {}", V, ws.vocab());
  const float* wr = Rounded(tls_m, W, V * D);
  TorchLossSums sums(N);
  // autograd's fp32 gradient of (ce + z_mul · z) / div: 1 / div at the loss, times z_mul for z.
  const auto gl = static_cast<float>(grad_scale);
  const float zl = gl * static_cast<float>(z_mul);
  float* dw_sum = Scratch(tls_b, V * D, true);  // the fp32 product over all rows, rounded once
  for (int64_t r0 = 0; r0 < N; r0 += ws.chunk_rows()) {
    const int64_t rows = std::min(ws.chunk_rows(), N - r0);
    ChunkLogitsAndLoss(x, wr, labels, r0, rows, D, V, ws);
    sums.AddChunk(labels, r0, rows, ws);
    float* d = ws.logits();  // becomes dlogits in place
#pragma omp parallel for schedule(static) if (rows * V >= kMinParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
      float* dr = d + r * V;
      TorchLossRowGrad(dr, V, labels[r0 + r], ws.row_max()[r], static_cast<float>(ws.row_sum()[r]),
                       static_cast<float>(ws.lse()[r]), gl, zl, dr);
      RoundToBf16(dr, dr, V);
    }
    float* t = Scratch(tls_a, rows * D, false);
    InputGradProduct(d, wr, rows, D, V, t);
    AddActivationGrad(dx + r0 * D, t, rows * D);
    if (TorchCpuPathInUse() == TorchCpuPath::kReference) {
      // One accumulator per element over all N rows in order: the chunks continue it.
      AtenSeqGemmTnAccumulate(V, D, rows, d, V, x + r0 * D, D, dw_sum, D);
    } else {
      float* part = Scratch(tls_c, V * D, false);
      PairOrderGemm(true, false, V, D, rows, d, V, x + r0 * D, D, part, D);
      for (int64_t i = 0; i < V * D; ++i) dw_sum[i] += part[i];
    }
  }
  AddParamGrad(dW, dw_sum, V * D);
  return sums.Sums();
}

void FsdpLmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                      float* logits) {
  ProfileScope profile_scope(ProfileCategory::kLmHeadLoss);
  LinearProduct(x, Rounded(tls_m, W, V * D), N, D, V, logits);
  RoundToBf16(logits, logits, N * V);
}

FsdpScratch FsdpScratchHeld() {
  const auto bytes = [](const std::vector<float>& v) { return sizeof(float) * v.capacity(); };
  return {bytes(tls_a), bytes(tls_b), bytes(tls_c), bytes(tls_w), bytes(tls_m), bytes(tls_z)};
}

}  // namespace replica

#include "ops/cpu/torch_cross_entropy.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "ops/cpu/torch_sum.h"

namespace replica {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t ToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float Pow2i(int32_t q) { return FromBits(static_cast<uint32_t>(q + 0x7f) << 23); }

// SLEEF's double-float arithmetic (df.h, FMA variants).
struct F2 {
  float x, y;
};
F2 DfMul(F2 a, float b) {
  const float s = a.x * b;
  return {s, std::fma(a.y, b, std::fma(a.x, b, -s))};
}
F2 DfAdd2(float a, float b) {
  const float s = a + b;
  const float v = s - a;
  return {s, (a - (s - v)) + (b - v)};
}
F2 DfDiv(F2 n, F2 d) {
  const float t = 1.0f / d.x;
  const float s = n.x * t;
  const float u = std::fma(t, n.x, -s);
  const float v = std::fma(-d.y, t, std::fma(-d.x, t, 1.0f));
  return {s, std::fma(s, v, std::fma(n.y, t, u))};
}
F2 DfAdd(F2 a, F2 b) {
  const float s = a.x + b.x;
  return {s, (((a.x - s) + b.x) + a.y) + b.y};
}
F2 DfAdd(F2 a, float b) {
  const float s = a.x + b;
  return {s, ((a.x - s) + b) + a.y};
}

int64_t CeilLog2(int64_t x) {  // ATen's utils::CeilLog2
  if (x <= 2) return 1;
  int64_t bits = 0;
  for (uint64_t u = static_cast<uint64_t>(x) - 1; u != 0; u >>= 1) ++bits;
  return bits;
}

}  // namespace

float SleefExpF(float d) {
  const float kRLn2 = 1.442695040888963407359924681001892137426645954152985934135449406931f;
  const float kL2U = 0.693145751953125f, kL2L = 1.428606765330187045e-06f;
  const auto q = static_cast<int32_t>(std::nearbyint(d * kRLn2));  // round to nearest even
  const auto qf = static_cast<float>(q);
  float s = std::fma(qf, -kL2U, d);
  s = std::fma(qf, -kL2L, s);
  float u = 0.000198527617612853646278381f;
  u = std::fma(u, s, 0.00139304355252534151077271f);
  u = std::fma(u, s, 0.00833336077630519866943359f);
  u = std::fma(u, s, 0.0416664853692054748535156f);
  u = std::fma(u, s, 0.166666671633720397949219f);
  u = std::fma(u, s, 0.5f);
  u = 1.0f + std::fma(s * s, u, s);
  u = u * Pow2i(q >> 1) * Pow2i(q - (q >> 1));
  if (d < -104) u = 0;
  if (100 < d) u = INFINITY;
  return u;
}

float SleefLogF(float d) {
  const bool tiny = d < FLT_MIN;
  if (tiny) d = d * (static_cast<float>(int64_t{1} << 32) * static_cast<float>(int64_t{1} << 32));
  int32_t e = static_cast<int32_t>((ToBits(d * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;
  const float m = FromBits(ToBits(d) + (static_cast<uint32_t>(-e) << 23));
  if (tiny) e -= 64;
  F2 s = DfMul({0.69314718246459960938f, -1.904654323148236017e-09f}, static_cast<float>(e));
  const F2 x = DfDiv(DfAdd2(-1.0f, m), DfAdd2(1.0f, m));
  const float x2 = x.x * x.x;
  float t = 0.3027294874e+0f;
  t = std::fma(t, x2, 0.3996108174e+0f);
  t = std::fma(t, x2, 0.6666694880e+0f);
  s = DfAdd(s, F2{x.x * 2, x.y * 2});
  s = DfAdd(s, x2 * x.x * t);
  float r = s.x + s.y;
  if (std::isinf(d)) r = INFINITY;
  if (d < 0 || std::isnan(d)) r = NAN;
  if (d == 0) r = -INFINITY;
  return r;
}

float TorchLogSoftmaxLogSum(const float* x, int64_t V, int lanes, float* max) {
  const float mx = *std::max_element(x, x + V);
  *max = mx;
  const auto f = [&](int64_t v) { return SleefExpF(x[v] - mx); };
  if (V < lanes) {  // one partial vector: its lanes added in order
    float s = f(0);
    for (int64_t v = 1; v < V; ++v) s = s + f(v);
    return SleefLogF(s);
  }
  float acc[64];
  for (int i = 0; i < lanes; ++i) acc[i] = f(i);
  int64_t d = lanes;
  for (; d < V - V % lanes; d += lanes)
    for (int i = 0; i < lanes; ++i) acc[i] = acc[i] + f(d + i);
  for (int64_t i = 0; i < V - d; ++i) acc[i] = acc[i] + f(d + i);
  for (int h = lanes / 2; h >= 1; h /= 2) {
    float next[64];
    for (int i = 0; i < lanes; ++i) next[i] = acc[i] + acc[i ^ h];
    std::copy(next, next + lanes, acc);
  }
  return SleefLogF(acc[0]);
}

float TorchLogsumexp(const float* x, int64_t V) {
  float mx = *std::max_element(x, x + V);
  if (std::isinf(mx)) mx = 0;
  return std::log(TorchInnerSumExp(x, V, mx)) + mx;
}

TorchNllSum::TorchNllSum(int64_t rows)
    : level_power_(std::max<int64_t>(4, CeilLog2(rows) / kLevels)) {}

void TorchNllSum::Add(int64_t b, bool ignored, float neg_logp) {
  if (ignored) return;
  partial_[0] += neg_logp;
  const int64_t mask = (int64_t{1} << level_power_) - 1;
  for (int j = 0; j + 1 < kLevels; ++j) {
    if ((b & (mask << (j * level_power_))) != 0) break;
    partial_[j + 1] += partial_[j];
    partial_[j] = 0;
  }
}

float TorchNllSum::Total() const {
  float total = 0;
  for (float p : partial_) total += p;
  return total;
}

void TorchLossRowGrad(const float* x, int64_t V, int32_t label, float max, float logsum,
                      float lse, float gl, float zl, float* g) {
  if (label < 0) {
    std::fill_n(g, V, 0.0f);
    return;
  }
  const float s = -gl;                  // the row sum of nll's gradient
  const float gz = zl * (2.0f * lse);   // pow's backward of the masked lse²
  for (int64_t v = 0; v < V; ++v) {
    const float gn = v == label ? -gl : 0.0f;
    const float gce = gn - SleefExpF((x[v] - max) - logsum) * s;
    g[v] = gce + gz * std::exp(x[v] - lse);
  }
}

}  // namespace replica

// SwiGLU on fp32, SIMD through Highway (run-time target dispatch). Each element is computed by the
// same sequence of vector operations whatever the vector width (the tail goes through a padded
// vector), so results do not depend on the width or on the threads; sigmoid uses Highway's Exp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/cpu/swiglu.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// After foreach_target.h:
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/profile.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/swiglu.h"

HWY_BEFORE_NAMESPACE();
namespace replica {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kChunk = 4096;  // elements per parallel work item (a multiple of any lane count)

// 1 / (1 + exp(-g)). Highway's Exp is valid up to +104, so exp(-g) is taken as +inf past 88.75
// (where the float exponential overflows anyway): the sigmoid is then exactly 0, as with std::exp.
HWY_INLINE VF Sigmoid(DF d, VF g) {
  const VF one = hn::Set(d, 1.0f);
  const VF x = hn::Neg(g);
  const VF limit = hn::Set(d, 88.75f);
  const VF e = hn::IfThenElse(hn::Gt(x, limit), hn::Set(d, HUGE_VALF), hn::Exp(d, hn::Min(x, limit)));
  return hn::Div(one, hn::Add(one, e));
}

// Applies f(offset, count) to [0, n) in vectors, the tail through a zero-padded vector.
template <class F>
HWY_INLINE void ForVectors(int64_t n, const F& f) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t i = 0;
  for (; i + N <= n; i += N) f(i, N);
  if (i < n) f(i, n - i);
}

// Loads count (<= lanes) floats, padding with zeros.
HWY_INLINE VF LoadPart(DF d, const float* p, int64_t count) {
  if (count == static_cast<int64_t>(hn::Lanes(d))) return hn::LoadU(d, p);
  HWY_ALIGN float buf[hn::MaxLanes(DF())];
  std::fill(buf, buf + hn::Lanes(d), 0.0f);
  std::memcpy(buf, p, static_cast<size_t>(count) * sizeof(float));
  return hn::Load(d, buf);
}
HWY_INLINE void StorePart(DF d, VF v, float* p, int64_t count) {
  if (count == static_cast<int64_t>(hn::Lanes(d))) return hn::StoreU(v, d, p);
  HWY_ALIGN float buf[hn::MaxLanes(DF())];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, static_cast<size_t>(count) * sizeof(float));
}

}  // namespace

void ForwardImpl(const float* g, const float* u, int64_t n, float* s) {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t m = std::min(kChunk, n - c0);
    const DF d;
    ForVectors(m, [&](int64_t i, int64_t k) {
      const VF gv = LoadPart(d, g + c0 + i, k);
      const VF sig = Sigmoid(d, gv);
      StorePart(d, hn::Mul(hn::Mul(gv, sig), LoadPart(d, u + c0 + i, k)), s + c0 + i, k);
    });
  }
}

void BackwardImpl(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                  float* du) {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t m = std::min(kChunk, n - c0);
    const DF d;
    const VF one = hn::Set(d, 1.0f);
    ForVectors(m, [&](int64_t i, int64_t k) {
      const int64_t o = c0 + i;
      const VF gv = LoadPart(d, g + o, k), uv = LoadPart(d, u + o, k), dsv = LoadPart(d, ds + o, k);
      const VF sig = Sigmoid(d, gv);
      const VF silu = hn::Mul(gv, sig);
      // dg += ds·u·(sig·(1 + g·(1 − sig))); du += ds·silu
      const VF dsig = hn::Mul(sig, hn::Add(one, hn::Mul(gv, hn::Sub(one, sig))));
      StorePart(d, hn::Add(LoadPart(d, dg + o, k), hn::Mul(hn::Mul(dsv, uv), dsig)), dg + o, k);
      StorePart(d, hn::Add(LoadPart(d, du + o, k), hn::Mul(dsv, silu)), du + o, k);
    });
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace replica
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace replica {
HWY_EXPORT(ForwardImpl);
HWY_EXPORT(BackwardImpl);

void SwiGLUForward(const float* g, const float* u, int64_t n, float* s) {
  ProfileScope profile_scope(ProfileCategory::kSwiGLU);
  HWY_DYNAMIC_DISPATCH(ForwardImpl)(g, u, n, s);
}

void SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                    float* du) {
  ProfileScope profile_scope(ProfileCategory::kSwiGLU);
  HWY_DYNAMIC_DISPATCH(BackwardImpl)(g, u, ds, n, dg, du);
}

void SwiGLUForwardReference(const float* g, const float* u, int64_t n, float* s) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = g[i], sig = 1.0 / (1.0 + std::exp(-x));
    s[i] = static_cast<float>(x * sig * u[i]);
  }
}

void SwiGLUBackwardReference(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                             float* du) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = g[i], sig = 1.0 / (1.0 + std::exp(-x));
    dg[i] += static_cast<float>(static_cast<double>(ds[i]) * u[i] * sig * (1 + x * (1 - sig)));
    du[i] += static_cast<float>(static_cast<double>(ds[i]) * x * sig);
  }
}

}  // namespace replica
#endif  // HWY_ONCE

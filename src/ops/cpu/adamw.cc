#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/cpu/adamw.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// After foreach_target.h:
#include <hwy/highway.h>

#include <cmath>

#include "ops/cpu/adamw.h"

HWY_BEFORE_NAMESPACE();
namespace replica {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void AdamWElementsImpl(float* p, const float* g, float* m, float* v, int64_t n,
                       const AdamWCoefficients& c) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has lanes
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const auto coef = hn::Set(dd, c.grad_coef), keep = hn::Set(dd, c.keep);
  const auto b1 = hn::Set(dd, c.beta1), b2 = hn::Set(dd, c.beta2);
  const auto one_b1 = hn::Set(dd, 1.0 - c.beta1), one_b2 = hn::Set(dd, 1.0 - c.beta2);
  const auto step = hn::Set(dd, c.step_size), bias2 = hn::Set(dd, c.bias2_sqrt);
  const auto eps = hn::Set(dd, c.eps);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto gi = hn::Mul(hn::PromoteTo(dd, hn::LoadU(df, g + i)), coef);
    auto pi = hn::Mul(hn::PromoteTo(dd, hn::LoadU(df, p + i)), keep);
    const auto mi = hn::Add(hn::Mul(b1, hn::PromoteTo(dd, hn::LoadU(df, m + i))),
                            hn::Mul(one_b1, gi));
    const auto vi = hn::Add(hn::Mul(b2, hn::PromoteTo(dd, hn::LoadU(df, v + i))),
                            hn::Mul(hn::Mul(one_b2, gi), gi));
    const auto denom = hn::Add(hn::Div(hn::Sqrt(vi), bias2), eps);
    pi = hn::Sub(pi, hn::Div(hn::Mul(step, mi), denom));
    hn::StoreU(hn::DemoteTo(df, pi), df, p + i);
    hn::StoreU(hn::DemoteTo(df, mi), df, m + i);
    hn::StoreU(hn::DemoteTo(df, vi), df, v + i);
  }
  if (i < n) AdamWElementsReference(p + i, g + i, m + i, v + i, n - i, c);
}

}  // namespace HWY_NAMESPACE
}  // namespace replica
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace replica {
HWY_EXPORT(AdamWElementsImpl);

void AdamWElements(float* p, const float* g, float* m, float* v, int64_t n,
                   const AdamWCoefficients& c) {
  HWY_DYNAMIC_DISPATCH(AdamWElementsImpl)(p, g, m, v, n, c);
}

void AdamWElementsReference(float* p, const float* g, float* m, float* v, int64_t n,
                            const AdamWCoefficients& c) {
  for (int64_t i = 0; i < n; ++i) {
    const double gi = static_cast<double>(g[i]) * c.grad_coef;
    double pi = static_cast<double>(p[i]) * c.keep;
    const double mi = c.beta1 * static_cast<double>(m[i]) + (1.0 - c.beta1) * gi;
    const double vi = c.beta2 * static_cast<double>(v[i]) + (1.0 - c.beta2) * gi * gi;
    pi = pi - c.step_size * mi / (std::sqrt(vi) / c.bias2_sqrt + c.eps);
    p[i] = static_cast<float>(pi);
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
  }
}
}  // namespace replica
#endif  // HWY_ONCE

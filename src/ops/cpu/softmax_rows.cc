#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/cpu/softmax_rows.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// After foreach_target.h:
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/cpu/softmax_rows.h"

HWY_BEFORE_NAMESPACE();
namespace replica {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DD = hn::ScalableTag<double>;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

float RowMaxImpl(const float* l, int64_t n) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto m = hn::Set(d, kNegInf);
  int64_t v = 0;
  for (; v + N <= n; v += N) m = hn::Max(m, hn::LoadU(d, l + v));
  float best = hn::GetLane(hn::MaxOfLanes(d, m));
  for (; v < n; ++v) best = std::max(best, l[v]);
  return best;
}

// acc[j] += Σ over elements v ≡ j (mod kSumLanes) of exp(l[v] - shift), writing those back to l;
// n is any length, l[0] is at a multiple of kSumLanes in the row. Whole sub-blocks of kSubBlock
// elements are summed per lane in fp32 (kSubBlock / kSumLanes terms each), then added to acc in
// double; the tail goes straight to double.
void ExpShiftAccumulate(float* l, int64_t n, float shift, double* acc) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const auto s = hn::Set(d, shift);
  int64_t v = 0;
  if (N <= static_cast<size_t>(kSumLanes)) {
    constexpr size_t kMaxVecs = kSumLanes;  // kSumLanes / N vectors, N >= 1
    for (; v + kSubBlock <= n; v += kSubBlock) {
      hn::Vec<DF> part[kMaxVecs];
      const size_t nv = static_cast<size_t>(kSumLanes) / N;
      for (size_t j = 0; j < nv; ++j) part[j] = hn::Zero(d);
      for (int64_t b = v; b < v + kSubBlock; b += kSumLanes) {
        for (size_t j = 0; j < nv; ++j) {
          const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, l + b + j * N), s));
          hn::StoreU(e, d, l + b + j * N);
          part[j] = hn::Add(part[j], e);
        }
      }
      HWY_ALIGN float lanes[kSumLanes];
      for (size_t j = 0; j < nv; ++j) hn::Store(part[j], d, lanes + j * N);
      for (int64_t j = 0; j < kSumLanes; ++j) acc[j] += static_cast<double>(lanes[j]);
    }
  }
  // The tail (or everything, were vectors wider than kSumLanes): padded with -inf, exp(-inf) = 0.
  while (v < n) {
    HWY_ALIGN float buf[kSumLanes > 64 ? kSumLanes : 64];
    const int64_t k = std::min<int64_t>(kSumLanes, n - v);
    std::fill(buf, buf + 64, kNegInf);
    std::memcpy(buf, l + v, static_cast<size_t>(k) * sizeof(float));
    for (size_t j = 0; j < static_cast<size_t>(kSumLanes); j += N) {
      hn::StoreU(hn::Exp(d, hn::Sub(hn::LoadU(d, buf + j), s)), d, buf + j);
    }
    std::memcpy(l + v, buf, static_cast<size_t>(k) * sizeof(float));
    for (int64_t j = 0; j < k; ++j) acc[j] += static_cast<double>(buf[j]);
    v += k;
  }
}

double ExpShiftSumImpl(float* l, int64_t n, float shift) {
  HWY_ALIGN double acc[kSumLanes] = {0};
  ExpShiftAccumulate(l, n, shift, acc);
  double sum = 0;
  for (int64_t j = 0; j < kSumLanes; ++j) sum += acc[j];
  return sum;
}

double ExpSumAutoShiftImpl(float* l, int64_t n, float* shift_out) {
  static_assert(kShiftBlock % kSubBlock == 0 && kSubBlock % kSumLanes == 0);
  HWY_ALIGN double acc[kSumLanes] = {0};
  float shift = kNegInf;
  for (int64_t b0 = 0; b0 < n; b0 += kShiftBlock) {
    const int64_t nb = std::min(kShiftBlock, n - b0);
    const float mb = RowMaxImpl(l + b0, nb);
    if (mb > shift + kShiftHeadroom || shift == kNegInf) {
      if (shift != kNegInf && b0 > 0) {  // rare: rescale what is done to the new shift
        const float f = std::exp(shift - mb);
        for (int64_t v = 0; v < b0; ++v) l[v] *= f;
        for (int64_t j = 0; j < kSumLanes; ++j) acc[j] *= static_cast<double>(f);
      }
      shift = mb;
    }
    if (shift == kNegInf) {  // the row so far is all -inf: exp gives 0
      std::fill(l + b0, l + b0 + nb, 0.0f);
      continue;
    }
    ExpShiftAccumulate(l + b0, nb, shift, acc);
  }
  double sum = 0;
  for (int64_t j = 0; j < kSumLanes; ++j) sum += acc[j];
  *shift_out = shift;
  return sum;
}

void ScaleRowImpl(float* l, int64_t n, float scale) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto c = hn::Set(d, scale);
  int64_t v = 0;
  for (; v + N <= n; v += N) hn::StoreU(hn::Mul(hn::LoadU(d, l + v), c), d, l + v);
  for (; v < n; ++v) l[v] *= scale;
}

}  // namespace HWY_NAMESPACE
}  // namespace replica
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace replica {
HWY_EXPORT(RowMaxImpl);
HWY_EXPORT(ExpShiftSumImpl);
HWY_EXPORT(ScaleRowImpl);
HWY_EXPORT(ExpSumAutoShiftImpl);

double ExpSumAutoShiftInPlace(float* l, int64_t n, float* shift_out) {
  return HWY_DYNAMIC_DISPATCH(ExpSumAutoShiftImpl)(l, n, shift_out);
}

float RowMax(const float* l, int64_t n) { return HWY_DYNAMIC_DISPATCH(RowMaxImpl)(l, n); }

double ExpShiftSumInPlace(float* l, int64_t n, float shift) {
  return HWY_DYNAMIC_DISPATCH(ExpShiftSumImpl)(l, n, shift);
}

void ScaleRow(float* l, int64_t n, float scale) { HWY_DYNAMIC_DISPATCH(ScaleRowImpl)(l, n, scale); }

double FixedOrderSumReference(const float* e, int64_t n) {
  double acc[kSumLanes] = {0};
  int64_t v = 0;
  for (; v + kSubBlock <= n; v += kSubBlock) {
    float part[kSumLanes] = {0};
    for (int64_t i = v; i < v + kSubBlock; ++i) part[i % kSumLanes] += e[i];
    for (int64_t j = 0; j < kSumLanes; ++j) acc[j] += static_cast<double>(part[j]);
  }
  for (; v < n; ++v) acc[v % kSumLanes] += static_cast<double>(e[v]);
  double sum = 0;
  for (int64_t j = 0; j < kSumLanes; ++j) sum += acc[j];
  return sum;
}
}  // namespace replica
#endif  // HWY_ONCE

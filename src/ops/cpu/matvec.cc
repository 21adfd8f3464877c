// MatVec on Highway (run-time target dispatch); see matvec.h for the summation order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/cpu/matvec.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// After foreach_target.h:
#include <hwy/highway.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/matvec.h"

HWY_BEFORE_NAMESPACE();
namespace replica {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
// At most 8 lanes, so kMatVecLanes / N vectors hold the 32 partial sums on every target.
using DF = hn::CappedTag<float, 8>;
using VF = hn::Vec<DF>;
using DU16 = hn::Rebind<uint16_t, DF>;
using DU32 = hn::RebindToUnsigned<DF>;

HWY_INLINE VF LoadWeights(DF d, const float* w) { return hn::LoadU(d, w); }
HWY_INLINE VF LoadWeights(DF d, const uint16_t* w) {
  return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(DU32(), hn::LoadU(DU16(), w))));
}
HWY_INLINE float Widen(float w) { return w; }
HWY_INLINE float Widen(uint16_t w) { return Bf16ToF32(w); }

template <typename T>
HWY_INLINE float Row(const T* w, const float* x, int64_t cols) {
  const DF d;
  constexpr int64_t kMaxVecs = kMatVecLanes / 1;
  const int64_t n = static_cast<int64_t>(hn::Lanes(d));
  const int64_t vecs = kMatVecLanes / n;
  VF acc[kMaxVecs];
  for (int64_t v = 0; v < vecs; ++v) acc[v] = hn::Zero(d);
  int64_t k = 0;
  for (; k + kMatVecLanes <= cols; k += kMatVecLanes) {
    for (int64_t v = 0; v < vecs; ++v) {
      acc[v] = hn::Add(acc[v], hn::Mul(LoadWeights(d, w + k + v * n), hn::LoadU(d, x + k + v * n)));
    }
  }
  HWY_ALIGN float part[kMatVecLanes];
  for (int64_t v = 0; v < vecs; ++v) hn::Store(acc[v], d, part + v * n);
  for (int64_t j = 0; k + j < cols; ++j) part[j] += Widen(w[k + j]) * x[k + j];
  float s = 0;
  for (int64_t j = 0; j < kMatVecLanes; ++j) s += part[j];
  return s;
}

template <typename T>
void MatVecT(const T* W, const float* x, int64_t rows, int64_t cols, float* y) {
#pragma omp parallel for schedule(static) if (rows * cols >= (int64_t{1} << 16))
  for (int64_t r = 0; r < rows; ++r) y[r] = Row(W + r * cols, x, cols);
}

}  // namespace

void MatVecF32(const float* W, const float* x, int64_t rows, int64_t cols, float* y) {
  MatVecT(W, x, rows, cols, y);
}
void MatVecBf16(const uint16_t* W, const float* x, int64_t rows, int64_t cols, float* y) {
  MatVecT(W, x, rows, cols, y);
}
// F32 weights rounded to bf16 row by row into a per-thread row buffer, then the F32 row sums.
void MatVecF32RoundedWeights(const float* W, const float* x, int64_t rows, int64_t cols,
                             float* y) {
#pragma omp parallel if (rows * cols >= (int64_t{1} << 16))
  {
    std::vector<float> row(static_cast<size_t>(cols));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* w = W + r * cols;
      for (int64_t k = 0; k < cols; ++k) row[k] = RoundToBf16(w[k]);
      y[r] = Row(row.data(), x, cols);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace replica
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace replica {
HWY_EXPORT(MatVecF32);
HWY_EXPORT(MatVecBf16);
HWY_EXPORT(MatVecF32RoundedWeights);

void MatVec(DType dtype, const void* W, const float* x, int64_t rows, int64_t cols, float* y,
            Precision precision) {
  const bool bf16 = precision == Precision::kBf16;
  std::vector<float> xr;  // x rounded to bf16 (kBf16)
  if (bf16) {
    xr.resize(static_cast<size_t>(cols));
    RoundToBf16(x, xr.data(), cols);
    x = xr.data();
  }
  switch (dtype) {
    case DType::kF32:
      if (bf16) {
        return HWY_DYNAMIC_DISPATCH(MatVecF32RoundedWeights)(static_cast<const float*>(W), x, rows,
                                                             cols, y);
      }
      return HWY_DYNAMIC_DISPATCH(MatVecF32)(static_cast<const float*>(W), x, rows, cols, y);
    case DType::kBF16:  // already bf16 values
      return HWY_DYNAMIC_DISPATCH(MatVecBf16)(static_cast<const uint16_t*>(W), x, rows, cols, y);
    default:
      Fail("MatVec: weights stored as {} are not supported (F32 or BF16)", DTypeName(dtype));
  }
}

void MatVecReference(DType dtype, const void* W, const float* x, int64_t rows, int64_t cols,
                     float* y, Precision precision) {
  Require(dtype == DType::kF32 || dtype == DType::kBF16,
          "MatVecReference: weights stored as {} are not supported (F32 or BF16)", DTypeName(dtype));
  const bool bf16 = precision == Precision::kBf16;
  for (int64_t r = 0; r < rows; ++r) {
    float part[kMatVecLanes] = {};
    for (int64_t k = 0; k < cols; ++k) {
      float w = dtype == DType::kF32 ? static_cast<const float*>(W)[r * cols + k]
                                     : Bf16ToF32(static_cast<const uint16_t*>(W)[r * cols + k]);
      if (bf16) w = RoundToBf16(w);
      part[k % kMatVecLanes] += w * (bf16 ? RoundToBf16(x[k]) : x[k]);
    }
    float s = 0;
    for (int64_t j = 0; j < kMatVecLanes; ++j) s += part[j];
    y[r] = s;
  }
}

}  // namespace replica
#endif  // HWY_ONCE

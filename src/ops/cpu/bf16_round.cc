#include "ops/cpu/bf16_round.h"

#include "ops/cpu/parallel.h"

namespace replica {

void RoundToBf16(const float* src, float* dst, int64_t n) {
  constexpr int64_t kBlock = int64_t{1} << 14;
#pragma omp parallel for schedule(static) if (n > kMinParallelWork)
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t end = b + kBlock < n ? b + kBlock : n;
#pragma omp simd
    for (int64_t i = b; i < end; ++i) dst[i] = RoundToBf16(src[i]);
  }
}

void RoundToBf16(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows,
                 int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld_src;
    float* d = dst + r * ld_dst;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) d[c] = RoundToBf16(s[c]);
  }
}

void ConvertToBf16(const float* src, int64_t ld_src, uint16_t* dst, int64_t ld_dst, int64_t rows,
                   int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld_src;
    uint16_t* d = dst + r * ld_dst;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) d[c] = Bf16Bits(s[c]);
  }
}

}  // namespace replica

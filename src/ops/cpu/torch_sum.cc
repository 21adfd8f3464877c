// ATen's cascade sum: multi_row_sum (four levels, 2^4 terms per level step) over rows of
// accumulators, row_sum (four interleaved partial sums), and the inner / outer reductions that
// call them with 8-lane vectors.
#include "ops/cpu/torch_sum.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

namespace replica {
namespace {

// Vectorized<float>::size() of the build the sum kernel dispatches to: ATen registers it for
// AVX2 only (no AVX-512 variant), so 8 floats on every x86 CPU torch runs it on.
constexpr int kLanes = 8;

struct Lanes {
  std::array<float, kLanes> v{};
  Lanes& operator+=(const Lanes& o) {
    for (int i = 0; i < kLanes; ++i) v[i] = v[i] + o.v[i];
    return *this;
  }
};

int64_t CeilLog2(int64_t x) {
  if (x <= 2) return 1;
  int64_t bits = 0;
  for (uint64_t u = static_cast<uint64_t>(x) - 1; u != 0; u >>= 1) ++bits;
  return bits;
}

template <typename Acc>
void Add(Acc& a, const Acc& b) {
  if constexpr (std::is_same_v<Acc, float>) {
    a = a + b;
  } else {
    a += b;
  }
}

// multi_row_sum: kRows accumulators over `size` steps, load(i, k) the k-th term of step i.
template <typename Acc, int kRows, typename Load>
std::array<Acc, kRows> MultiRowSum(int64_t size, Load load) {
  constexpr int kLevels = 4;
  const int64_t level_power = std::max<int64_t>(4, CeilLog2(size) / kLevels);
  const int64_t level_step = int64_t{1} << level_power;
  const int64_t level_mask = level_step - 1;
  Acc acc[kLevels][kRows] = {};
  int64_t i = 0;
  while (i + level_step <= size) {
    for (int64_t j = 0; j < level_step; ++j, ++i)
      for (int k = 0; k < kRows; ++k) Add(acc[0][k], load(i, k));
    for (int j = 1; j < kLevels; ++j) {
      for (int k = 0; k < kRows; ++k) {
        Add(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = Acc{};
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (int k = 0; k < kRows; ++k) Add(acc[0][k], load(i, k));
  for (int j = 1; j < kLevels; ++j)
    for (int k = 0; k < kRows; ++k) Add(acc[0][k], acc[j][k]);
  std::array<Acc, kRows> out;
  for (int k = 0; k < kRows; ++k) out[k] = acc[0][k];
  return out;
}

// row_sum: `size` terms load(i) in four interleaved partial sums, the tail into the first.
template <typename Acc, typename Load>
Acc RowSum(int64_t size, Load load) {
  constexpr int kIlp = 4;
  const int64_t size_ilp = size / kIlp;
  std::array<Acc, kIlp> partial =
      MultiRowSum<Acc, kIlp>(size_ilp, [&](int64_t i, int k) { return load(i * kIlp + k); });
  for (int64_t i = size_ilp * kIlp; i < size; ++i) Add(partial[0], load(i));
  for (int k = 1; k < kIlp; ++k) Add(partial[0], partial[k]);
  return partial[0];
}

Lanes LoadLanes(const float* p) {
  Lanes l;
  std::copy(p, p + kLanes, l.v.begin());
  return l;
}

// TorchInnerSum over n terms load(i).
template <typename Load>
float InnerSum(int64_t n, Load load) {
  if (n < kLanes) {  // scalar_inner_sum: row_sum over the scalars
    return RowSum<float>(n, load);
  }
  const int64_t vectors = n / kLanes;
  const Lanes acc = RowSum<Lanes>(vectors, [&](int64_t i) {
    Lanes l;
    for (int k = 0; k < kLanes; ++k) l.v[k] = load(i * kLanes + k);
    return l;
  });
  float total = 0;
  for (int64_t k = vectors * kLanes; k < n; ++k) total = total + load(k);
  for (int k = 0; k < kLanes; ++k) total = total + acc.v[k];
  return total;
}

}  // namespace

float TorchInnerSum(const float* x, int64_t n) {
  return InnerSum(n, [&](int64_t i) { return x[i]; });
}

float TorchInnerSumExp(const float* x, int64_t n, float shift) {
  return InnerSum(n, [&](int64_t i) { return std::exp(x[i] - shift); });
}

void TorchOuterSum(const float* x, int64_t rows, int64_t cols, float* out) {
  if (cols < kLanes) {  // scalar_outer_sum: each column a row_sum over the rows
    for (int64_t c = 0; c < cols; ++c)
      out[c] = RowSum<float>(rows, [&](int64_t r) { return x[r * cols + c]; });
    return;
  }
  constexpr int kRows = 4;
  int64_t j = 0;
  for (; j + kRows * kLanes <= cols; j += kRows * kLanes) {
    const std::array<Lanes, kRows> sums = MultiRowSum<Lanes, kRows>(
        rows, [&](int64_t r, int k) { return LoadLanes(x + r * cols + j + k * kLanes); });
    for (int k = 0; k < kRows; ++k)
      std::copy(sums[k].v.begin(), sums[k].v.end(), out + j + k * kLanes);
  }
  for (; j + kLanes <= cols; j += kLanes) {
    const Lanes s = RowSum<Lanes>(rows, [&](int64_t r) { return LoadLanes(x + r * cols + j); });
    std::copy(s.v.begin(), s.v.end(), out + j);
  }
  for (; j < cols; ++j) out[j] = RowSum<float>(rows, [&](int64_t r) { return x[r * cols + j]; });
}

}  // namespace replica

#include "ops/cpu/rope.h"
#include "core/profile.h"
#include "ops/cpu/parallel.h"

#include <cmath>

#include "core/error.h"

namespace replica {
namespace {
// Every position must have a row in the table: t < T without positions, else each given one.
void RequirePositions(const RopeTable& table, int64_t B, int64_t T, const int32_t* positions) {
  if (positions == nullptr) {
    Require(T <= table.max_positions, "RoPE: sequence length {} exceeds table size {}", T,
            table.max_positions);
    return;
  }
  for (int64_t row = 0; row < B * T; ++row)
    Require(positions[row] >= 0 && positions[row] < table.max_positions,
            "RoPE: row {} has position {}, outside the table's {} positions", row,
            positions[row], table.max_positions);
}
}  // namespace

void RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                 const int32_t* positions, float* y) {
  ProfileScope profile_scope(ProfileCategory::kRope);
  RequirePositions(table, B, T, positions);
  const int64_t hd = table.head_dim, half = hd / 2;
  const float* cos_t = table.cos.f32();
  const float* sin_t = table.sin.f32();
#pragma omp parallel for schedule(static) if (B * T * heads * hd >= kMinParallelWork)
  for (int64_t row = 0; row < B * T; ++row) {
    const int64_t t = positions != nullptr ? positions[row] : row % T;
    const float* c = cos_t + t * half;
    const float* s = sin_t + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      const float* xi = x + (row * heads + h) * hd;
      float* yi = y + (row * heads + h) * hd;
      for (int64_t j = 0; j < half; ++j) {
        const float a = xi[j], b = xi[j + half];
        yi[j] = a * c[j] - b * s[j];
        yi[j + half] = b * c[j] + a * s[j];
      }
    }
  }
}

void RopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T, int64_t heads,
                  const int32_t* positions, float* dx) {
  ProfileScope profile_scope(ProfileCategory::kRope);
  RequirePositions(table, B, T, positions);
  const int64_t hd = table.head_dim, half = hd / 2;
  const float* cos_t = table.cos.f32();
  const float* sin_t = table.sin.f32();
#pragma omp parallel for schedule(static) if (B * T * heads * hd >= kMinParallelWork)
  for (int64_t row = 0; row < B * T; ++row) {
    const int64_t t = positions != nullptr ? positions[row] : row % T;
    const float* c = cos_t + t * half;
    const float* s = sin_t + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      const float* gi = dy + (row * heads + h) * hd;
      float* dxi = dx + (row * heads + h) * hd;
      for (int64_t j = 0; j < half; ++j) {
        const float a = gi[j], b = gi[j + half];
        dxi[j] += a * c[j] + b * s[j];
        dxi[j + half] += b * c[j] - a * s[j];
      }
    }
  }
}

std::vector<double> RopeInvFreqReference(const RopeParams& params, int64_t head_dim) {
  const double d = static_cast<double>(head_dim), theta = params.theta;
  std::vector<double> inv;
  for (int64_t j = 0; 2 * j < head_dim; ++j) inv.push_back(std::pow(theta, -2.0 * j / d));
  if (params.type != RopeType::kYarn) return inv;
  const double pi = std::acos(-1.0), L = static_cast<double>(params.original_max_position_embeddings);
  auto dim_of = [&](double r) { return d * std::log(L / (2.0 * pi * r)) / (2.0 * std::log(theta)); };
  double low = dim_of(params.beta_fast), high = dim_of(params.beta_slow);
  if (params.truncate) low = std::floor(low), high = std::ceil(high);
  low = low < 0 ? 0 : low;
  high = high > d - 1 ? d - 1 : high;
  if (low == high) high += 0.001;
  for (size_t j = 0; j < inv.size(); ++j) {
    double ramp = (static_cast<double>(j) - low) / (high - low);
    ramp = ramp < 0 ? 0 : (ramp > 1 ? 1 : ramp);
    inv[j] = inv[j] / params.factor * ramp + inv[j] * (1.0 - ramp);
  }
  return inv;
}

void RopeForwardReference(int64_t head_dim, const RopeParams& params, const float* x, int64_t B,
                          int64_t T, int64_t heads, float* y) {
  const int64_t half = head_dim / 2;
  const std::vector<double> inv = RopeInvFreqReference(params, head_dim);
  const double m = params.type == RopeType::kYarn ? params.attention_factor : 1.0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = ((b * T + t) * heads + h) * head_dim;
        for (int64_t j = 0; j < half; ++j) {
          const double phi = static_cast<double>(t) * inv[j];
          const double c = m * std::cos(phi), s = m * std::sin(phi);
          const double a = x[base + j], bb = x[base + j + half];
          y[base + j] = static_cast<float>(a * c - bb * s);
          y[base + j + half] = static_cast<float>(bb * c + a * s);
        }
      }
}

void RopeBackwardReference(int64_t head_dim, const RopeParams& params, const float* dy, int64_t B,
                           int64_t T, int64_t heads, float* dx) {
  const int64_t half = head_dim / 2;
  const std::vector<double> inv = RopeInvFreqReference(params, head_dim);
  const double m = params.type == RopeType::kYarn ? params.attention_factor : 1.0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = ((b * T + t) * heads + h) * head_dim;
        for (int64_t j = 0; j < half; ++j) {
          const double phi = static_cast<double>(t) * inv[j];
          const double c = m * std::cos(phi), s = m * std::sin(phi);
          const double a = dy[base + j], bb = dy[base + j + half];
          dx[base + j] += static_cast<float>(a * c + bb * s);
          dx[base + j + half] += static_cast<float>(bb * c - a * s);
        }
      }
}

void RopeForwardReference(int64_t head_dim, double theta, const float* x, int64_t B, int64_t T,
                          int64_t heads, float* y) {
  RopeForwardReference(head_dim, RopeParams::Plain(theta), x, B, T, heads, y);
}

void RopeBackwardReference(int64_t head_dim, double theta, const float* dy, int64_t B, int64_t T,
                           int64_t heads, float* dx) {
  RopeBackwardReference(head_dim, RopeParams::Plain(theta), dy, B, T, heads, dx);
}

}  // namespace replica

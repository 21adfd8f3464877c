#include "ops/cpu/rope.h"
#include "core/profile.h"
#include "ops/cpu/parallel.h"

#include <cmath>

#include "core/error.h"

namespace replica {
namespace {

double InvFreq(int64_t j, int64_t head_dim, double theta) {
  return std::pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
}

}  // namespace

RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, double theta) {
  Require(head_dim > 0 && head_dim % 2 == 0, "RoPE: head dim must be even and positive, got {}",
          head_dim);
  Require(theta > 0, "RoPE: rope_theta must be positive, got {}", theta);
  RopeTable t;
  t.max_positions = max_positions;
  t.head_dim = head_dim;
  t.theta = theta;
  const int64_t half = head_dim / 2;
  t.cos.resize(static_cast<size_t>(max_positions * half));
  t.sin.resize(t.cos.size());
  for (int64_t j = 0; j < half; ++j) {
    const double f = InvFreq(j, head_dim, theta);
    for (int64_t p = 0; p < max_positions; ++p) {
      const double phi = static_cast<double>(p) * f;
      t.cos[p * half + j] = static_cast<float>(std::cos(phi));
      t.sin[p * half + j] = static_cast<float>(std::sin(phi));
    }
  }
  return t;
}

void RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                 float* y) {
  ProfileScope profile_scope(ProfileCategory::kRope);
  Require(T <= table.max_positions, "RoPE: sequence length {} exceeds table size {}", T,
          table.max_positions);
  const int64_t hd = table.head_dim, half = hd / 2;
#pragma omp parallel for schedule(static) if (B * T * heads * hd >= kMinParallelWork)
  for (int64_t row = 0; row < B * T; ++row) {
    const int64_t t = row % T;
    const float* c = table.cos.data() + t * half;
    const float* s = table.sin.data() + t * half;
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
                  float* dx) {
  ProfileScope profile_scope(ProfileCategory::kRope);
  Require(T <= table.max_positions, "RoPE: sequence length {} exceeds table size {}", T,
          table.max_positions);
  const int64_t hd = table.head_dim, half = hd / 2;
#pragma omp parallel for schedule(static) if (B * T * heads * hd >= kMinParallelWork)
  for (int64_t row = 0; row < B * T; ++row) {
    const int64_t t = row % T;
    const float* c = table.cos.data() + t * half;
    const float* s = table.sin.data() + t * half;
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

void RopeForwardReference(int64_t head_dim, double theta, const float* x, int64_t B, int64_t T,
                          int64_t heads, float* y) {
  const int64_t half = head_dim / 2;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = ((b * T + t) * heads + h) * head_dim;
        for (int64_t j = 0; j < half; ++j) {
          const double phi = static_cast<double>(t) * InvFreq(j, head_dim, theta);
          const double c = std::cos(phi), s = std::sin(phi);
          const double a = x[base + j], bb = x[base + j + half];
          y[base + j] = static_cast<float>(a * c - bb * s);
          y[base + j + half] = static_cast<float>(bb * c + a * s);
        }
      }
}

void RopeBackwardReference(int64_t head_dim, double theta, const float* dy, int64_t B, int64_t T,
                           int64_t heads, float* dx) {
  const int64_t half = head_dim / 2;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = ((b * T + t) * heads + h) * head_dim;
        for (int64_t j = 0; j < half; ++j) {
          const double phi = static_cast<double>(t) * InvFreq(j, head_dim, theta);
          const double c = std::cos(phi), s = std::sin(phi);
          const double a = dy[base + j], bb = dy[base + j + half];
          dx[base + j] += static_cast<float>(a * c + bb * s);
          dx[base + j + half] += static_cast<float>(bb * c - a * s);
        }
      }
}

}  // namespace replica

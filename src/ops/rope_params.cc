#include "ops/rope_params.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace replica {
namespace {

constexpr double kPi = 3.141592653589793238462643383279502884;

double GetMscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// The dimension index whose wavelength turns `rotations` times over L positions.
double CorrectionDim(double rotations, int64_t head_dim, double theta, double L) {
  return static_cast<double>(head_dim) * std::log(L / (rotations * 2.0 * kPi)) /
         (2.0 * std::log(theta));
}

}  // namespace

bool RopeParams::SameMath(const RopeParams& o) const {
  if (type != o.type || theta != o.theta) return false;
  if (type == RopeType::kDefault) return true;
  return factor == o.factor &&
         original_max_position_embeddings == o.original_max_position_embeddings &&
         beta_fast == o.beta_fast && beta_slow == o.beta_slow &&
         attention_factor == o.attention_factor && truncate == o.truncate;
}

double YarnDefaultAttentionFactor(double factor, double mscale, double mscale_all_dim) {
  if (mscale != 0 && mscale_all_dim != 0)
    return GetMscale(factor, mscale) / GetMscale(factor, mscale_all_dim);
  return GetMscale(factor, 1.0);
}

YarnRange YarnCorrectionRange(const RopeParams& p, int64_t head_dim) {
  Require(p.original_max_position_embeddings > 0,
          "YaRN: original_max_position_embeddings must be positive, got {}",
          p.original_max_position_embeddings);
  const double L = static_cast<double>(p.original_max_position_embeddings);
  double low = CorrectionDim(p.beta_fast, head_dim, p.theta, L);
  double high = CorrectionDim(p.beta_slow, head_dim, p.theta, L);
  if (p.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  return {std::max(low, 0.0), std::min(high, static_cast<double>(head_dim - 1))};
}

std::vector<double> RopeInvFreq(const RopeParams& p, int64_t head_dim) {
  Require(head_dim > 0 && head_dim % 2 == 0, "RoPE: head dim must be even and positive, got {}",
          head_dim);
  Require(p.theta > 0 && std::isfinite(p.theta), "RoPE: rope_theta must be positive, got {}",
          p.theta);
  const int64_t half = head_dim / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j)
    inv[j] = 1.0 / std::pow(p.theta, static_cast<double>(2 * j) / static_cast<double>(head_dim));
  if (p.type == RopeType::kDefault) return inv;

  Require(p.factor >= 1.0 && std::isfinite(p.factor), "YaRN: factor must be >= 1, got {}",
          p.factor);
  Require(p.beta_fast > 0 && p.beta_slow > 0, "YaRN: beta_fast {} and beta_slow {} must be positive",
          p.beta_fast, p.beta_slow);
  YarnRange r = YarnCorrectionRange(p, head_dim);
  if (r.low == r.high) r.high += 0.001;  // as transformers: avoids a division by zero
  for (int64_t j = 0; j < half; ++j) {
    const double ramp = std::clamp((static_cast<double>(j) - r.low) / (r.high - r.low), 0.0, 1.0);
    const double extrapolation = inv[j], interpolation = inv[j] / p.factor;
    // transformers' inv_freq_extrapolation_factor is 1 − ramp.
    inv[j] = interpolation * ramp + extrapolation * (1.0 - ramp);
  }
  return inv;
}

}  // namespace replica

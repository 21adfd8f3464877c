#include "run/olmo_core_yarn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace replica {
namespace {

constexpr double kPi = 3.141592653589793238462643383279502884;

// OLMo-core's _dim_from_rot.
double DimFromRot(double rotations, int64_t head_dim, double theta, double old_context_len) {
  return static_cast<double>(head_dim) * std::log(old_context_len / (rotations * 2.0 * kPi)) /
         (2.0 * std::log(theta));
}

}  // namespace

double OlmoCoreYarnAttentionFactor(const OlmoCoreYarn& y) {
  return 0.1 * std::log(y.factor) + 1.0;
}

RopeParams OlmoCoreYarnRope(const OlmoCoreYarn& y, double theta) {
  RopeParams p;
  p.type = RopeType::kYarn;
  p.theta = theta;
  p.factor = y.factor;
  p.original_max_position_embeddings = y.old_context_len;
  p.original_max_given = true;
  p.beta_fast = static_cast<double>(y.beta_fast);
  p.beta_slow = static_cast<double>(y.beta_slow);
  p.attention_factor = OlmoCoreYarnAttentionFactor(y);
  p.attention_factor_given = true;
  p.truncate = true;
  return p;
}

std::string OlmoCoreYarnDiffers(const OlmoCoreYarn& y, double theta, int64_t head_dim) {
  const double L = static_cast<double>(y.old_context_len);
  const int64_t half = head_dim / 2;
  const double low =
      std::max(std::floor(DimFromRot(static_cast<double>(y.beta_fast), head_dim, theta, L)), 0.0);
  const double high =
      std::min(std::ceil(DimFromRot(static_cast<double>(y.beta_slow), head_dim, theta, L)),
               static_cast<double>(half - 1));
  const double span = std::max(high - low, 1e-3);

  YarnRange hf = YarnCorrectionRange(OlmoCoreYarnRope(y, theta), head_dim);
  if (hf.low == hf.high) hf.high += 0.001;
  if (hf.low == low && hf.high - hf.low == span) return "";
  return fmt::format(
      "OLMo-core's YaRN ramp for head dim {} runs from {} over {} dimensions (high clamped at "
      "head_dim/2 - 1 = {}), transformers' (which replica computes) from {} over {} (high clamped "
      "at head_dim - 1 = {})",
      head_dim, low, span, half - 1, hf.low, hf.high - hf.low, head_dim - 1);
}

}  // namespace replica

// RopeParams: the settings of one rotary embedding (plain RoPE or YaRN), as resolved from a
// Hugging Face config, and the per-dimension inverse frequencies and cos/sin scale they imply,
// computed exactly as transformers' `_compute_default_rope_parameters` /
// `_compute_yarn_parameters` do (in double). Parsing and validation live in model/model_config.
//
// YaRN (s = factor, L = original_max_position_embeddings, d = head dim, θ = theta):
//   dim(r)      = d · ln(L / (2π r)) / (2 ln θ)
//   low         = max(floor(dim(beta_fast)), 0),  high = min(ceil(dim(beta_slow)), d − 1)
//                 (no floor/ceil when truncate is false; high += 0.001 when low == high)
//   ramp[j]     = clamp((j − low) / (high − low), 0, 1)                j = 0 .. d/2 − 1
//   inv_freq[j] = θ^(−2j/d) / s · ramp[j] + θ^(−2j/d) · (1 − ramp[j])
//   scale       = attention_factor (multiplies cos and sin; 1 for plain RoPE)
#pragma once
#include <cstdint>
#include <vector>

namespace replica {

enum class RopeType { kDefault, kYarn };

struct RopeParams {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  // YaRN only (ignored for kDefault). All resolved: defaults and fallbacks already applied.
  double factor = 1.0;                           // s >= 1
  int64_t original_max_position_embeddings = 0;  // L
  double beta_fast = 32.0, beta_slow = 1.0;
  double attention_factor = 1.0;                 // m, multiplies cos and sin
  bool truncate = true;                          // floor/ceil the correction range
  // Which optional YaRN fields config.json gave explicitly (so they are written back as given).
  bool attention_factor_given = false, original_max_given = false, truncate_given = false;

  // Plain RoPE of base theta.
  static RopeParams Plain(double theta) {
    RopeParams p;
    p.theta = theta;
    return p;
  }

  // Same math (the *_given flags do not count).
  bool SameMath(const RopeParams& o) const;
  // The factor that multiplies cos and sin: attention_factor for YaRN, 1 for plain RoPE.
  double Scale() const { return type == RopeType::kYarn ? attention_factor : 1.0; }
};

// transformers' default YaRN attention factor for a scaling factor s: 0.1·ln(s) + 1 (1 if s <= 1);
// with mscale and mscale_all_dim both given, get_mscale(s, mscale) / get_mscale(s, mscale_all_dim).
double YarnDefaultAttentionFactor(double factor, double mscale = 0, double mscale_all_dim = 0);

// The YaRN correction range [low, high] in dimension indices (before the low == high nudge).
struct YarnRange {
  double low = 0, high = 0;
};
YarnRange YarnCorrectionRange(const RopeParams& p, int64_t head_dim);

// inv_freq[j], j = 0 .. head_dim/2 − 1, in double.
std::vector<double> RopeInvFreq(const RopeParams& p, int64_t head_dim);

}  // namespace replica

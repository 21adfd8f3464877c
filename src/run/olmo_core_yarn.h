// OLMo-core's YaRN RoPE scaling (olmo_core.nn.rope.YaRNRoPEScalingConfig) as replica's RopeParams
// (transformers' "yarn" rope type), for the OLMo-core config importer (docs/olmo-core.md).
//
// OLMo-core's YaRNRoPEScalingConfig.compute_scaled_inv_freq (s = factor, L = old_context_len,
// d = head dim, θ = theta, dim(r) = d · ln(L / (2π r)) / (2 ln θ)):
//   low  = max(floor(dim(beta_fast)), 0),  high = min(ceil(dim(beta_slow)), d/2 − 1)
//   span = max(high − low, 0.001),  ramp[j] = clamp((j − low) / span, 0, 1)
//   inv_freq[j] = θ^(−2j/d) / s · ramp[j] + θ^(−2j/d) · (1 − ramp[j])
//   cos and sin multiplied by get_attention_rescale_factor() = 0.1 · ln(s) + 1
// transformers clamps high at d − 1 (not d/2 − 1) and nudges high by 0.001 only when low == high;
// otherwise the two are the same math. Promise: OlmoCoreYarnDiffers is empty exactly when
// replica's RopeInvFreq of OlmoCoreYarnRope has OLMo-core's ramp for that head dim.
#pragma once
#include <cstdint>
#include <string>

#include "ops/rope_params.h"

namespace replica {

struct OlmoCoreYarn {  // the dataclass fields, with its defaults
  double factor = 8.0;
  int64_t beta_fast = 32, beta_slow = 1;
  int64_t old_context_len = 8192;

  bool operator==(const OlmoCoreYarn&) const = default;
};

// get_attention_rescale_factor(): 0.1 · ln(factor) + 1, in double as Python computes it.
double OlmoCoreYarnAttentionFactor(const OlmoCoreYarn& y);

// transformers' yarn settings OLMo-core's to_hf_config() writes: factor, original context, betas,
// attention_factor given explicitly, truncate (floor/ceil) left at its default true.
RopeParams OlmoCoreYarnRope(const OlmoCoreYarn& y, double theta);

// Why OLMo-core's ramp for `head_dim` differs from transformers' (both ranges named); "" if it
// does not.
std::string OlmoCoreYarnDiffers(const OlmoCoreYarn& y, double theta, int64_t head_dim);

}  // namespace replica

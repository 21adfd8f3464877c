// Parameter initialisation as OLMo-core's InitMethod.normal (docs/reference/olmo3-recipe.md §3): every matrix and
// the embedding ~ N(0, 0.02²) truncated at ±0.06 (±3σ, absolute, no renormalisation), every RMSNorm
// weight = 1.
//
// Randomness comes from Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11), a counter-based generator: element e of tensor i (in layout order) is a pure function
// of (seed, i, e), so the weights are identical for any thread count, rank count or sharding.
// Element e draws Philox(key = seed, counter = (e_lo, e_hi, i, attempt)); the four 32-bit words
// make two uniforms u1 ∈ (0, 1], u2 ∈ [0, 1) with 53 random bits each, Box-Muller turns them into
// z = sqrt(-2 ln u1)·cos(2π u2), and |z| > 3 is rejected and redrawn with attempt + 1 (exact
// truncated normal). The values are NOT torch's: same distribution, different stream.
#pragma once
#include <array>
#include <cstdint>

#include "tensor/flat_buffer.h"

namespace replica {

// One Philox4x32-10 block.
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// A standard normal truncated to [-3, 3] for (seed, stream, index): the draw described above.
double TruncatedStdNormal(uint64_t seed, uint32_t stream, uint64_t index);

struct InitOptions {
  uint64_t seed = 0;
  double std = 0.02;
  double cutoff_sigmas = 3.0;  // truncation at ±cutoff_sigmas·std
};

// True for tensors initialised to 1 (RMSNorm weights: names ending in "norm.weight" or
// "layernorm.weight"); every other tensor is drawn from the truncated normal.
bool IsNormWeight(const std::string& name);

// Fills `params` (laid out by `layout`) as described above. Padding between views stays zero.
void InitParams(const ParamLayout& layout, FlatBuffer& params, const InitOptions& options);
// The same for floats [begin, end) of the flat layout only, into out[0, end - begin) (a rank that
// holds only that range: ZeRO-3); padding left untouched. The values are those InitParams puts
// there, and no full-size buffer is made.
void InitParamsRange(const ParamLayout& layout, float* out, size_t begin, size_t end,
                     const InitOptions& options);

}  // namespace replica

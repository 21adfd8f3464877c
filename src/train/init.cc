#include "train/init.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "core/error.h"

namespace replica {

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

double TruncatedStdNormal(uint64_t seed, uint32_t stream, uint64_t index) {
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed),
                                       static_cast<uint32_t>(seed >> 32)};
  for (uint32_t attempt = 0;; ++attempt) {
    const auto r = Philox4x32({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                               stream, attempt},
                              key);
    // 53-bit uniforms: u1 in (0, 1] so log(u1) is finite, u2 in [0, 1).
    const uint64_t a = ((static_cast<uint64_t>(r[0]) << 32) | r[1]) >> 11;
    const uint64_t b = ((static_cast<uint64_t>(r[2]) << 32) | r[3]) >> 11;
    const double u1 = (static_cast<double>(a) + 1.0) * 0x1p-53;
    const double u2 = static_cast<double>(b) * 0x1p-53;
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    if (std::fabs(z) <= 3.0) return z;
  }
}

bool IsNormWeight(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with("norm.weight") || ends_with("layernorm.weight");
}

void InitParams(const ParamLayout& layout, FlatBuffer& params, const InitOptions& options) {
  Require(params.size() >= layout.total_floats(),
          "init: parameter buffer has {} floats, layout needs {}", params.size(),
          layout.total_floats());
  InitParamsRange(layout, params.data(), 0, layout.total_floats(), options);
}

void InitParamsRange(const ParamLayout& layout, float* out, size_t begin, size_t end,
                     const InitOptions& options) {
  Require(begin <= end && end <= layout.total_floats(),
          "init: range [{}, {}) outside the layout's {} floats", begin, end, layout.total_floats());
  Require(options.std > 0 && options.cutoff_sigmas > 0, "init: std and cutoff must be positive");
  // Rejection at 3σ is built into TruncatedStdNormal; other cutoffs clamp the redraw bound.
  Require(options.cutoff_sigmas == 3.0,
          "init: only a ±3σ truncation is implemented (OLMo-core's), got {}σ",
          options.cutoff_sigmas);
  const auto& views = layout.views();
  for (size_t i = 0; i < views.size(); ++i) {
    const ParamView& v = views[i];
    const size_t lo = std::max(begin, v.offset), hi = std::min(end, v.offset + v.numel);
    if (lo >= hi) continue;
    float* p = out + (lo - begin);
    const int64_t first = static_cast<int64_t>(lo - v.offset), n = static_cast<int64_t>(hi - lo);
    if (IsNormWeight(v.name)) {
      for (int64_t e = 0; e < n; ++e) p[e] = 1.0f;
      continue;
    }
    const uint32_t stream = static_cast<uint32_t>(i);
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < n; ++e) {
      p[e] = static_cast<float>(
          options.std *
          TruncatedStdNormal(options.seed, stream, static_cast<uint64_t>(first + e)));
    }
  }
}

}  // namespace replica

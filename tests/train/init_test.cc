// Parameter init: Philox known-answer vectors, the truncated-normal statistics, norm weights = 1,
// and independence from the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/threads.h"
#include "model/model_config.h"
#include "train/init.h"

namespace replica {
namespace {

// Known-answer tests of Random123 (kat_vectors: philox4x32_10).
TEST(Init, PhiloxKnownAnswers) {
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(Philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                       {0xffffffffu, 0xffffffffu}),
            (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(Philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                       {0xa4093822u, 0x299f31d0u}),
            (std::array<uint32_t, 4>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Init, TruncatedNormalStatistics) {
  const int n = 400000;
  double sum = 0, sq = 0, maxabs = 0;
  int beyond2 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = TruncatedStdNormal(7, 3, static_cast<uint64_t>(i));
    sum += z;
    sq += z * z;
    maxabs = std::max(maxabs, std::fabs(z));
    beyond2 += std::fabs(z) > 2;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_LE(maxabs, 3.0);
  EXPECT_NEAR(mean, 0.0, 0.005);
  // Variance of N(0,1) truncated at ±3: 1 - 2·3·φ(3)/(2Φ(3)-1) = 0.97333.
  EXPECT_NEAR(var, 0.97333, 0.006);
  // P(|z| > 2 | |z| <= 3) = (0.0455 - 0.0027) / 0.9973 = 0.04292.
  EXPECT_NEAR(static_cast<double>(beyond2) / n, 0.04292, 0.002);
}

ModelConfig Tiny() {
  nlohmann::json j = {{"model_type", "olmo3"}, {"vocab_size", 256},      {"hidden_size", 64},
                      {"intermediate_size", 128}, {"num_hidden_layers", 4}, {"num_attention_heads", 4},
                      {"num_key_value_heads", 2}, {"rms_norm_eps", 1e-6},  {"rope_theta", 5e5},
                      {"sliding_window", 8}};
  return ModelConfig::FromHfJson(j, "tiny");
}

TEST(Init, MatricesTruncatedNormsOneAndThreadIndependent) {
  const ModelConfig config = Tiny();
  const ParamLayout layout = config.BuildLayout();
  FlatBuffer a(layout.total_floats()), b(layout.total_floats()), c(layout.total_floats());
  SetNumThreads(1);
  InitParams(layout, a, {.seed = 12});
  SetNumThreads(2);
  InitParams(layout, b, {.seed = 12});
  InitParams(layout, c, {.seed = 13});
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0);
  int norms = 0;
  for (const ParamView& v : layout.views()) {
    auto s = a.View(v);
    if (v.shape.size() == 1) {
      ++norms;
      for (float x : s) ASSERT_EQ(x, 1.0f) << v.name;
      continue;
    }
    double sq = 0;
    for (float x : s) {
      ASSERT_LE(std::fabs(x), 0.06f) << v.name;
      sq += static_cast<double>(x) * x;
    }
    EXPECT_NEAR(std::sqrt(sq / static_cast<double>(s.size())), 0.02 * std::sqrt(0.97333), 0.002)
        << v.name;
  }
  EXPECT_EQ(norms, 4 * 4 + 1);  // q_norm, k_norm, two block norms per layer, final norm
  // Two tensors of the same shape get different values (the stream is the tensor index).
  auto q0 = a.View(layout.Get("model.layers.0.self_attn.q_proj.weight"));
  auto q1 = a.View(layout.Get("model.layers.1.self_attn.q_proj.weight"));
  EXPECT_NE(std::memcmp(q0.data(), q1.data(), q0.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace replica

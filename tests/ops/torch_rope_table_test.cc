// bf16-fsdp's RoPE tables against OLMo-core's own (tests/data/reference/rope_tables, written by
// tools/crosscheck/generate_rope_tables.py): the inverse frequencies bit for bit, plain and YaRN;
// almost every cos/sin entry equal, and none further than torch's CPU sin and cos (MKL's) can be
// from glibc's: one fp32 ulp, which YaRN's attention factor (in [1, 2)) can widen to two when the
// product is rounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "ops/cpu/fsdp_bf16.h"

namespace replica {
namespace {

const std::string kDir = std::string(REPLICA_TEST_DATA) + "/reference/rope_tables/";

std::vector<float> ReadFloats(const std::string& path) {
  const std::string bytes = ReadFile(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;  // a monotone integer line through ±0
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(static_cast<int64_t>(ia) - ib);
}

TEST(TorchRopeTable, InverseFrequenciesAreOlmoCoresAndEntriesDifferOnlyInSinCosRounding) {
  const nlohmann::json cases = nlohmann::json::parse(ReadFile(kDir + "cases.json"));
  ASSERT_GE(cases.size(), 4u);
  for (const nlohmann::json& c : cases) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    RopeParams p = RopeParams::Plain(c["theta"].get<double>());
    if (c.contains("factor")) {
      p.type = RopeType::kYarn;
      p.factor = c["factor"];
      p.beta_fast = c["beta_fast"];
      p.beta_slow = c["beta_slow"];
      p.original_max_position_embeddings = c["original_max_position_embeddings"];
      p.attention_factor = c["attention_factor"];
      p.truncate = true;
    }
    const int64_t hd = c["head_dim"], T = c["positions"], half = hd / 2;
    const std::vector<float> inv = ReadFloats(kDir + name + ".inv");
    const std::vector<float> want_cos = ReadFloats(kDir + name + ".cos");
    const std::vector<float> want_sin = ReadFloats(kDir + name + ".sin");
    ASSERT_EQ(static_cast<int64_t>(inv.size()), half);
    ASSERT_EQ(static_cast<int64_t>(want_cos.size()), T * half);

    const std::vector<float> got_inv = TorchRopeInvFreq(p, hd);
    ASSERT_EQ(got_inv.size(), inv.size());
    for (int64_t j = 0; j < half; ++j) EXPECT_EQ(got_inv[j], inv[j]) << "inv_freq[" << j << "]";

    std::vector<float> cos(static_cast<size_t>(T * half)), sin(cos.size());
    TorchRopeTableEntries(p, T, hd, cos.data(), sin.data());
    int64_t equal = 0, worst = 0;
    for (size_t i = 0; i < cos.size(); ++i) {
      const int64_t dc = UlpDistance(cos[i], want_cos[i]), ds = UlpDistance(sin[i], want_sin[i]);
      worst = std::max({worst, dc, ds});
      equal += (dc == 0) + (ds == 0);
    }
    const double fraction = static_cast<double>(equal) / (2.0 * static_cast<double>(cos.size()));
    std::printf("  %s: %.2f%% of %zu entries equal OLMo-core's, the rest %lld ulp apart at most\n",
                name.c_str(), 100 * fraction, 2 * cos.size(), static_cast<long long>(worst));
    EXPECT_LE(worst, p.type == RopeType::kYarn ? 2 : 1);
    EXPECT_GE(fraction, 0.9);
  }
}

}  // namespace
}  // namespace replica

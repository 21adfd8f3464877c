// bf16-fsdp's loss against torch's own (tests/data/reference/torch_cross_entropy, written by
// tools/crosscheck/generate_torch_cross_entropy.py on an AVX2 CPU, so with log_softmax's 8-lane
// vectors): F.cross_entropy's sum, its quotient by the batch's token count and the z-loss's sum
// and quotient bit for bit; logsumexp on nearly every row (torch's exp and log there are MKL's,
// replica's glibc's); the fp32 gradient of the logits on nearly every element and, rounded to
// bf16 as bf16-fsdp stores it, on every element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/torch_cross_entropy.h"
#include "ops/cpu/torch_sum.h"

namespace replica {
namespace {

const std::string kDir = std::string(REPLICA_TEST_DATA) + "/reference/torch_cross_entropy/";

template <typename T>
std::vector<T> Read(const std::string& path) {
  const std::string bytes = ReadFile(path);
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

TEST(TorchCrossEntropy, SleefExpAndLogSpecialValues) {
  EXPECT_EQ(SleefExpF(0.0f), 1.0f);
  EXPECT_EQ(SleefExpF(-200.0f), 0.0f);
  EXPECT_TRUE(std::isinf(SleefExpF(200.0f)));
  EXPECT_EQ(SleefLogF(1.0f), 0.0f);
  EXPECT_TRUE(std::isinf(SleefLogF(0.0f)) && SleefLogF(0.0f) < 0);
  EXPECT_TRUE(std::isnan(SleefLogF(-1.0f)));
  EXPECT_NEAR(SleefLogF(1e-40f), std::log(1e-40), 1e-5);  // the subnormal path
}

TEST(TorchCrossEntropy, MatchesTorchBitForBit) {
  const auto j = nlohmann::json::parse(ReadFile(kDir + "cases.json"));
  ASSERT_EQ(j["cpu_capability"], "AVX2");  // 8-lane log_softmax vectors
  const auto zmul = static_cast<float>(j["z_loss_multiplier"].get<double>());
  for (const auto& c : j["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const int64_t N = c["rows"], V = c["vocab"];
    const auto div = static_cast<float>(c["div"].get<int64_t>());
    const auto logits = Read<float>(kDir + name + ".logits");
    const auto grad = Read<float>(kDir + name + ".grad");
    const auto lse_ref = Read<float>(kDir + name + ".lse");
    const auto labels = Read<int32_t>(kDir + name + ".labels");
    ASSERT_EQ(static_cast<int64_t>(logits.size()), N * V);
    TorchNllSum nll(N);
    std::vector<float> lse_sq(static_cast<size_t>(N)), g(static_cast<size_t>(V));
    const float gl = 1.0f / div, zl = gl * zmul;
    int64_t lse_equal = 0, grad_equal = 0, grad_bf16_equal = 0;
    for (int64_t b = 0; b < N; ++b) {
      const float* x = logits.data() + b * V;
      const int32_t y = labels[static_cast<size_t>(b)];
      float mx = 0;
      const float logsum = TorchLogSoftmaxLogSum(x, V, 8, &mx);
      const float lse = TorchLogsumexp(x, V);
      lse_equal += lse == lse_ref[static_cast<size_t>(b)];
      nll.Add(b, y == -100, y == -100 ? 0.0f : -((x[y] - mx) - logsum));
      lse_sq[static_cast<size_t>(b)] = y == -100 ? 0.0f : lse * lse;
      TorchLossRowGrad(x, V, y, mx, logsum, lse, gl, zl, g.data());
      for (int64_t v = 0; v < V; ++v) {
        const float want = grad[static_cast<size_t>(b * V + v)];
        grad_equal += g[static_cast<size_t>(v)] == want;
        grad_bf16_equal += RoundToBf16(g[static_cast<size_t>(v)]) == RoundToBf16(want);
      }
    }
    const float ce_sum = nll.Total(), z_sum = TorchInnerSum(lse_sq.data(), N);
    EXPECT_EQ(ce_sum, c["ce_sum"].get<float>());
    EXPECT_EQ(ce_sum / div, c["ce"].get<float>());
    EXPECT_EQ(z_sum, c["lse_sq_sum"].get<float>());
    EXPECT_EQ((zmul * z_sum) / div, c["z"].get<float>());
    EXPECT_GE(lse_equal, N * 97 / 100) << lse_equal << " of " << N;
    EXPECT_GE(grad_equal, N * V - 2) << grad_equal << " of " << N * V;
    EXPECT_EQ(grad_bf16_equal, N * V);
  }
}

}  // namespace
}  // namespace replica

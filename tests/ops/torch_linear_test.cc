// bf16-fsdp's linear layer against torch's own (tests/data/reference/torch_linear, written by
// tools/crosscheck/generate_torch_linear.py on an AVX2 CPU, where torch's bf16 GEMMs are ATen's
// own loops): y = F.linear(x, W) and autograd's dx and dW, bit for bit on the kReference path
// (aten_gemm.h's orders), for input sizes with and without tails after the forward's 64- and
// 16-term blocks, and for 200 to 500 tokens (dW's sum over the tokens).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "op_test_util.h"
#include "ops/cpu/fsdp_bf16.h"
#include "torch_reference_file.h"

namespace replica {
namespace {
using testing::BitEqualCount;
using testing::ReadBf16File;

const std::string kDir = std::string(REPLICA_TEST_DATA) + "/reference/torch_linear/";

// Sets the process's path for one test and puts this CPU's back after it.
struct PathFor {
  explicit PathFor(TorchCpuPath path) { SetTorchCpuPath(path); }
  ~PathFor() { SetTorchCpuPath(TorchCpuPathOnThisCpu()); }
};

TEST(TorchLinear, TheReferencePathIsTorchsAvx2Gemm) {
  const auto j = nlohmann::json::parse(ReadFile(kDir + "cases.json"));
  ASSERT_EQ(j["cpu_capability"], "AVX2");
  const PathFor path(TorchCpuPath::kReference);
  for (const auto& c : j["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const int64_t N = c["N"], in = c["in"], out = c["out"];
    const std::string f = kDir + name;
    const auto x = ReadBf16File(f + ".x", static_cast<size_t>(N * in));
    const auto w = ReadBf16File(f + ".w", static_cast<size_t>(out * in));
    const auto dy = ReadBf16File(f + ".dy", static_cast<size_t>(N * out));
    const auto y_ref = ReadBf16File(f + ".y", static_cast<size_t>(N * out));
    const auto dx_ref = ReadBf16File(f + ".dx", static_cast<size_t>(N * in));
    const auto dw_ref = ReadBf16File(f + ".dw", static_cast<size_t>(out * in));
    std::vector<float> y(static_cast<size_t>(N * out)), dx(static_cast<size_t>(N * in), 0.0f),
        dw(static_cast<size_t>(out * in), 0.0f);
    FsdpLinearForward(x.data(), w.data(), N, in, out, y.data());
    FsdpLinearBackward(x.data(), w.data(), dy.data(), N, in, out, dx.data(), dw.data());
    EXPECT_EQ(BitEqualCount(y, y_ref), N * out);
    EXPECT_EQ(BitEqualCount(dx, dx_ref), N * in);
    EXPECT_EQ(BitEqualCount(dw, dw_ref), out * in);
  }
}

// The other path's orders are not torch's AVX2 ones: over the cases, the choice is seen in the
// results.
TEST(TorchLinear, TheOneDnnPathSumsInOtherOrders) {
  const auto j = nlohmann::json::parse(ReadFile(kDir + "cases.json"));
  const PathFor path(TorchCpuPath::kOneDnn);
  int64_t total = 0, equal = 0;
  for (const auto& c : j["cases"]) {
    const std::string name = c["name"];
    const int64_t N = c["N"], in = c["in"], out = c["out"];
    const std::string f = kDir + name;
    const auto x = ReadBf16File(f + ".x", static_cast<size_t>(N * in));
    const auto w = ReadBf16File(f + ".w", static_cast<size_t>(out * in));
    const auto dy = ReadBf16File(f + ".dy", static_cast<size_t>(N * out));
    std::vector<float> y(static_cast<size_t>(N * out)), dx(static_cast<size_t>(N * in), 0.0f),
        dw(static_cast<size_t>(out * in), 0.0f);
    FsdpLinearForward(x.data(), w.data(), N, in, out, y.data());
    FsdpLinearBackward(x.data(), w.data(), dy.data(), N, in, out, dx.data(), dw.data());
    equal += BitEqualCount(y, ReadBf16File(f + ".y", y.size())) +
             BitEqualCount(dx, ReadBf16File(f + ".dx", dx.size())) +
             BitEqualCount(dw, ReadBf16File(f + ".dw", dw.size()));
    total += static_cast<int64_t>(y.size() + dx.size() + dw.size());
  }
  EXPECT_LT(equal, total);
  std::printf("oneDNN path against torch's AVX2 linear: %lld of %lld elements equal\n",
              static_cast<long long>(equal), static_cast<long long>(total));
}

}  // namespace
}  // namespace replica

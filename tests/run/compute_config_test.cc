// The `compute` section of a run config: defaults (fp32, auto), the 7B presets in bf16 as the
// reference trains, --set overrides, refusal of an unknown precision by key name at load, of an
// unknown ISA or one this CPU lacks by the backend's device when the run starts (a config written
// for another machine still loads and plans), and that neither key is part of the trajectory (a
// run may switch them on resume).
#include <gtest/gtest.h>

#include "testing/util.h"
#include "core/error.h"
#include "ops/cpu/isa.h"
#include "ops/registry.h"
#include "run/run_config.h"

namespace replica {
namespace {
using test::ErrorOf;

const std::string kConfigs = test::ConfigsDir();
const char* const kTiny = test::kTinyRunConfig;

TEST(ComputeConfig, DefaultsAndPresets) {
  const RunConfig c = RunConfig::FromYaml(kTiny, "/b");
  EXPECT_EQ(c.compute.precision, "fp32");
  EXPECT_EQ(c.compute.isa, "auto");
  for (const char* preset :
       {"olmo3-7b-stage1.yaml", "olmo3-7b-stage1-part2.yaml", "olmo3-7b-stage2.yaml"}) {
    EXPECT_EQ(RunConfig::Load(kConfigs + preset).compute.precision, "bf16") << preset;
  }
  EXPECT_EQ(RunConfig::Load(kConfigs + "demo.yaml").compute.precision, "fp32");
}

TEST(ComputeConfig, OverridesRoundTripAndStayOffTheTrajectory) {
  const RunConfig a = RunConfig::FromYaml(kTiny, "/b");
  const RunConfig b = RunConfig::FromYaml(kTiny, "/b", {"compute.precision=bf16"});
  EXPECT_EQ(b.compute.precision, "bf16");
  EXPECT_EQ(a.TrajectoryHash(), b.TrajectoryHash());
  EXPECT_NE(a.Hash(), b.Hash());
  EXPECT_TRUE(TrajectoryDifferences(a, b).empty());
  const RunConfig again = RunConfig::FromYaml(b.Canonical(), "/b");
  EXPECT_EQ(again.compute.precision, "bf16");
  EXPECT_EQ(again.Hash(), b.Hash());
}

TEST(ComputeConfig, BadValuesNameTheKey) {
  std::string e = ErrorOf([] {
    RunConfig::FromYaml(std::string(kTiny) + "compute:\n  precision: fp16\n", "/b", {}, "x.yaml");
  });
  EXPECT_NE(e.find("compute.precision"), std::string::npos) << e;
  EXPECT_NE(e.find("fp16"), std::string::npos) << e;
  e = ErrorOf([] { RunConfig::FromYaml(kTiny, "/b", {"compute.dtype=bf16"}); });
  EXPECT_NE(e.find("compute.dtype"), std::string::npos) << e;
}

TEST(ComputeConfig, TheDeviceChecksTheIsaWhenTheRunStarts) {
  // Any ISA name loads: the config may be planned here and run elsewhere.
  EXPECT_EQ(RunConfig::FromYaml(kTiny, "/b", {"compute.isa=amx"}).compute.isa, "amx");
  const RunConfig c = RunConfig::FromYaml(kTiny, "/b", {"compute.isa=sse9"});
  const Device& cpu = SelectBackend(c.compute.device, Precision::kFp32).device();
  EXPECT_STREQ(cpu.name(), "cpu");
  std::string e = ErrorOf([&] { cpu.Configure(Precision::kFp32, c.compute.isa, "config key 'compute.isa'"); });
  EXPECT_NE(e.find("config key 'compute.isa'"), std::string::npos) << e;
  EXPECT_NE(e.find("sse9"), std::string::npos) << e;
  if (DetectCpu().Best() < Isa::kAmx) {
    e = ErrorOf([&] { cpu.Configure(Precision::kBf16, "amx", "config key 'compute.isa'"); });
    EXPECT_NE(e.find("compute.isa"), std::string::npos) << e;
    EXPECT_NE(e.find("not available"), std::string::npos) << e;
  }
  e = ErrorOf([] { RunConfig::FromYaml(kTiny, "/b", {"compute.isa="}); });
  EXPECT_NE(e.find("compute.isa"), std::string::npos) << e;
}

TEST(ComputeConfig, TheDeviceChecksTorchCpuWhenTheRunStarts) {
  EXPECT_EQ(RunConfig::FromYaml(kTiny, "/b", {}).compute.torch_cpu, "auto");
  const RunConfig c = RunConfig::FromYaml(kTiny, "/b", {"compute.torch_cpu=avx1"});
  EXPECT_EQ(c.compute.torch_cpu, "avx1");  // loads: the device knows the kinds
  ComputeRequest request;
  request.precision = Precision::kBf16Fsdp;
  request.torch_cpu = c.compute.torch_cpu;
  request.torch_cpu_what = "config key 'compute.torch_cpu'";
  const Device& cpu = SelectBackend(c.compute.device, Precision::kBf16Fsdp).device();
  const std::string e = ErrorOf([&] { cpu.Configure(request); });
  EXPECT_NE(e.find("config key 'compute.torch_cpu'"), std::string::npos) << e;
  EXPECT_NE(e.find("avx1"), std::string::npos) << e;
  EXPECT_NE(ErrorOf([] { RunConfig::FromYaml(kTiny, "/b", {"compute.torch_cpu="}); })
                .find("compute.torch_cpu"),
            std::string::npos);
}

}  // namespace
}  // namespace replica

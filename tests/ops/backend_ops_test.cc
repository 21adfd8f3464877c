// Every registered backend (ops/registry.h) against the fp32 CPU reference, op by op
// (testing/backend_ops.h), and the registry's selection and refusals.
#include "testing/backend_ops.h"

#include <gtest/gtest.h>

#include "ops/registry.h"
#include "testing/util.h"

namespace replica {
namespace {

TEST(BackendOps, EveryRegisteredBackendMatchesTheCpuReference) {
  const std::vector<RegisteredBackend> all = RegisteredBackends();
  ASSERT_GE(all.size(), 2u);
  for (const RegisteredBackend& r : all) {
    SCOPED_TRACE(r.device + " " + PrecisionName(r.precision));
    EXPECT_EQ(r.backend->matmul_precision(), MatmulOperands(r.precision));
    testing::ExpectBackendMatchesCpu(*r.backend, r.precision == Precision::kBf16Fsdp);
  }
}

TEST(BackendRegistry, SelectsTheCpuBackends) {
  EXPECT_EQ(&SelectBackend("cpu", Precision::kFp32), &CpuBackend());
  const Backend& bf16 = SelectBackend("cpu", Precision::kBf16);
  EXPECT_EQ(bf16.matmul_precision(), Precision::kBf16);
  EXPECT_TRUE(bf16.is_host());
  EXPECT_TRUE(CpuBackend().is_host());
  EXPECT_EQ(CpuBackend().matmul_precision(), Precision::kFp32);
}

TEST(BackendRegistry, UnknownDeviceNamesTheKeyAndTheRegisteredDevices) {
  std::string e;
  try {
    SelectBackend("gpu", Precision::kFp32);
  } catch (const Error& ex) {
    e = ex.what();
  }
  EXPECT_NE(e.find("compute.device"), std::string::npos) << e;
  EXPECT_NE(e.find("'gpu'"), std::string::npos) << e;
  EXPECT_NE(e.find("registered devices: cpu"), std::string::npos) << e;
  EXPECT_THROW(RegisterBackend("cpu", Precision::kFp32, CpuBackend()), Error);
}

}  // namespace
}  // namespace replica

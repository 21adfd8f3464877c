// TrainState (a checkpoint's state.json): every field round-trips, including the non-finite step
// counts; a checkpoint written before they existed reads them as 0; inconsistent counts are an
// Error naming the file and the field; the torch CPU kind of a bf16-fsdp run round-trips and is
// absent (read as "") for every other run.
#include "train/train_state.h"

#include <gtest/gtest.h>

#include "testing/util.h"

namespace replica {
namespace {

TrainState Sample() {
  TrainState s;
  s.step = 12;
  s.tokens = 12 * 256;
  s.loader = {{"version", 1}, {"epoch", 1}};
  s.skip_losses = {2.5, 2.4};
  s.skip_grad_norms = {1.0, 0.9};
  s.init_seed = 7;
  s.config_hash = "c";
  s.trajectory_hash = "t";
  s.micro_batch_instances = 2;
  s.adam_step = 9;
  s.non_finite_total = 3;
  s.non_finite_consecutive = 2;
  s.non_finite_first_step = 11;
  return s;
}

TEST(TrainState, NonFiniteCountsRoundTrip) {
  const TrainState s = Sample();
  const nlohmann::json j = s.ToJson();
  EXPECT_EQ(j["non_finite"],
            nlohmann::json({{"total", 3}, {"consecutive", 2}, {"first_step", 11}}));
  const TrainState r = TrainState::FromJson(j, "state.json");
  EXPECT_EQ(r.non_finite_total, 3);
  EXPECT_EQ(r.non_finite_consecutive, 2);
  EXPECT_EQ(r.non_finite_first_step, 11);
  EXPECT_EQ(r.ToJson(), j);
}

TEST(TrainState, OlderCheckpointsHaveNoNonFiniteSteps) {
  nlohmann::json j = Sample().ToJson();
  j.erase("non_finite");
  const TrainState r = TrainState::FromJson(j, "state.json");
  EXPECT_EQ(r.non_finite_total, 0);
  EXPECT_EQ(r.non_finite_consecutive, 0);
  EXPECT_EQ(r.non_finite_first_step, 0);
}

TEST(TrainState, InconsistentNonFiniteCountsAreRefused) {
  for (const nlohmann::json& bad :
       {nlohmann::json("3"), nlohmann::json({{"total", 3}, {"consecutive", 2}}),
        nlohmann::json({{"total", 1}, {"consecutive", 2}, {"first_step", 11}}),
        nlohmann::json({{"total", 30}, {"consecutive", 2}, {"first_step", 11}}),
        nlohmann::json({{"total", 3}, {"consecutive", 2.5}, {"first_step", 11}})}) {
    nlohmann::json j = Sample().ToJson();
    j["non_finite"] = bad;
    const std::string err = test::ErrorOf([&] { TrainState::FromJson(j, "ckpt/state.json"); });
    EXPECT_NE(err.find("ckpt/state.json"), std::string::npos) << bad.dump() << ": " << err;
    EXPECT_NE(err.find("non_finite"), std::string::npos) << bad.dump() << ": " << err;
  }
}

TEST(TrainState, TorchCpuKindIsWrittenOnlyForBf16Fsdp) {
  TrainState s = Sample();
  EXPECT_FALSE(s.ToJson().contains("torch_cpu"));
  EXPECT_EQ(TrainState::FromJson(s.ToJson(), "state.json").torch_cpu, "");
  s.precision = "bf16-fsdp";
  s.torch_cpu = "avx2";
  const nlohmann::json j = s.ToJson();
  EXPECT_EQ(j["torch_cpu"], "avx2");
  EXPECT_EQ(TrainState::FromJson(j, "state.json").torch_cpu, "avx2");
  nlohmann::json bad = j;
  bad["torch_cpu"] = 2;
  const std::string err = test::ErrorOf([&] { TrainState::FromJson(bad, "ckpt/state.json"); });
  EXPECT_NE(err.find("ckpt/state.json"), std::string::npos) << err;
  EXPECT_NE(err.find("torch_cpu"), std::string::npos) << err;
}

}  // namespace
}  // namespace replica

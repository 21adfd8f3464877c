// replica parity with a z-loss multiplier (--z-loss): the gradient compared is that of
// mean(CE) + z · mean(lse²), the trainer's objective, and the report gives the mean lse² of the
// model and of the reference (the dump's `z_loss` scalar, else the dump's logits).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_backend.h"
#include "eval/parity.h"
#include "hf/hf_weights.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "model/olmo3.h"

namespace replica {
namespace {

namespace fs = std::filesystem;
const std::string kModel = std::string(REPLICA_TEST_DATA) + "/olmo3/tiny-mha";
constexpr double kZ = 1e-3;  // larger than the recipe's 1e-5 so the term is far above fp32 noise

struct Dump {
  std::string path;
  double lse_sq_mean = 0;  // the model's own, in double
};

// The model's own logits and gradients of mean(CE) + z_grad · mean(lse²) on a small batch, with
// the scalar `z_loss` (mean lse²) when `with_z_loss`.
Dump WriteDump(const std::string& name, double z_grad, bool with_z_loss) {
  const ModelConfig config = ModelConfig::FromHfFile(kModel + "/config.json");
  const int64_t B = 2, T = 5, V = config.vocab_size;
  Olmo3Model model(config, B, T, CpuBackend());
  LoadHfWeights(kModel, model.layout(), model.params());
  std::vector<int32_t> ids = {5, 77, 300, 12, 9, 1, 2, 3, 4, 500};
  std::vector<int32_t> labels = {77, 300, 12, 9, -100, 2, 3, -100, 500, 8};
  int64_t n = 0;
  for (int32_t y : labels) n += y != -100;
  std::vector<float> logits(static_cast<size_t>(B * T * V));
  model.ForwardLogits(ids.data(), B, T, logits.data());
  model.grads().Zero();
  const CrossEntropySums s = model.ForwardBackward(ids.data(), labels.data(), B, T,
                                                   1.0 / static_cast<double>(n), z_grad);
  Dump d;
  d.lse_sq_mean = s.lse_sq_sum / static_cast<double>(s.tokens);

  std::vector<int64_t> ids64(ids.begin(), ids.end()), labels64(labels.begin(), labels.end());
  SafetensorsWriter w;
  w.AddCopy("input_ids", DType::kI64, {B, T}, ids64.data(), ids64.size() * 8);
  w.AddCopy("labels", DType::kI64, {B, T}, labels64.data(), labels64.size() * 8);
  w.AddF32("logits", {B, T, V}, logits.data());
  if (with_z_loss) w.AddCopy("z_loss", DType::kF64, {}, &d.lse_sq_mean, sizeof(double));
  for (const ParamView& v : model.layout().views())
    w.AddF32("grad." + v.name, v.shape, model.grads().data() + v.offset);
  d.path = (fs::temp_directory_path() / name).string();
  w.Write(d.path);
  return d;
}

ParityReport RunWithZ(const std::string& ref, double z) {
  ParityOptions o;
  o.model_dir = kModel;
  o.reference_path = ref;
  o.grads = true;
  o.z_loss_multiplier = z;
  return RunParity(o);
}

TEST(ParityZLoss, ComparesTheGradientOfTheObjectiveWithTheZLossTerm) {
  const Dump d = WriteDump("parity_z_loss_objective.safetensors", kZ, true);
  const ParityReport with = RunWithZ(d.path, kZ);
  // The same computation as the dump's: the same bits.
  EXPECT_EQ(*with.grad_global_rel_err, 0.0);
  EXPECT_EQ(*with.grad_max_rel_err, 0.0);
  EXPECT_TRUE(with.pass);
  // Compared as gradients of the CE alone, the z-loss term shows.
  const ParityReport without = RunWithZ(d.path, 0.0);
  EXPECT_GT(*without.grad_global_rel_err, 1e-4);
  EXPECT_FALSE(without.pass);
  // The objective: CE + z · mean lse², the same mean lse² the dump holds.
  ASSERT_TRUE(with.lse_sq_mean && with.lse_sq_mean_ref);
  EXPECT_EQ(*with.lse_sq_mean, d.lse_sq_mean);
  EXPECT_EQ(*with.lse_sq_mean_ref, d.lse_sq_mean);
  EXPECT_EQ(with.lse_sq_mean_ref_source, "dump");
  const auto j = with.ToJson();
  EXPECT_DOUBLE_EQ(j["objective"].get<double>(), with.loss + kZ * d.lse_sq_mean);
  EXPECT_DOUBLE_EQ(j["z_loss_multiplier"].get<double>(), kZ);
  fs::remove(d.path);
}

TEST(ParityZLoss, ReferenceMeanLseSquaredFromTheLogitsWithoutAZLossTensor) {
  const Dump d = WriteDump("parity_z_loss_logits.safetensors", 0.0, false);
  const ParityReport r = RunWithZ(d.path, 0.0);
  EXPECT_EQ(*r.grad_global_rel_err, 0.0);
  ASSERT_TRUE(r.lse_sq_mean_ref);
  EXPECT_EQ(r.lse_sq_mean_ref_source, "logits");
  // The dump's float32 logits give the model's mean lse² to float32 rounding.
  EXPECT_NEAR(*r.lse_sq_mean_ref, d.lse_sq_mean, 1e-5 * d.lse_sq_mean);
  fs::remove(d.path);
}

TEST(ParityZLoss, NegativeMultiplierIsRefused) {
  const Dump d = WriteDump("parity_z_loss_negative.safetensors", 0.0, false);
  EXPECT_THROW(RunWithZ(d.path, -1e-5), Error);
  fs::remove(d.path);
}

}  // namespace
}  // namespace replica

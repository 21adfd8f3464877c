// replica parity --grads where a gradient is zero by construction: at T = 1 attention weights are
// exactly 1, so the q/k projections (and their norms) get no gradient. A reference that holds
// float noise there (or exactly zero while the model holds noise) must not fail a correct model:
// the per-tensor relative error uses a floor relative to the whole gradient's norm, and the
// report gives the whole-gradient relative error as well.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "eval/parity.h"
#include "ops/cpu/cpu_backend.h"
#include "hf/hf_weights.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "model/olmo3.h"

namespace replica {
namespace {

namespace fs = std::filesystem;
const std::string kModel = std::string(REPLICA_TEST_DATA) + "/olmo3/tiny-mha";

// A dump of the model's own logits and gradients on B sequences of length T = 1, with `edit`
// applied to the reference gradient of each tensor.
std::string WriteDump(const std::string& name,
                      const std::function<void(const std::string&, std::vector<float>&)>& edit) {
  const ModelConfig config = ModelConfig::FromHfFile(kModel + "/config.json");
  const int64_t B = 3, T = 1, V = config.vocab_size;
  Olmo3Model model(config, B, T, CpuBackend());
  LoadHfWeights(kModel, model.layout(), model.params());
  std::vector<int32_t> ids = {5, 77, 300}, labels = {9, 123, 400};
  std::vector<float> logits(static_cast<size_t>(B * T * V));
  model.ForwardLogits(ids.data(), B, T, logits.data());
  model.grads().Zero();
  model.ForwardBackward(ids.data(), labels.data(), B, T, 1.0 / 3.0, 0.0);

  std::vector<int64_t> ids64(ids.begin(), ids.end()), labels64(labels.begin(), labels.end());
  std::vector<std::vector<float>> grads;
  SafetensorsWriter w;
  w.AddCopy("input_ids", DType::kI64, {B, T}, ids64.data(), ids64.size() * 8);
  w.AddCopy("labels", DType::kI64, {B, T}, labels64.data(), labels64.size() * 8);
  w.AddF32("logits", {B, T, V}, logits.data());
  grads.reserve(model.layout().views().size());
  for (const ParamView& v : model.layout().views()) {
    const float* g = model.grads().data() + v.offset;
    grads.emplace_back(g, g + v.numel);
    edit(v.name, grads.back());
    w.AddF32("grad." + v.name, v.shape, grads.back().data());
  }
  const std::string path = (fs::temp_directory_path() / name).string();
  w.Write(path);
  return path;
}

bool ZeroByConstruction(const std::string& name) {
  return name.find("q_proj") != std::string::npos || name.find("k_proj") != std::string::npos ||
         name.find("q_norm") != std::string::npos || name.find("k_norm") != std::string::npos;
}

ParityReport RunGradParity(const std::string& dump) {
  ParityOptions o;
  o.model_dir = kModel;
  o.reference_path = dump;
  o.grads = true;
  o.max_kl = 1e-8;
  return RunParity(o);
}

TEST(ParityGrads, ZeroGradientTensorsUseAFloorRelativeToTheWholeGradient) {
  // The reference holds float noise (1e-20) where the true gradient is zero.
  const std::string dump = WriteDump("replica_parity_zero_grad_noise.safetensors",
                                     [](const std::string& name, std::vector<float>& g) {
                                       if (!ZeroByConstruction(name)) return;
                                       for (float& x : g) x = 1e-20f;
                                     });
  const ParityReport r = RunGradParity(dump);
  ASSERT_TRUE(r.grad_max_rel_err.has_value());
  EXPECT_LE(*r.grad_max_rel_err, 1e-4) << r.grad_worst_tensor;
  ASSERT_TRUE(r.grad_global_rel_err.has_value());
  EXPECT_LE(*r.grad_global_rel_err, 1e-4);
  EXPECT_GT(r.grad_rel_floor, 0);
  EXPECT_TRUE(r.pass) << r.ToText();
  EXPECT_NE(r.ToText().find("whole gradient"), std::string::npos) << r.ToText();
  EXPECT_TRUE(r.ToJson().contains("grad_global_rel_err"));
  fs::remove(dump);
}

TEST(ParityGrads, AWrongGradientStillFails) {
  // One tensor's reference doubled: its error is 1 relative to itself, far above any floor.
  const std::string dump = WriteDump("replica_parity_wrong_grad.safetensors",
                                     [](const std::string& name, std::vector<float>& g) {
                                       if (name != "model.layers.1.mlp.down_proj.weight") return;
                                       for (float& x : g) x *= 2;
                                     });
  const ParityReport r = RunGradParity(dump);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.grad_worst_tensor, "model.layers.1.mlp.down_proj.weight");
  EXPECT_GT(*r.grad_max_rel_err, 0.4);
  fs::remove(dump);
}

}  // namespace
}  // namespace replica

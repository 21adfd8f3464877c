// HF weight import/export: exact f32 round trip (single file and sharded), bf16 storage, and
// refusals naming the tensor for missing, extra and mis-shaped tensors.
#include "testing/util.h"
#include "hf/hf_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/half.h"
#include "io/safetensors.h"

namespace replica {
namespace {

namespace fs = std::filesystem;
const std::string kMha = std::string(REPLICA_TEST_DATA) + "/olmo3/tiny-mha";

using replica::test::ErrorOf;

TEST(HfWeights, LoadsFixtureAndRoundTripsExactly) {
  const ModelConfig config = ModelConfig::FromHfFile(kMha + "/config.json");
  const ParamLayout layout = config.BuildLayout();
  FlatBuffer params(layout.total_floats());
  LoadHfWeights(kMha, layout, params);
  const SafetensorsFile src = SafetensorsFile::Open(kMha + "/model.safetensors");
  const ParamView& q = layout.Get("model.layers.2.self_attn.q_proj.weight");
  const std::vector<float> want = src.ReadF32(q.name);
  EXPECT_EQ(0, std::memcmp(params.data() + q.offset, want.data(), q.numel * 4));

  for (uint64_t shard : {uint64_t{0}, uint64_t{200000}}) {  // 0 = default (one file)
    test::TempDir tmp(shard ? "hf-sharded" : "hf-single");
    const fs::path& dir = tmp.path();
    if (shard) {
      SaveHfModel(dir.string(), config, layout, params, DType::kF32, shard);
      EXPECT_TRUE(fs::exists(dir / "model.safetensors.index.json"));
    } else {
      SaveHfModel(dir.string(), config, layout, params);
      EXPECT_TRUE(fs::exists(dir / "model.safetensors"));
    }
    const ModelConfig again = ModelConfig::FromHfFile((dir / "config.json").string());
    EXPECT_EQ(again.num_layers, config.num_layers);
    FlatBuffer back(layout.total_floats());
    LoadHfWeights(dir.string(), layout, back);
    EXPECT_EQ(0, std::memcmp(back.data(), params.data(), params.size() * 4));
  }
}

TEST(HfWeights, Bf16StorageRoundsToNearestEven) {
  const ModelConfig config = ModelConfig::FromHfFile(kMha + "/config.json");
  const ParamLayout layout = config.BuildLayout();
  FlatBuffer params(layout.total_floats()), back(layout.total_floats());
  LoadHfWeights(kMha, layout, params);
  test::TempDir tmp("hf-bf16");
  const fs::path& dir = tmp.path();
  SaveHfModel(dir.string(), config, layout, params, DType::kBF16);
  LoadHfWeights(dir.string(), layout, back);
  for (const ParamView& v : layout.views())
    for (size_t i = 0; i < v.numel; ++i) {
      const float x = params.data()[v.offset + i];
      ASSERT_EQ(back.data()[v.offset + i], Bf16ToF32(F32ToBf16(x))) << v.name;
    }
}

TEST(HfWeights, RefusesMismatchesNamingTheTensor) {
  ModelConfig config = ModelConfig::FromHfFile(kMha + "/config.json");
  // Wider MLP than the file: shape mismatch.
  config.intermediate_size = 161;
  ParamLayout wide = config.BuildLayout();
  FlatBuffer p1(wide.total_floats());
  std::string e = ErrorOf([&] { LoadHfWeights(kMha, wide, p1); });
  EXPECT_NE(e.find("model.layers.0.mlp.gate_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[161, 64]"), std::string::npos) << e;
  // Fewer layers than the file: the file has tensors the model lacks.
  config = ModelConfig::FromHfFile(kMha + "/config.json");
  config.num_layers = 3;
  config.layer_types.resize(3);
  ParamLayout fewer = config.BuildLayout();
  FlatBuffer p2(fewer.total_floats());
  e = ErrorOf([&] { LoadHfWeights(kMha, fewer, p2); });
  EXPECT_NE(e.find("model.layers.3."), std::string::npos) << e;
  // Tied model against an untied file: lm_head.weight is extra.
  config = ModelConfig::FromHfFile(kMha + "/config.json");
  config.tie_word_embeddings = true;
  ParamLayout tied = config.BuildLayout();
  FlatBuffer p3(tied.total_floats());
  e = ErrorOf([&] { LoadHfWeights(kMha, tied, p3); });
  EXPECT_NE(e.find("lm_head.weight"), std::string::npos) << e;
  // More layers than the file: a parameter is missing.
  config = ModelConfig::FromHfFile(kMha + "/config.json");
  config.num_layers = 5;
  config.layer_types.push_back(AttentionType::kSliding);
  ParamLayout more = config.BuildLayout();
  FlatBuffer p4(more.total_floats());
  e = ErrorOf([&] { LoadHfWeights(kMha, more, p4); });
  EXPECT_NE(e.find("missing parameter 'model.layers.4."), std::string::npos) << e;
}

// NaN or Inf in a weights file is refused, naming the tensor and the element, instead of loading
// and evaluating to "ppl nan" with exit 0.
TEST(HfWeights, NonFiniteWeightsAreRefusedNamingTheTensor) {
  const ModelConfig config = ModelConfig::FromHfFile(kMha + "/config.json");
  const ParamLayout layout = config.BuildLayout();
  FlatBuffer params(layout.total_floats());
  LoadHfWeights(kMha, layout, params);
  const std::string name = "model.layers.2.mlp.up_proj.weight";
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    FlatBuffer edited(layout.total_floats());
    std::memcpy(edited.data(), params.data(), params.size() * sizeof(float));
    edited.data()[layout.Get(name).offset + 17] = bad;
    test::TempDir dir("hf-nonfinite");
    SaveHfModel(dir.str(), config, layout, edited);
    FlatBuffer out(layout.total_floats());
    const std::string e = ErrorOf([&] { LoadHfWeights(dir.str(), layout, out); });
    EXPECT_NE(e.find(name), std::string::npos) << e;
    EXPECT_NE(e.find("17"), std::string::npos) << e;
    EXPECT_NE(e.find(std::isnan(bad) ? "nan" : "inf"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace replica

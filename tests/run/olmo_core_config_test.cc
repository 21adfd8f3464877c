// OLMo-core config.json import (run/olmo_core_config.h): the four official Olmo 3 stages in both
// block spellings map to replica's own presets (same trajectory keys), refusals name their JSON
// path, unknown classes are refused, and the YAML it writes loads to the same config.
#include "run/olmo_core_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/atomic_file.h"
#include "core/error.h"
#include "ops/rope_params.h"
#include "run/olmo_core_yarn.h"
#include "run/run_config.h"
#include "testing/util.h"

namespace replica {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  return std::string(REPLICA_TEST_DATA) + "/olmo-core/" + name;
}
json Stage(const std::string& stage, const std::string& spelling = "sequence_mixer") {
  return json::parse(ReadFile(Fixture("OLMo-3-1025-7B-" + stage + "." + spelling + ".json")));
}
RunConfig Preset(const std::string& name, std::vector<std::string> sets = {}) {
  return RunConfig::Load(std::string(REPLICA_SOURCE_DIR) + "/configs/" + name, sets);
}
RunConfig FromImport(const OlmoCoreImport& im, std::vector<std::string> sets = {}) {
  return RunConfig::FromYaml(im.yaml, fs::current_path().string(), sets, "import");
}
std::vector<std::string> Paths(const std::vector<ImportNote>& notes) {
  std::vector<std::string> p;
  for (const auto& n : notes) p.push_back(n.json_path);
  return p;
}
bool Has(const std::vector<ImportNote>& notes, const std::string& path) {
  for (const auto& n : notes)
    if (n.json_path == path) return true;
  return false;
}

TEST(OlmoCoreImport, Pretrain1IsTheStage1Preset) {
  for (const char* spelling : {"sequence_mixer", "attention"}) {
    const OlmoCoreImport im = ImportOlmoCoreConfig(Stage("pretrain-1", spelling), "p1", {});
    ASSERT_TRUE(im.refused.empty()) << testing::PrintToString(Paths(im.refused));
    const RunConfig c = FromImport(im);
    EXPECT_EQ(TrajectoryDifferences(c, Preset("olmo3-7b-stage1.yaml")), std::vector<std::string>{})
        << spelling;
    EXPECT_EQ(c.train.max_steps, 597046);
    EXPECT_EQ(c.optim.schedule.t_max, 1192093);  // ceil(5e12 / 4,194,304)
    EXPECT_EQ(c.train.global_batch_instances, 512);
    EXPECT_EQ(c.optim.no_decay, std::vector<std::string>{"model.embed_tokens.weight"});
    EXPECT_TRUE(c.train.skip_step.enabled);
    EXPECT_EQ(c.train.skip_step.min_history, 64);
  }
}

TEST(OlmoCoreImport, BothBlockSpellingsGiveTheSameConfig) {
  for (const char* stage : {"pretrain-1", "pretrain-2", "midtrain"}) {
    const std::vector<std::string> sets = {"train.max_steps=1413814"};
    const RunConfig a =
        FromImport(ImportOlmoCoreConfig(Stage(stage, "sequence_mixer"), "a", {}), sets);
    const RunConfig b = FromImport(ImportOlmoCoreConfig(Stage(stage, "attention"), "b", {}), sets);
    EXPECT_EQ(a.Canonical(), b.Canonical()) << stage;
  }
}

TEST(OlmoCoreImport, Pretrain2AndMidtrainArePresets) {
  {
    const OlmoCoreImport im = ImportOlmoCoreConfig(Stage("pretrain-2"), "p2", {});
    ASSERT_TRUE(im.refused.empty()) << testing::PrintToString(Paths(im.refused));
    EXPECT_TRUE(im.needs_max_steps);  // hard_stop = 1 epoch of data that is not here
    const RunConfig c = FromImport(im, {"train.max_steps=1413814"});
    // The preset resumes stage 1's run directory; the import says the same through
    // trainer.load_trainer_state (init.reset_step false): the only trajectory key that differs.
    EXPECT_EQ(TrajectoryDifferences(c, Preset("olmo3-7b-stage1-part2.yaml")),
              std::vector<std::string>{"init.reset_step"});
    EXPECT_FALSE(c.init.reset_step);
    EXPECT_EQ(c.optim.schedule.warmup, 597046);
    EXPECT_EQ(c.optim.schedule.t_max, 1668931);
    EXPECT_TRUE(Has(im.unresolved, "trainer.load_path"));
  }
  {
    const OlmoCoreImport im = ImportOlmoCoreConfig(Stage("midtrain"), "mt", {});
    ASSERT_TRUE(im.refused.empty()) << testing::PrintToString(Paths(im.refused));
    const RunConfig c = FromImport(im);
    EXPECT_EQ(TrajectoryDifferences(c, Preset("olmo3-7b-stage2.yaml")), std::vector<std::string>{});
    EXPECT_EQ(c.train.max_steps, 47684);
    EXPECT_TRUE(c.init.reset_step);
    EXPECT_TRUE(c.init.load_optimizer);
  }
}

// float8 is refused; the packed dataset and its document lengths, the shuffled file order and
// the YaRN are mapped (below).
TEST(OlmoCoreImport, LongContextRefusalsNameTheirPaths) {
  for (const char* spelling : {"sequence_mixer", "attention"}) {
    const OlmoCoreImport im = ImportOlmoCoreConfig(Stage("long-context", spelling), "lc", {});
    EXPECT_FALSE(Has(im.refused, "dataset")) << testing::PrintToString(Paths(im.refused));
    EXPECT_FALSE(Has(im.refused, "dataset.generate_doc_lengths"));
    EXPECT_TRUE(Has(im.refused, "train_module.float8_config.enabled"));
    EXPECT_EQ(im.packing, "obfd");
    EXPECT_EQ(im.long_doc_strategy, "truncate");
    EXPECT_EQ(im.source_group_size, 8);
    EXPECT_TRUE(im.generate_doc_lengths);
    EXPECT_NE(im.yaml.find("  packing: obfd"), std::string::npos) << im.yaml;
    EXPECT_NE(im.yaml.find("  generate_doc_lengths: true"), std::string::npos) << im.yaml;
    EXPECT_FALSE(Has(im.refused, "dataset.source_permutation_seed"));
    EXPECT_EQ(im.source_permutation_seed, "123");
    EXPECT_NE(im.yaml.find("source_permutation_seed: \"123\""), std::string::npos) << im.yaml;
    // Context parallelism is mapped for the plan (replica computes each sequence on one rank).
    EXPECT_NE(im.yaml.find("context_parallel_degree: 8"), std::string::npos) << im.yaml;
    EXPECT_EQ(im.refused.size(), 1u) << testing::PrintToString(Paths(im.refused));
    const std::string err = test::ErrorOf([&] { RequireNoRefusals(im, "lc.json"); });
    EXPECT_NE(err.find("train_module.float8_config.enabled"), std::string::npos) << err;
    EXPECT_EQ(err.find("rope.scaling"), std::string::npos) << err;
  }
}

// The released long-context Olmo 3 7B config.json (transformers' reading of it: ModelConfig).
ModelConfig ReleasedLongContextModel() {
  json hf = json::parse(ReadFile(std::string(REPLICA_SOURCE_DIR) + "/configs/olmo3-7b.json"));
  hf["max_position_embeddings"] = 65536;
  hf["rope_scaling"] = {{"rope_type", "yarn"},       {"factor", 8.0},
                        {"original_max_position_embeddings", 8192},
                        {"beta_fast", 32.0},         {"beta_slow", 1.0},
                        {"attention_factor", 1.2079441541679836}};
  return ModelConfig::FromHfJson(hf, "released long-context config.json");
}

// OLMo-core's YaRNRoPEScalingConfig on block_overrides.{3,7,...,31} is the released model's YaRN
// on its full-attention layers, in both block spellings, with the JSON path beside each key.
TEST(OlmoCoreImport, LongContextYarnIsTheReleasedConfigs) {
  const ModelConfig released = ReleasedLongContextModel();
  ASSERT_EQ(released.rope_full.type, RopeType::kYarn);
  for (const char* spelling : {"sequence_mixer", "attention"}) {
    const OlmoCoreImport im = ImportOlmoCoreConfig(Stage("long-context", spelling), "lc", {});
    const RunConfig c = FromImport(im);
    const ModelConfig& m = c.model;
    EXPECT_TRUE(m.rope_full.SameMath(released.rope_full)) << spelling;
    EXPECT_TRUE(m.rope_sliding.SameMath(released.rope_sliding)) << spelling;
    EXPECT_EQ(m.rope_sliding.type, RopeType::kDefault);
    EXPECT_EQ(m.rope_full.attention_factor, 1.2079441541679836);  // 0.1 ln 8 + 1, bit for bit
    EXPECT_EQ(m.rope_full.factor, 8.0);
    EXPECT_EQ(m.rope_full.original_max_position_embeddings, 8192);
    EXPECT_EQ(m.rope_full.beta_fast, 32.0);
    EXPECT_EQ(m.rope_full.beta_slow, 1.0);
    EXPECT_TRUE(m.rope_full.truncate);
    EXPECT_EQ(m.max_position_embeddings, 65536);
    ASSERT_EQ(m.num_layers, 32);
    for (int64_t l = 0; l < 32; ++l) {
      EXPECT_EQ(m.layer_types[l] == AttentionType::kFull, l % 4 == 3) << l;
      EXPECT_TRUE(m.RopeFor(l).SameMath(released.RopeFor(l))) << l;
      EXPECT_EQ(RopeInvFreq(m.RopeFor(l), m.head_dim), RopeInvFreq(released.RopeFor(l), 128)) << l;
    }
    // Everything else is the midtrain model (the stage it continues from).
    ModelConfig plain = m;
    plain.rope_full = plain.rope_sliding;
    plain.rope_spelling = RopeSpelling::kLegacy;
    plain.max_position_embeddings = 8192;
    EXPECT_EQ(plain.ToHfJson(), FromImport(ImportOlmoCoreConfig(Stage("midtrain"), "mt", {}))
                                    .model.ToHfJson());
    const std::string at = std::string("model.block_overrides.{3,7,11,15,19,23,27,31}.") +
                           spelling + ".rope.scaling";
    for (const char* line :
         {"factor: 8", "original_max_position_embeddings: 8192", "beta_fast: 32", "beta_slow: 1",
          "attention_factor: 1.2079441541679836"}) {
      const size_t pos = im.yaml.find(std::string("    ") + line);
      ASSERT_NE(pos, std::string::npos) << line << "\n" << im.yaml;
      const std::string rest = im.yaml.substr(pos, im.yaml.find('\n', pos) - pos);
      EXPECT_NE(rest.find(at + "."), std::string::npos) << rest;
    }
    EXPECT_NE(im.yaml.find("old_context_len"), std::string::npos);
  }
}

// OLMo-core's ramp (compute_scaled_inv_freq, written out here in double) is transformers' for the
// 7B's head dim, and the importer refuses where they part (high clamped at d/2 - 1 vs d - 1).
TEST(OlmoCoreImport, OlmoCoreYarnRampIsTransformersRamp) {
  auto olmo_core_inv_freq = [](const OlmoCoreYarn& y, double theta, int64_t d) {
    const double pi = 3.141592653589793238462643383279502884;
    auto dim_from_rot = [&](double n) {
      return d * std::log(y.old_context_len / (n * 2.0 * pi)) / (2.0 * std::log(theta));
    };
    const int64_t half = d / 2;
    const double low = std::max(std::floor(dim_from_rot(y.beta_fast)), 0.0);
    const double high = std::min(std::ceil(dim_from_rot(y.beta_slow)), double(half - 1));
    const double span = std::max(high - low, 1e-3);
    std::vector<double> out;
    for (int64_t j = 0; j < half; ++j) {
      const double base = 1.0 / std::pow(theta, double(2 * j) / double(d));
      const double ramp = std::clamp((j - low) / span, 0.0, 1.0);
      out.push_back(base / y.factor * ramp + base * (1.0 - ramp));
    }
    return out;
  };
  const OlmoCoreYarn released{8.0, 32, 1, 8192};
  EXPECT_EQ(OlmoCoreYarnDiffers(released, 500000.0, 128), "");
  EXPECT_EQ(RopeInvFreq(OlmoCoreYarnRope(released, 500000.0), 128),
            olmo_core_inv_freq(released, 500000.0, 128));
  EXPECT_EQ(OlmoCoreYarnAttentionFactor(released), 1.2079441541679836);
  // A context so long that ceil(dim(beta_slow)) = 66 > 63: OLMo-core clamps, transformers not.
  const OlmoCoreYarn huge{8.0, 32, 1, 4000000};
  EXPECT_NE(OlmoCoreYarnDiffers(huge, 500000.0, 128), "");
  EXPECT_NE(RopeInvFreq(OlmoCoreYarnRope(huge, 500000.0), 128),
            olmo_core_inv_freq(huge, 500000.0, 128));
}

TEST(OlmoCoreImport, YarnThatReplicaCannotExpressIsRefusedByPath) {
  const std::string o = "model.block_overrides.";
  const std::string sc = ".sequence_mixer.rope.scaling";
  struct Case {
    std::function<void(json&)> edit;
    std::string path, text;
  };
  auto scaling = [](json& j, int layer) -> json& {
    return j["model"]["block_overrides"][std::to_string(layer)]["sequence_mixer"]["rope"]
            ["scaling"];
  };
  const std::vector<Case> cases = {
      // a sliding-window layer scaled too
      {[](json& j) { j["model"]["block_overrides"]["2"] = j["model"]["block_overrides"]["3"]; },
       o + "2" + sc, "sliding-window layer"},
      // a full-attention layer left out
      {[](json& j) { j["model"]["block_overrides"].erase("31"); }, o + "31",
       "full-attention layer without"},
      // overrides that disagree
      {[&](json& j) { scaling(j, 7)["factor"] = 4; }, o + "7" + sc, "differs from"},
      {[&](json& j) { scaling(j, 11)["beta_fast"] = 16; }, o + "11" + sc, "differs from"},
      // fields replica cannot take
      {[&](json& j) { scaling(j, 3)["mscale"] = 1.0; }, o + "3" + sc + ".mscale", "unknown field"},
      {[&](json& j) { scaling(j, 3)["factor"] = 0.5; }, o + "3" + sc + ".factor", ">= 1"},
      {[&](json& j) { scaling(j, 3)["beta_slow"] = 0; }, o + "3" + sc + ".beta_slow", "positive"},
      {[&](json& j) { scaling(j, 3)["attention_rescale_factor"] = 1.0; },
       o + "3" + sc + ".attention_rescale_factor", "differs from 0.1 * ln(factor) + 1"},
      // other scaling classes
      {[&](json& j) { scaling(j, 3)["_CLASS_"] = "olmo_core.nn.rope.PIRoPEScalingConfig"; },
       o + "3" + sc, "plain or YaRN"},
      {[&](json& j) { scaling(j, 3)["_CLASS_"] = "my_lab.rope.Scaling"; },
       o + "3" + sc + "._CLASS_", "unknown class"},
      // where OLMo-core's ramp is not transformers'
      {[&](json& j) {
         for (int l = 3; l < 32; l += 4) scaling(j, l)["old_context_len"] = 4000000;
       },
       o + "3" + sc, "head_dim/2 - 1"},
      // YaRN on every layer (with_rope_scaling(full_attn_layers_only=False))
      {[](json& j) {
         j["model"]["block"]["sequence_mixer"]["rope"]["scaling"] =
             j["model"]["block_overrides"]["3"]["sequence_mixer"]["rope"]["scaling"];
         j["model"].erase("block_overrides");
       },
       "model.block" + sc, "sliding-window layer"},
  };
  for (const Case& c : cases) {
    json j = Stage("long-context");
    c.edit(j);
    const OlmoCoreImport im = ImportOlmoCoreConfig(j, "edited", {});
    bool found = false;
    for (const ImportNote& n : im.refused)
      if (n.json_path == c.path) {
        found = true;
        EXPECT_NE(n.reason.find(c.text), std::string::npos) << c.path << ": " << n.reason;
      }
    EXPECT_TRUE(found) << c.path << " not in " << testing::PrintToString(Paths(im.refused));
    EXPECT_EQ(im.yaml.find("  rope_scaling:\n"), std::string::npos) << c.path;
  }
  // The field older OLMo-core versions wrote, with the value OLMo-core computes: ignored.
  json j = Stage("long-context");
  for (int l = 3; l < 32; l += 4) scaling(j, l)["attention_rescale_factor"] = 1.2079441541679836;
  const OlmoCoreImport im = ImportOlmoCoreConfig(j, "edited", {});
  EXPECT_TRUE(Has(im.ignored, o + "3" + sc + ".attention_rescale_factor"));
  EXPECT_EQ(im.refused.size(), 1u) << testing::PrintToString(Paths(im.refused));
  // Absent fields take YaRNRoPEScalingConfig's defaults (8, 32, 1, 8192), and say so.
  json d = Stage("long-context");
  for (int l = 3; l < 32; l += 4)
    scaling(d, l) = {{"_CLASS_", "olmo_core.nn.rope.YaRNRoPEScalingConfig"}};
  const OlmoCoreImport dim = ImportOlmoCoreConfig(d, "defaults", {});
  EXPECT_TRUE(FromImport(dim).model.rope_full.SameMath(ReleasedLongContextModel().rope_full));
  EXPECT_NE(dim.yaml.find("YaRNRoPEScalingConfig default"), std::string::npos);
}

TEST(OlmoCoreImport, UnsupportedFieldsAndUnknownClassesAreRefused) {
  struct Case {
    std::function<void(json&)> edit;
    std::string path;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["model"]["block"]["sequence_mixer"]["clip_qkv"] = 8.0; },
       "model.block.sequence_mixer.clip_qkv"},
      {[](json& j) { j["model"]["block"]["sequence_mixer"]["qk_norm"] = nullptr; },
       "model.block.sequence_mixer.qk_norm"},
      {[](json& j) { j["model"]["block"]["name"] = "default"; }, "model.block.name"},
      {[](json& j) { j["model"]["block"]["attention"] = j["model"]["block"]["sequence_mixer"]; },
       "model.block.attention"},
      {[](json& j) { j["model"]["frobnicate"] = 1; }, "model.frobnicate"},
      {[](json& j) { j["train_module"]["scheduler"]["_CLASS_"] = "my_lab.optim.FancySchedule"; },
       "train_module.scheduler._CLASS_"},
      {[](json& j) { j["train_module"]["scheduler"]["units"] = "tokens"; },
       "train_module.scheduler.units"},
      {[](json& j) { j["train_module"]["float8_config"]["enabled"] = true; },
       "train_module.float8_config.enabled"},
      {[](json& j) { j["dataset"]["max_target_sequence_length"] = 16384; },
       "dataset.max_target_sequence_length"},
      {[](json& j) {
         j["train_module"]["optim"]["group_overrides"][0]["opts"] = {{"lr", 0.1}};
       },
       "train_module.optim.group_overrides[0].opts"},
      {[](json& j) {
         j["trainer"]["callbacks"]["mine"] = {{"_CLASS_", "my_lab.Callback"}};
       },
       "trainer.callbacks.mine._CLASS_"},
      {[](json& j) { j["model"]["_CLASS_"] = "olmo_core.data.tokenizer.TokenizerConfig"; },
       "model._CLASS_"},
      {[](json& j) { j["data_loader"]["global_batch_size"] = 8192 * 512 + 1; },
       "data_loader.global_batch_size"},
      {[](json& j) { j["data_loader"]["seed"] = -1; }, "data_loader.seed"},
      {[](json& j) {
         j["dataset"]["tokenizer"]["vocab_size"] = 256;
         j["dataset"].erase("dtype");
       },
       "dataset.tokenizer.vocab_size"},
  };
  for (const Case& c : cases) {
    json j = Stage("pretrain-1");
    c.edit(j);
    const OlmoCoreImport im = ImportOlmoCoreConfig(j, "edited", {});
    EXPECT_TRUE(Has(im.refused, c.path))
        << c.path << " not in " << testing::PrintToString(Paths(im.refused));
  }
}

// generate_doc_lengths on OLMo-core's plain NumpyFSLDatasetConfig maps to data.generate_doc_lengths
// on plain instances (data.packing none); the YAML loads and validates, and false stays the
// default (no line written).
TEST(OlmoCoreImport, PlainDatasetDocumentLengthsAreMapped) {
  for (const char* spelling : {"sequence_mixer", "attention"}) {
    json j = Stage("pretrain-1", spelling);
    ASSERT_EQ(j["dataset"]["_CLASS_"], "olmo_core.data.numpy_dataset.NumpyFSLDatasetConfig");
    j["dataset"]["generate_doc_lengths"] = true;
    const OlmoCoreImport im = ImportOlmoCoreConfig(j, "p1-docs", {});
    EXPECT_TRUE(im.refused.empty()) << testing::PrintToString(Paths(im.refused));
    EXPECT_TRUE(im.generate_doc_lengths);
    EXPECT_EQ(im.packing, "none");
    EXPECT_NE(im.yaml.find("  generate_doc_lengths: true"), std::string::npos) << im.yaml;
    EXPECT_EQ(im.yaml.find("packing: obfd"), std::string::npos) << im.yaml;
    const RunConfig c = FromImport(im);
    EXPECT_TRUE(c.data.generate_doc_lengths);
    EXPECT_EQ(c.data.packing, "none");
    EXPECT_EQ(c.model.eos_token_id, im.eos_token_id);
    // The only trajectory difference from stage 1 is the document mask.
    EXPECT_EQ(TrajectoryDifferences(c, Preset("olmo3-7b-stage1.yaml")),
              std::vector<std::string>{"data.generate_doc_lengths"});

    j["dataset"]["generate_doc_lengths"] = false;
    const OlmoCoreImport off = ImportOlmoCoreConfig(j, "p1", {});
    EXPECT_TRUE(off.refused.empty()) << testing::PrintToString(Paths(off.refused));
    EXPECT_FALSE(off.generate_doc_lengths);
    EXPECT_EQ(off.yaml.find("generate_doc_lengths"), std::string::npos) << off.yaml;
  }
}

json Official(const std::string& stage) {
  return json::parse(ReadFile(Fixture("official/OLMo-3-1025-7B-" + stage + ".json")));
}

// Fields accepted only at the values that change nothing: accepted there (and nothing refused),
// refused with the JSON path at any other value.
TEST(OlmoCoreImport, ValueBoundFieldsAreAcceptedOnlyWhereTheyChangeNothing) {
  struct Case {
    std::string path;  // JSON path, dot-separated
    json neutral, other;
  };
  const std::vector<Case> cases = {
      {"model.block.sequence_mixer.rope.partial_rotary_factor", 1.0, 0.5},
      {"model.tie_word_embeddings", false, true},
      {"model.block.sequence_mixer.scalable_softmax", false, true},
      {"train_module.dp_config.reduce_dtype", "float32", "bfloat16"},
      {"train_module.dp_config.accumulate_grads_in_fp32", true, false},
      {"train_module.optim.step_increment_bugfix", true, false},
      {"model.block.sequence_mixer.mxfp8_projections", false, true},
  };
  for (const Case& c : cases) {
    for (const json& v : {c.neutral, c.other}) {
      json j = Official("pretrain-1");
      json* at = &j;
      for (size_t a = 0, b; a <= c.path.size(); a = b + 1) {
        b = c.path.find('.', a);
        if (b == std::string::npos) b = c.path.size();
        at = &(*at)[c.path.substr(a, b - a)];
      }
      *at = v;
      const OlmoCoreImport im = ImportOlmoCoreConfig(j, "edited", {});
      if (v == c.neutral) {
        EXPECT_TRUE(im.refused.empty()) << c.path << " = " << v.dump() << ": "
                                        << testing::PrintToString(Paths(im.refused));
      } else {
        EXPECT_TRUE(Has(im.refused, c.path)) << c.path << " = " << v.dump() << ": "
                                             << testing::PrintToString(Paths(im.refused));
      }
    }
  }
}

// The official configs as OLMo-core 3.0.0 writes them: nothing unknown, the recipe's precision
// mapped, the field of a newer OLMo-core refused with its path.
TEST(OlmoCoreImport, OfficialConfigsImportWithTheirPrecision) {
  for (const char* stage : {"pretrain-1", "pretrain-2", "midtrain"}) {
    const OlmoCoreImport im = ImportOlmoCoreConfig(Official(stage), stage, {});
    EXPECT_TRUE(im.refused.empty()) << stage << testing::PrintToString(Paths(im.refused));
    EXPECT_EQ(FromImport(im, {"train.max_steps=10"}).compute.precision, "bf16-fsdp") << stage;
  }
  json j = Official("pretrain-1");
  j["model"]["block"]["sequence_mixer"]["rope"]["frequency_warp"] = 2.0;  // not an OLMo-core field
  const OlmoCoreImport im = ImportOlmoCoreConfig(j, "newer.json", {});
  ASSERT_EQ(im.refused.size(), 1u) << testing::PrintToString(Paths(im.refused));
  EXPECT_EQ(im.refused[0].json_path, "model.block.sequence_mixer.rope.frequency_warp");
  EXPECT_NE(im.refused[0].reason.find("unknown field of olmo_core.nn.rope.RoPEConfig"),
            std::string::npos);
}

TEST(OlmoCoreImport, YamlLoadsToTheSameConfigAsTheJson) {
  const test::TempDir tmp("olmocore");
  const std::string dir = tmp.str();
  const std::string json_path = dir + "/config.json";
  WriteFileAtomic(json_path, Stage("midtrain").dump());
  const RunConfig from_json = LoadRunConfig(json_path, {}, {});
  const OlmoCoreImport im = ImportOlmoCoreConfig(Stage("midtrain"), json_path, {});
  WriteFileAtomic(dir + "/sub.yaml", im.yaml);
  const RunConfig from_yaml = LoadRunConfig(dir + "/sub.yaml", {}, {});
  EXPECT_EQ(from_json.Canonical(), from_yaml.Canonical());
  EXPECT_NE(im.yaml.find("lr: 0.00020712352850360292"), std::string::npos) << im.yaml;
  EXPECT_NE(im.yaml.find("# train_module.optim.lr"), std::string::npos);
  // For training, what is not local is an error naming it (and a --set of that key lifts it).
  OlmoCoreImportOptions train;
  train.for_training = true;
  const std::string err = test::ErrorOf([&] { LoadRunConfig(json_path, {}, train); });
  EXPECT_NE(err.find("trainer.load_path"), std::string::npos) << err;
  EXPECT_NE(err.find("dataset.mix"), std::string::npos) << err;
  // Giving the keys it would fill lifts it.
  EXPECT_EQ(test::ErrorOf([&] {
              LoadRunConfig(json_path, {"data.paths=/x.npy", "init.from_checkpoint=/ckpt"}, train);
            }),
            "<no error>");
}

TEST(OlmoCoreImport, MixFilesPathMapsAndDataPaths) {
  const test::TempDir tmp("olmocore-mix");
  const std::string dir = tmp.str();
  fs::create_directories(dir + "/mixes");
  WriteFileAtomic(dir + "/mixes/OLMo-mix-0625-official.txt",
                  "# comment\ncc,preprocessed/x/{TOKENIZER}/a/000000.npy\n\n"
                  "cc,preprocessed/x/{TOKENIZER}/a/000001.npy\n");
  OlmoCoreImportOptions o;
  o.mix_dir = dir + "/mixes";
  o.path_map = {"/weka/oe-training-default/ai2-llm=/data/ai2"};
  const OlmoCoreImport im = ImportOlmoCoreConfig(Stage("pretrain-1"), "p1", o);
  EXPECT_EQ(im.data_paths, (std::vector<std::string>{
                               "/data/ai2/preprocessed/x/allenai/dolma3-tokenizer/a/000000.npy",
                               "/data/ai2/preprocessed/x/allenai/dolma3-tokenizer/a/000001.npy"}));
  EXPECT_TRUE(im.unresolved.empty());
  // data_paths.txt replaces the mix, in its order.
  WriteFileAtomic(dir + "/data_paths.txt", "s3://ai2-llm/b.npy\ns3://ai2-llm/a.npy\n");
  o.data_paths_file = dir + "/data_paths.txt";
  o.path_map = {"s3://ai2-llm=/local"};
  const OlmoCoreImport im2 = ImportOlmoCoreConfig(Stage("pretrain-1"), "p1", o);
  EXPECT_EQ(im2.data_paths, (std::vector<std::string>{"/local/b.npy", "/local/a.npy"}));
  // Unmapped remote paths are unresolved (named), not silently dropped.
  o.path_map.clear();
  const OlmoCoreImport im3 = ImportOlmoCoreConfig(Stage("pretrain-1"), "p1", o);
  EXPECT_TRUE(im3.data_paths.empty());
  EXPECT_FALSE(im3.unresolved.empty());
  // A mix line without {TOKENIZER} is an error naming file:line.
  WriteFileAtomic(dir + "/mixes/OLMo-mix-0625-official.txt", "cc,preprocessed/a.npy\n");
  o.data_paths_file.clear();
  const std::string err =
      test::ErrorOf([&] { ImportOlmoCoreConfig(Stage("pretrain-1"), "p1", o); });
  EXPECT_NE(err.find("OLMo-mix-0625-official.txt:1"), std::string::npos) << err;
}

}  // namespace
}  // namespace replica

// OLMo-core config.json import (run/olmo_core_config.h): the four official Olmo 3 stages in both
// block spellings map to replica's own presets (same trajectory keys), refusals name their JSON
// path, unknown classes are refused, and the YAML it writes loads to the same config.
#include "run/olmo_core_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
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

TEST(OlmoCoreImport, LongContextRefusalsNameTheirPaths) {
  for (const char* spelling : {"sequence_mixer", "attention"}) {
    const OlmoCoreImport im = ImportOlmoCoreConfig(Stage("long-context", spelling), "lc", {});
    const std::string mixer = spelling;
    for (int layer = 3; layer < 32; layer += 4)
      EXPECT_TRUE(Has(im.refused, "model.block_overrides." + std::to_string(layer) + "." + mixer +
                                      ".rope.scaling"))
          << layer;
    EXPECT_TRUE(Has(im.refused, "dataset")) << testing::PrintToString(Paths(im.refused));
    EXPECT_TRUE(Has(im.refused, "dataset.generate_doc_lengths"));
    EXPECT_TRUE(Has(im.refused, "train_module.float8_config.enabled"));
    EXPECT_TRUE(Has(im.ignored, "train_module.cp_config"));
    EXPECT_EQ(im.refused.size(), 11u) << testing::PrintToString(Paths(im.refused));
    EXPECT_NE(test::ErrorOf([&] {
                RequireNoRefusals(im, "lc.json");
              }).find("model.block_overrides.31." + mixer + ".rope.scaling"),
              std::string::npos);
  }
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
      {[](json& j) { j["dataset"]["generate_doc_lengths"] = true; },
       "dataset.generate_doc_lengths"},
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
  };
  for (const Case& c : cases) {
    json j = Stage("pretrain-1");
    c.edit(j);
    const OlmoCoreImport im = ImportOlmoCoreConfig(j, "edited", {});
    EXPECT_TRUE(Has(im.refused, c.path))
        << c.path << " not in " << testing::PrintToString(Paths(im.refused));
  }
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

// RunConfig: presets, --set overrides, refusal of unknown keys and wrong types by name, canonical
// form round trip and hashes.
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/util.h"
#include "core/error.h"
#include "run/run_config.h"

namespace replica {
namespace {

const std::string kConfigs = test::ConfigsDir();
const char* const kTiny = test::kTinyRunConfig;

using replica::test::ErrorOf;

TEST(RunConfig, Stage1PresetCarriesTheRecipe) {
  const RunConfig c = RunConfig::Load(kConfigs + "olmo3-7b-stage1.yaml");
  EXPECT_EQ(c.model.NumParams(), 7298617344);
  EXPECT_EQ(c.data.seq_len, 8192);
  EXPECT_EQ(c.data.seed, 34521);
  EXPECT_EQ(c.train.global_batch_instances, 512);
  EXPECT_EQ(c.TokensPerStep(), 4194304);
  EXPECT_EQ(c.train.z_loss_multiplier, 1e-5);
  EXPECT_EQ(c.optim.lr, 3e-4);
  EXPECT_EQ(c.optim.schedule.type, ScheduleType::kCosine);
  EXPECT_EQ(c.optim.schedule.warmup, 2000);
  EXPECT_EQ(c.optim.schedule.t_max, 1192093);
  EXPECT_EQ(c.optim.schedule.alpha_f, 0.1);
  EXPECT_EQ(c.optim.betas[1], 0.95);
  EXPECT_EQ(c.optim.no_decay, std::vector<std::string>{"model.embed_tokens.weight"});
  EXPECT_TRUE(c.train.skip_step.enabled);

  const RunConfig s2 = RunConfig::Load(kConfigs + "olmo3-7b-stage2.yaml");
  EXPECT_EQ(s2.optim.lr, 2.0712352850360292e-4);
  EXPECT_EQ(s2.optim.schedule.type, ScheduleType::kLinear);
  EXPECT_EQ(s2.optim.schedule.t_max, 47684);
  EXPECT_EQ(s2.optim.schedule.alpha_f, 0.0);
  EXPECT_EQ(s2.data.seed, 1337);
  EXPECT_EQ(s2.TokensPerStep(), 2097152);
  EXPECT_TRUE(s2.init.reset_step);

  const RunConfig p2 = RunConfig::Load(kConfigs + "olmo3-7b-stage1-part2.yaml");
  EXPECT_EQ(p2.optim.schedule.type, ScheduleType::kCosineContinuation);
  EXPECT_EQ(p2.optim.schedule.warmup, 597046);
  EXPECT_EQ(p2.TrajectoryHash() == c.TrajectoryHash(), false);
}

TEST(RunConfig, DemoPresetLoads) {
  const RunConfig c = RunConfig::Load(kConfigs + "demo.yaml");
  EXPECT_EQ(c.model.vocab_size, 100352);
  EXPECT_GT(c.train.max_steps, 0);
}

// The demo's token files are found where scripts/demo writes them (<repository>/demo-data), so the
// preset works with any build folder.
TEST(RunConfig, DemoPresetReadsTheRepositoryDemoData) {
  const RunConfig c = RunConfig::Load(kConfigs + "demo.yaml");
  const std::string root =
      std::filesystem::path(REPLICA_SOURCE_DIR).lexically_normal().string();
  ASSERT_EQ(c.data.paths.size(), 2u);
  EXPECT_EQ(c.data.paths[0], (std::filesystem::path(root) / "demo-data/sotu.npy").string());
  EXPECT_EQ(c.data.paths[1], (std::filesystem::path(root) / "demo-data/moby_dick.npy").string());
}

// A value given with --set that fails validation is blamed on that --set, not on the YAML file.
TEST(RunConfig, ValidationErrorsNameWhereTheValueCameFrom) {
  auto err = [](std::vector<std::string> sets) {
    return ErrorOf([&] { RunConfig::FromYaml(kTiny, "/b", sets, "x.yaml"); });
  };
  std::string e = err({"optim.eps=-1"});
  EXPECT_NE(e.find("--set optim.eps: config key 'optim.eps'"), std::string::npos) << e;
  EXPECT_EQ(e.find("x.yaml"), std::string::npos) << e;
  e = err({"checkpoint.keep=0"});
  EXPECT_NE(e.find("--set checkpoint.keep: "), std::string::npos) << e;
  e = err({"train.micro_batch_instances=3"});
  EXPECT_NE(e.find("--set train.micro_batch_instances: "), std::string::npos) << e;
  // numpy's PCG64 (OLMo-core's shuffle) refuses negative seeds; so does the config.
  e = err({"data.seed=-3"});
  EXPECT_NE(e.find("--set data.seed: config key 'data.seed': expected >= 0, got -3"),
            std::string::npos)
      << e;
  // The same value in the file is the file's.
  e = ErrorOf([] {
    RunConfig::FromYaml(std::string(kTiny) + "checkpoint: {keep: 0}\n", "/b", {}, "x.yaml");
  });
  EXPECT_NE(e.find("x.yaml: config key 'checkpoint.keep'"), std::string::npos) << e;
}

// Extending a finished run (more steps, t_max defaulting to max_steps) is refused naming
// optim.schedule.t_max with both values and the --set that keeps the run's schedule.
TEST(RunConfig, TrajectoryDifferencesNameTheValueToPin) {
  const RunConfig run = RunConfig::FromYaml(kTiny, "/b");
  const RunConfig longer = RunConfig::FromYaml(kTiny, "/b", {"train.max_steps=20"});
  const std::string d = DescribeTrajectoryDifferences(run, longer);
  EXPECT_NE(d.find("optim.schedule.t_max (the run has 10, this config 20; pin it with --set "
                   "optim.schedule.t_max=10)"),
            std::string::npos)
      << d;
  const RunConfig pinned =
      RunConfig::FromYaml(kTiny, "/b", {"train.max_steps=20", "optim.schedule.t_max=10"});
  EXPECT_EQ(DescribeTrajectoryDifferences(run, pinned), "");
  const RunConfig other_lr = RunConfig::FromYaml(kTiny, "/b", {"optim.lr=2e-3"});
  EXPECT_NE(DescribeTrajectoryDifferences(run, other_lr).find("optim.lr (the run has 0.001, this "
                                                              "config 0.002)"),
            std::string::npos)
      << DescribeTrajectoryDifferences(run, other_lr);
}

// Found by fuzz/run_config (corpus file fuzz/corpus/run_config/complex-key): YAML's "? key"
// syntax makes a mapping a key; it is refused as an Error naming the line, not a yaml-cpp
// conversion exception.
TEST(RunConfig, NonScalarKeysAreRefusedWithTheirLine) {
  std::string e = ErrorOf([] {
    RunConfig::FromYaml(std::string(kTiny) + "checkpoint:\n? {a: 1}: 2\n", "/b", {}, "x.yaml");
  });
  EXPECT_NE(e.find("x.yaml: line "), std::string::npos) << e;
  EXPECT_NE(e.find("a config key must be a plain name, got a mapping"), std::string::npos) << e;
  e = ErrorOf([] { RunConfig::FromYaml("? [a, b]\n: 1\n", "/b", {}, "y.yaml"); });
  EXPECT_NE(e.find("got a sequence (in the top level)"), std::string::npos) << e;
}

TEST(RunConfig, OverridesWithDesignKeys) {
  const std::string base = "/base";
  const RunConfig c = RunConfig::FromYaml(
      kTiny, base,
      {"train.max_steps=40", "train.global_batch_instances=8", "train.micro_batch_instances=4",
       "data.seq_len=16", "data.seed=7", "optim.lr=2e-3", "checkpoint.interval=5",
       "checkpoint.keep=3", "eval.interval=10", "fault.kill_at_step=17",
       "model.num_hidden_layers=8", "optim.betas=[0.8, 0.9]", "data.paths=x.npy"});
  EXPECT_EQ(c.train.max_steps, 40);
  EXPECT_EQ(c.train.global_batch_instances, 8);
  EXPECT_EQ(c.NumMicroBatches(), 2);
  EXPECT_EQ(c.data.seq_len, 16);
  EXPECT_EQ(c.data.seed, 7);
  EXPECT_EQ(c.optim.lr, 2e-3);
  EXPECT_EQ(c.checkpoint.interval, 5);
  EXPECT_EQ(c.checkpoint.keep, 3);
  EXPECT_EQ(c.eval.interval, 10);
  EXPECT_EQ(c.fault.kill_at_step, 17);
  EXPECT_EQ(c.model.num_layers, 8);
  EXPECT_EQ(c.model.layer_types.size(), 8u);  // default pattern for the new depth
  EXPECT_EQ(c.optim.betas, (std::vector<double>{0.8, 0.9}));
  EXPECT_EQ(c.optim.schedule.t_max, 40);  // defaults to max_steps
  // --set paths resolve against the current directory, file paths against the file's.
  EXPECT_EQ(c.data.paths,
            std::vector<std::string>{(std::filesystem::current_path() / "x.npy").string()});
  const RunConfig d = RunConfig::FromYaml(kTiny, base);
  EXPECT_EQ(d.data.paths, (std::vector<std::string>{"/base/tokens/a.npy", "/base/tokens/*.npy"}));
}

TEST(RunConfig, UnknownKeysAndWrongTypesAreNamed) {
  auto err = [](const std::string& text, std::vector<std::string> sets = {}) {
    return ErrorOf([&] { RunConfig::FromYaml(text, "/b", sets, "x.yaml"); });
  };
  std::string e = err(std::string(kTiny) + "train2: {}\n");
  EXPECT_NE(e.find("unknown config key 'train2'"), std::string::npos) << e;
  e = err(kTiny, {"optim.schedule.warmpu=3"});
  EXPECT_NE(e.find("'optim.schedule.warmpu'"), std::string::npos) << e;
  EXPECT_NE(e.find("warmup"), std::string::npos) << e;  // lists the known keys
  e = err(std::string(kTiny) + "checkpoint: {every: 3}\n");
  EXPECT_NE(e.find("'checkpoint.every'"), std::string::npos) << e;
  e = err(kTiny, {"model.hidden=3"});
  EXPECT_NE(e.find("'model.hidden'"), std::string::npos) << e;
  e = err(kTiny, {"train.max_steps=1.5"});
  EXPECT_NE(e.find("'train.max_steps': expected an integer, got '1.5'"), std::string::npos) << e;
  e = err(kTiny, {"optim.lr=fast"});
  EXPECT_NE(e.find("'optim.lr': expected a number, got 'fast'"), std::string::npos) << e;
  e = err(kTiny, {"train.skip_step.enabled=maybe"});
  EXPECT_NE(e.find("'train.skip_step.enabled'"), std::string::npos) << e;
  e = err(kTiny, {"train=3"});
  EXPECT_NE(e.find("section"), std::string::npos) << e;
  e = err(kTiny, {"train.max_steps"});
  EXPECT_NE(e.find("key=value"), std::string::npos) << e;
  e = err(kTiny, {"train.micro_batch_instances=3"});
  EXPECT_NE(e.find("'train.micro_batch_instances'"), std::string::npos) << e;
  e = err(kTiny, {"optim.schedule.type=cosin"});
  EXPECT_NE(e.find("'optim.schedule.type'"), std::string::npos) << e;
  e = err("data: {seq_len: 3}\n");
  EXPECT_NE(e.find("section 'model' is missing"), std::string::npos) << e;
  e = err("model: [1, 2]\n");
  EXPECT_NE(e.find("'model'"), std::string::npos) << e;
  e = err("a: [\n");
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
  e = err(kTiny, {"model.num_attention_heads=5"});
  EXPECT_NE(e.find("num_attention_heads"), std::string::npos) << e;
}

TEST(RunConfig, Mixture) {
  const std::string base = std::string(kTiny).substr(0, std::string(kTiny).find("data:"));
  const std::string text = base + R"(
data:
  seq_len: 32
  mixture_tokens: 100000
  mixture_seed: 5
  mixture:
    - {name: web, paths: [web/*.npy], weight: 3}
    - {name: books, paths: [b.npy], weight: 1, max_repetition: 2}
train: {max_steps: 10, global_batch_instances: 4}
optim: {lr: 1.0e-3}
)";
  const RunConfig c = RunConfig::FromYaml(text, "/d");
  ASSERT_EQ(c.data.mixture.size(), 2u);
  EXPECT_EQ(c.data.mixture[0].paths, std::vector<std::string>{"/d/web/*.npy"});
  EXPECT_EQ(c.data.mixture[1].max_repetition, 2.0);
  EXPECT_EQ(c.data.mixture_tokens, 100000);
  const RunConfig back = RunConfig::FromYaml(c.Canonical(), "/x");
  EXPECT_EQ(back.Canonical(), c.Canonical());
  auto err = [&](const std::string& t) {
    return ErrorOf([&] { RunConfig::FromYaml(t, "/d"); });
  };
  std::string e = err(std::string(text).replace(text.find("weight: 1,"), 10, "wieght: 1,"));
  EXPECT_NE(e.find("'data.mixture[1].wieght'"), std::string::npos) << e;
  e = err(std::string(text).replace(text.find("weight: 3"), 9, "weight: 0"));
  EXPECT_NE(e.find("'data.mixture[0].weight'"), std::string::npos) << e;
  e = err(text + "\n");
  EXPECT_EQ(e, "<no error>");
  e = ErrorOf([&] { RunConfig::FromYaml(text, "/d", {"data.paths=x.npy"}); });
  EXPECT_NE(e.find("not both"), std::string::npos) << e;
}

TEST(RunConfig, CanonicalRoundTripAndHashes) {
  const RunConfig a = RunConfig::FromYaml(kTiny, "/b");
  const std::string canon = a.Canonical();
  const RunConfig b = RunConfig::FromYaml(canon, "/elsewhere");
  EXPECT_EQ(b.Canonical(), canon);
  EXPECT_EQ(b.Hash(), a.Hash());
  EXPECT_EQ(a.Hash().size(), 64u);
  EXPECT_TRUE(TrajectoryDifferences(a, b).empty());
  // Non-trajectory keys change the hash but not the trajectory hash.
  const RunConfig c = RunConfig::FromYaml(kTiny, "/b", {"train.threads=2", "checkpoint.keep=9",
                                                        "optim.schedule.t_max=10"});
  EXPECT_NE(c.Hash(), a.Hash());
  EXPECT_EQ(c.TrajectoryHash(), a.TrajectoryHash());
  // max_steps alone does not change the trajectory when t_max is pinned...
  const RunConfig d = RunConfig::FromYaml(kTiny, "/b", {"train.max_steps=20",
                                                        "optim.schedule.t_max=10"});
  EXPECT_EQ(d.TrajectoryHash(), a.TrajectoryHash());
  // ...but a different LR or model does, and the differing keys are named.
  const RunConfig e = RunConfig::FromYaml(kTiny, "/b", {"optim.lr=5e-4", "model.rope_theta=1e4"});
  EXPECT_NE(e.TrajectoryHash(), a.TrajectoryHash());
  EXPECT_EQ(TrajectoryDifferences(a, e),
            (std::vector<std::string>{"model.rope_theta", "optim.lr"}));
  // The 7B preset renders and reloads to the same model.
  const RunConfig s1 = RunConfig::Load(kConfigs + "olmo3-7b-stage1.yaml");
  const RunConfig s1b = RunConfig::FromYaml(s1.Canonical(), "/x");
  EXPECT_EQ(s1b.Canonical(), s1.Canonical());
  EXPECT_EQ(s1b.model.NumParams(), 7298617344);
}

// RoPE scaling inline in the model section (either spelling): it renders into the canonical form,
// reloads to the same per-layer RoPE, counts as a trajectory key, and bad values name the field.
TEST(RunConfig, YarnModelRendersAndReloads) {
  const std::string legacy =
      "model.rope_scaling={rope_type: yarn, factor: 8, original_max_position_embeddings: 32, "
      "beta_fast: 32, beta_slow: 1}";
  const std::string nested =
      "model.rope_parameters={full_attention: {rope_type: yarn, rope_theta: 500000, factor: 8, "
      "original_max_position_embeddings: 32}, sliding_attention: {rope_type: default, "
      "rope_theta: 500000}}";
  const RunConfig plain = RunConfig::FromYaml(kTiny, "/b");
  for (const std::string& set : {legacy, nested}) {
    const RunConfig a = RunConfig::FromYaml(kTiny, "/b", {set});
    EXPECT_EQ(a.model.RopeFor(3).type, RopeType::kYarn) << set;
    EXPECT_EQ(a.model.RopeFor(0).type, RopeType::kDefault) << set;
    const std::string canon = a.Canonical();
    EXPECT_NE(canon.find(set == legacy ? "rope_scaling:" : "rope_parameters:"), std::string::npos)
        << canon;
    const RunConfig b = RunConfig::FromYaml(canon, "/x");
    EXPECT_EQ(b.Canonical(), canon);
    for (int64_t l = 0; l < 4; ++l) EXPECT_TRUE(b.model.RopeFor(l).SameMath(a.model.RopeFor(l)));
    EXPECT_EQ(b.model.rope_spelling, a.model.rope_spelling);
    EXPECT_NE(a.TrajectoryHash(), plain.TrajectoryHash());
  }
  EXPECT_EQ(TrajectoryDifferences(plain, RunConfig::FromYaml(kTiny, "/b", {legacy})),
            std::vector<std::string>{"model.rope_scaling"});
  // A plain-RoPE model renders without rope_scaling / rope_parameters keys.
  EXPECT_EQ(plain.Canonical().find("rope_scaling"), std::string::npos);
  EXPECT_EQ(plain.Canonical().find("rope_parameters"), std::string::npos);
  const std::string e = ErrorOf([] {
    RunConfig::FromYaml(kTiny, "/b",
                        {"model.rope_scaling={rope_type: yarn, factor: 0.5, "
                         "original_max_position_embeddings: 32}"});
  });
  EXPECT_NE(e.find("'rope_scaling.factor'"), std::string::npos) << e;
  const std::string e2 = ErrorOf([] { RunConfig::FromYaml(kTiny, "/b", {"model.rope_scaling=8"}); });
  EXPECT_NE(e2.find("model.rope_scaling"), std::string::npos) << e2;
}

// Every nested section and mixture source is read through yaml-cpp's map iterators; under
// AddressSanitizer (make sanitize) this is the regression test for binding a reference to the
// iterator's temporary proxy (stack-use-after-scope on every load).
TEST(RunConfig, NestedSectionsAndMixtureSourcesReadBack) {
  const std::string text = std::string(kTiny) + R"(
checkpoint:
  interval: 3
  keep: 2
)";
  RunConfig c = RunConfig::FromYaml(text, "/b", {}, "x.yaml");
  EXPECT_EQ(c.train.max_steps, 10);
  EXPECT_EQ(c.train.micro_batch_instances, 2);
  EXPECT_EQ(c.optim.schedule.warmup, 2);
  EXPECT_EQ(c.checkpoint.interval, 3);
  EXPECT_EQ(c.model.hidden_size, 64);
  RunConfig m = RunConfig::FromYaml(R"(
model: {vocab_size: 256, hidden_size: 64, intermediate_size: 128, num_hidden_layers: 4,
        num_attention_heads: 4, rms_norm_eps: 1.0e-6, rope_theta: 500000, sliding_window: 8}
data:
  seq_len: 32
  mixture:
    - {name: web, paths: [w.npy], tokens: 100}
    - {name: code, paths: [c.npy], tokens: 50, max_repetition: 2}
train: {max_steps: 1, global_batch_instances: 2}
optim: {lr: 1.0e-3}
)",
                                    "/b", {}, "m.yaml");
  ASSERT_EQ(m.data.mixture.size(), 2u);
  EXPECT_EQ(m.data.mixture[1].name, "code");
  EXPECT_EQ(m.data.mixture[1].tokens, 50);
  EXPECT_EQ(m.data.mixture[1].max_repetition, 2.0);
}

TEST(RunConfig, DuplicateKeysAreRefused) {
  auto err = [](const std::string& text) {
    return ErrorOf([&] { RunConfig::FromYaml(text, "/b", {}, "x.yaml"); });
  };
  std::string e = err(std::string(kTiny) + "checkpoint:\n  keep: 2\n  keep: 3\n");
  EXPECT_NE(e.find("x.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("'checkpoint.keep'"), std::string::npos) << e;
  EXPECT_NE(e.find("more than once"), std::string::npos) << e;
  // The same key through a repeated section and through a dotted key.
  e = err(std::string(kTiny) + "checkpoint: {keep: 2}\ncheckpoint: {interval: 3}\n");
  EXPECT_NE(e.find("'checkpoint'"), std::string::npos) << e;
  e = err(std::string(kTiny) + "train.max_steps: 3\n");
  EXPECT_NE(e.find("'train.max_steps'"), std::string::npos) << e;
  e = err(std::string(kTiny) + "model.vocab_size: 300\n");
  EXPECT_NE(e.find("'model.vocab_size'"), std::string::npos) << e;
  e = err(R"(
model: {vocab_size: 256, hidden_size: 64, intermediate_size: 128, num_hidden_layers: 4,
        num_attention_heads: 4, rms_norm_eps: 1.0e-6, rope_theta: 500000, sliding_window: 8}
data:
  seq_len: 32
  mixture:
    - {name: web, paths: [w.npy], tokens: 100, tokens: 200}
train: {max_steps: 1, global_batch_instances: 2}
)");
  EXPECT_NE(e.find("'data.mixture[0].tokens'"), std::string::npos) << e;
  // --set overrides a file key (that is its purpose); that is not a duplicate.
  EXPECT_EQ(RunConfig::FromYaml(kTiny, "/b", {"train.max_steps=7"}, "x.yaml").train.max_steps, 7);
}

TEST(RunConfig, HugeModelSizesNameTheField) {
  auto err = [](std::vector<std::string> sets) {
    return ErrorOf([&] { RunConfig::FromYaml(kTiny, "/b", sets, "x.yaml"); });
  };
  std::string e = err({"model.num_hidden_layers=1e9"});
  EXPECT_NE(e.find("num_hidden_layers"), std::string::npos) << e;
  e = err({"model.vocab_size=1e12"});
  EXPECT_NE(e.find("vocab_size"), std::string::npos) << e;
  e = err({"model.eos_token_id=4294967596"});
  EXPECT_NE(e.find("eos_token_id"), std::string::npos) << e;
}

}  // namespace
}  // namespace replica

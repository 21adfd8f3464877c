// replica convert's core: HF -> checkpoint -> HF round trips exactly in F32, BF16 export rounds
// each value to nearest even, sharded output, run directories export their newest valid
// checkpoint, and wrong destinations are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "testing/util.h"
#include "ops/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"
#include "core/log.h"
#include "hf/hf_checkpoint.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "checkpoint/convert.h"
#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "checkpoint/writer.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

const std::string kFixture = std::string(REPLICA_TEST_DATA) + "/olmo3/tiny-gqa";

class ConvertTest : public ::testing::Test {
 protected:
  void SetUp() override { SetLogLevel(LogLevel::kError); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  ConvertResult Run(const std::string& from, const std::string& to, DType dtype = DType::kF32,
                    uint64_t shard = 5000ull * 1000 * 1000) {
    ConvertOptions o;
    o.from = from;
    o.to = to;
    o.dtype = dtype;
    o.max_shard_bytes = shard;
    return Convert(o);
  }
  test::TempDir tmp_{"convert"};
  fs::path dir_ = tmp_.path();
};

// Every tensor of `a` has the same name, shape and bits (as F32) in `b`, and vice versa.
void ExpectSameWeights(const std::string& a, const std::string& b) {
  HfCheckpoint ca = HfCheckpoint::Open(a), cb = HfCheckpoint::Open(b);
  ASSERT_EQ(ca.tensors().size(), cb.tensors().size());
  for (const TensorInfo* t : ca.tensors()) {
    const TensorInfo* u = cb.Find(t->name);
    ASSERT_NE(u, nullptr) << t->name;
    EXPECT_EQ(t->shape, u->shape) << t->name;
    std::vector<float> va = ca.ReadF32(t->name), vb = cb.ReadF32(t->name);
    ASSERT_EQ(va.size(), vb.size());
    EXPECT_EQ(std::memcmp(va.data(), vb.data(), va.size() * sizeof(float)), 0) << t->name;
  }
}

TEST_F(ConvertTest, HfToCheckpointToHfIsExactInF32) {
  ConvertResult imp = Run(kFixture, P("ckpt"));
  EXPECT_EQ(imp.direction, ConvertDirection::kHfToCheckpoint);
  EXPECT_EQ(imp.tensors, 91);
  EXPECT_NO_THROW(VerifyCheckpoint(P("ckpt")));
  Checkpoint c = Checkpoint::Open(P("ckpt"));
  EXPECT_FALSE(c.has_optimizer());
  EXPECT_FALSE(c.has_state());
  EXPECT_EQ(ModelConfig::FromHfJson(c.model_config(), "ckpt").ToHfJson(),
            ModelConfig::FromHfFile(kFixture + "/config.json").ToHfJson());
  ExpectSameWeights(kFixture, P("ckpt"));

  ConvertResult exp = Run(P("ckpt"), P("hf"));
  EXPECT_EQ(exp.direction, ConvertDirection::kCheckpointToHf);
  ExpectSameWeights(kFixture, P("hf"));
  Run(P("hf"), P("ckpt2"));
  ExpectSameWeights(P("ckpt"), P("ckpt2"));
}

TEST_F(ConvertTest, Bf16ExportRoundsEachValueAndShards) {
  Run(kFixture, P("ckpt"));
  Run(P("ckpt"), P("hf"), DType::kBF16, /*shard=*/300000);
  HfCheckpoint out = HfCheckpoint::Open(P("hf"));
  EXPECT_TRUE(out.sharded());
  EXPECT_GT(out.num_shards(), 1u);
  HfCheckpoint in = HfCheckpoint::Open(kFixture);
  for (const TensorInfo* t : in.tensors()) {
    EXPECT_EQ(out.Get(t->name).dtype, DType::kBF16);
    std::vector<float> src = in.ReadF32(t->name), got = out.ReadF32(t->name);
    for (size_t i = 0; i < src.size(); ++i)
      ASSERT_EQ(got[i], Bf16ToF32(F32ToBf16(src[i]))) << t->name << "[" << i << "]";
  }
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(P("hf") + "/config.json"))["torch_dtype"],
            "bfloat16");
  EXPECT_THROW(Run(P("hf"), P("ckpt_bf16"), DType::kBF16), Error);  // checkpoints are F32
}

TEST_F(ConvertTest, RunDirectoryExportsNewestValidCheckpoint) {
  const ModelConfig config = ModelConfig::FromHfFile(kFixture + "/config.json");
  const ParamLayout layout = config.BuildLayout();
  HfCheckpoint in = HfCheckpoint::Open(kFixture);
  FlatBuffer params(layout.total_floats()), m(layout.total_floats()), v(layout.total_floats());
  for (const ParamView& view : layout.views())
    in.ReadF32Into(view.name, params.data() + view.offset, view.numel);
  {
    CheckpointWriter w({.run_dir = P("run"), .keep = 0}, CpuBackend());
    w.Save(10, layout, params, m, v, 10, {{"step", 10}}, config.ToHfJson());
    w.Wait();
    params.data()[0] += 1.0f;  // step 20 differs from the fixture in one value
    w.Save(20, layout, params, m, v, 20, {{"step", 20}}, config.ToHfJson());
    w.Finish();
  }
  fs::remove(fs::path(P("run")) / "checkpoints" / CheckpointDirName(20) / "DONE");
  ConvertResult r = Run(P("run"), P("hf"));
  EXPECT_EQ(r.step, 10);
  ExpectSameWeights(kFixture, P("hf"));
}

TEST_F(ConvertTest, RefusesBadSourcesAndDestinations) {
  Run(kFixture, P("ckpt"));
  fs::create_directories(P("other"));
  std::ofstream(P("other") + "/notes.txt") << "keep me";
  EXPECT_THROW(Run(kFixture, P("other")), Error);  // not a checkpoint: never replaced
  EXPECT_TRUE(fs::exists(P("other") + "/notes.txt"));
  EXPECT_THROW(Run(P("ckpt"), P("ckpt")), Error);
  EXPECT_THROW(Run(P("nothing"), P("x")), Error);
  EXPECT_THROW(Run(P("other"), P("x")), Error);
  // A model whose config does not match its weights.
  fs::create_directories(P("bad"));
  fs::copy_file(kFixture + "/model.safetensors", P("bad") + "/model.safetensors");
  fs::copy_file(std::string(REPLICA_TEST_DATA) + "/olmo3/tiny-mha/config.json",
                P("bad") + "/config.json");
  try {
    Run(P("bad"), P("x"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.embed_tokens.weight"), std::string::npos)
        << e.what();
  }
}

// An HF directory that also holds optim.safetensors (m.<name>, v.<name>, I64 step) and state.json
// imports as a resumable checkpoint carrying both (what tools/olmo_core_checkpoint.py stages from
// an OLMo-core checkpoint); one without the other, a missing m/v tensor, an unexpected tensor or
// a state whose adam_step is not the step tensor is refused with nothing written.
TEST_F(ConvertTest, ImportsOptimizerAndTrainerState) {
  const ModelConfig config = ModelConfig::FromHfFile(kFixture + "/config.json");
  const ParamLayout layout = config.BuildLayout();
  auto stage = [&](const std::string& dir, int64_t step, int64_t adam_step, bool drop_one,
                   bool extra) {
    fs::create_directories(dir);
    fs::copy_file(kFixture + "/config.json", dir + "/config.json");
    fs::copy_file(kFixture + "/model.safetensors", dir + "/model.safetensors");
    SafetensorsWriter w;
    std::vector<std::vector<float>> keep;
    for (const ParamView& v : layout.views()) {
      for (const char* prefix : {"m.", "v."}) {
        if (drop_one && v.name == layout.views().back().name && prefix[0] == 'v') continue;
        keep.emplace_back(v.numel);
        for (size_t i = 0; i < v.numel; ++i)
          keep.back()[i] = (prefix[0] == 'm' ? 1e-3f : 1e-6f) * static_cast<float>(i % 7 + 1);
        w.AddF32(prefix + v.name, v.shape, keep.back().data());
      }
    }
    const int64_t s = adam_step;
    w.Add("step", DType::kI64, {}, &s, sizeof s);
    if (extra) w.AddF32("m.not.a.tensor", {1}, keep.back().data());
    w.Write(dir + "/optim.safetensors");
    std::ofstream(dir + "/state.json")
        << nlohmann::json{{"format", "replica-train-state"}, {"step", step},
                          {"adam_step", step + 1}}
               .dump();
  };
  stage(P("stage"), 30, 31, false, false);
  ConvertResult r = Run(P("stage"), P("ckpt"));
  EXPECT_EQ(r.step, 30);
  EXPECT_NO_THROW(VerifyCheckpoint(P("ckpt")));
  Checkpoint c = Checkpoint::Open(P("ckpt"));
  ASSERT_TRUE(c.has_optimizer());
  ASSERT_TRUE(c.has_state());
  EXPECT_EQ(c.step(), 30);
  EXPECT_EQ(c.adam_step(), 31);
  EXPECT_EQ(c.state()["step"], 30);
  FlatBuffer m(layout.total_floats()), v(layout.total_floats());
  EXPECT_EQ(c.LoadOptimizer(layout, m, v), 31);
  const ParamView& last = layout.views().back();
  EXPECT_EQ(m.data()[last.offset + 3], 4e-3f);
  EXPECT_EQ(v.data()[last.offset + 3], 4e-6f);
  ExpectSameWeights(kFixture, P("ckpt"));
  // A weights-only import never replaces this checkpoint.
  EXPECT_THROW(Run(kFixture, P("ckpt")), Error);
  EXPECT_TRUE(fs::exists(P("ckpt") + "/optim.safetensors"));

  auto refused = [&](const std::string& dir, const std::string& needle) {
    try {
      Run(dir, P("out"));
      ADD_FAILURE() << dir << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(P("out"))) << dir;
  };
  stage(P("mismatch"), 30, 29, false, false);  // adam_step 31 in state.json, 29 in the file
  refused(P("mismatch"), "adam_step");
  stage(P("missing"), 30, 31, true, false);
  refused(P("missing"), "v." + last.name);
  stage(P("extra"), 30, 31, false, true);
  refused(P("extra"), "m.not.a.tensor");
  stage(P("nostate"), 30, 31, false, false);
  fs::remove(P("nostate") + "/state.json");
  refused(P("nostate"), "state.json");
}

// `--to` is written only when it does not exist, is an empty directory, or holds what an earlier
// convert in the same direction wrote; anything else (a training checkpoint with optimizer state,
// an unrelated directory) is refused and left untouched.
TEST_F(ConvertTest, DestinationMustBeEmptyOrAnEarlierExport) {
  auto error_of = [&](const std::string& from, const std::string& to) {
    try {
      Run(from, to);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // A run's training checkpoint (weights, Adam state, trainer state).
  const ModelConfig config = ModelConfig::FromHfFile(kFixture + "/config.json");
  const ParamLayout layout = config.BuildLayout();
  FlatBuffer params(layout.total_floats()), m(layout.total_floats()), v(layout.total_floats());
  {
    CheckpointWriter w({.run_dir = P("run"), .keep = 0}, CpuBackend());
    w.Save(12, layout, params, m, v, 12, {{"step", 12}}, config.ToHfJson());
    w.Finish();
  }
  const std::string step = P("run") + "/checkpoints/" + CheckpointDirName(12);
  std::string e = error_of(kFixture, step);
  EXPECT_NE(e.find("--to"), std::string::npos) << e;
  EXPECT_NE(e.find(step), std::string::npos) << e;
  EXPECT_TRUE(fs::exists(step + "/optim.safetensors"));
  EXPECT_TRUE(fs::exists(step + "/state.json"));
  EXPECT_NO_THROW(VerifyCheckpoint(step));
  // An unrelated non-empty directory, for export.
  Run(kFixture, P("ckpt"));
  fs::create_directories(P("docs"));
  std::ofstream(P("docs") + "/notes.txt") << "keep me";
  e = error_of(P("ckpt"), P("docs"));
  EXPECT_NE(e.find("--to"), std::string::npos) << e;
  EXPECT_NE(e.find("notes.txt"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(P("docs") + "/model.safetensors"));
  // Allowed: an empty directory, and convert's own earlier output (re-running the same convert).
  fs::create_directories(P("empty"));
  EXPECT_NO_THROW(Run(P("ckpt"), P("empty")));
  EXPECT_NO_THROW(Run(P("ckpt"), P("empty")));
  EXPECT_NO_THROW(Run(kFixture, P("ckpt")));
  ExpectSameWeights(kFixture, P("empty"));
}

}  // namespace
}  // namespace replica

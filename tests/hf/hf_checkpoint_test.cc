// HF model directories: single file and sharded (index) layouts read the same tensors, the sharded
// writer splits by size and round-trips, and every inconsistency between index and shards is an
// Error naming the file and tensor.
#include "hf/hf_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>

#include "core/atomic_file.h"
#include "testing/safetensors_util.h"

namespace replica {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing_io::ErrorOf;
namespace fs = std::filesystem;

const std::string kData = REPLICA_TEST_DATA;

class HfCheckpointTest : public testing_io::TempDirTest {
 protected:
  // Four tensors of 40, 24, 8 and 16 bytes, values distinct per tensor.
  void AddTensors(HfCheckpointWriter& w) {
    for (int i = 0; i < 10; ++i) a_[i] = 1.0f + i;
    for (int i = 0; i < 6; ++i) b_[i] = -1.0f - i;
    w.AddF32("a", {2, 5}, a_);
    w.AddF32("b", {6}, b_);
    w.Add("c", DType::kI64, {1}, c_, sizeof(c_));
    w.AddF32("d", {4}, a_);
  }
  void ExpectTensors(const HfCheckpoint& ck) {
    ASSERT_EQ(ck.tensors().size(), 4u);
    EXPECT_EQ(ck.ReadF32("a"), std::vector<float>(a_, a_ + 10));
    EXPECT_EQ(ck.ReadF32("b"), std::vector<float>(b_, b_ + 6));
    EXPECT_EQ(ck.Get("c").dtype, DType::kI64);
    EXPECT_EQ(ck.ReadF32("d"), std::vector<float>(a_, a_ + 4));
    float dst[6];
    ck.ReadF32Into("b", dst, 6);
    EXPECT_EQ(dst[5], -6.0f);
  }
  std::string Sharded(uint64_t max_bytes) {
    HfCheckpointWriter w(max_bytes);
    AddTensors(w);
    w.Write(dir_);
    return dir_;
  }
  float a_[10], b_[6];
  int64_t c_[1] = {42};
};

TEST(HfCheckpointFixture, OpensFixtureDirectory) {
  auto ck = HfCheckpoint::Open(kData + "/olmo3/tiny-gqa");
  EXPECT_FALSE(ck.sharded());
  EXPECT_EQ(ck.tensors().size(), 91u);
  EXPECT_EQ(ck.Get("lm_head.weight").shape, (std::vector<int64_t>{384, 96}));
  EXPECT_THAT(ck.FileOf("lm_head.weight"), HasSubstr("tiny-gqa/model.safetensors"));
  // A single file works as well.
  auto single = HfCheckpoint::Open(kData + "/olmo3/tiny-gqa/model.safetensors");
  EXPECT_EQ(single.tensors().size(), 91u);
}

TEST_F(HfCheckpointTest, SingleFileWhenItFits) {
  HfCheckpointWriter w(1000);
  AddTensors(w);
  EXPECT_EQ(w.Write(dir_), (std::vector<std::string>{"model.safetensors"}));
  auto ck = HfCheckpoint::Open(dir_);
  EXPECT_FALSE(ck.sharded());
  ExpectTensors(ck);
}

TEST_F(HfCheckpointTest, ShardsBySizeAndRoundTrips) {
  // max 48 bytes: [a 40] [b 24 + c 8 + d 16 = 48].
  HfCheckpointWriter w(48);
  AddTensors(w);
  w.SetMetadata("note", "x");
  EXPECT_EQ(w.Write(dir_), (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                                     "model-00002-of-00002.safetensors",
                                                     "model.safetensors.index.json"}));
  auto ck = HfCheckpoint::Open(dir_);
  EXPECT_TRUE(ck.sharded());
  EXPECT_EQ(ck.num_shards(), 2u);
  ExpectTensors(ck);
  EXPECT_THAT(ck.FileOf("a"), HasSubstr("model-00001-of-00002"));
  EXPECT_THAT(ck.FileOf("d"), HasSubstr("model-00002-of-00002"));
  EXPECT_EQ(ck.shard(1).metadata().at("note"), "x");
  auto index = nlohmann::json::parse(ReadFile(Path("model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"], 88);
  EXPECT_EQ(index["weight_map"]["c"], "model-00002-of-00002.safetensors");
}

TEST_F(HfCheckpointTest, TensorLargerThanShardGetsItsOwnShard) {
  Sharded(8);
  auto ck = HfCheckpoint::Open(dir_);
  EXPECT_EQ(ck.num_shards(), 4u);
  ExpectTensors(ck);
}

TEST_F(HfCheckpointTest, RewritingSwitchesLayoutCleanly) {
  Sharded(8);  // 4 shards
  Sharded(48);  // 2 shards: the 4-shard files and no single file remain
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir_)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                             "model-00002-of-00002.safetensors",
                                             "model.safetensors.index.json"}));
  Sharded(1000);  // single file: the stale index is removed
  EXPECT_FALSE(fs::exists(Path("model.safetensors.index.json")));
  ExpectTensors(HfCheckpoint::Open(dir_));
  Sharded(48);  // back to shards: the stale single file must not shadow the new index
  EXPECT_FALSE(fs::exists(Path("model.safetensors")));
  EXPECT_TRUE(HfCheckpoint::Open(dir_).sharded());
}

TEST_F(HfCheckpointTest, MissingDirectoryOrFiles) {
  EXPECT_THAT(ErrorOf([&] { HfCheckpoint::Open(Path("nope")); }),
              AllOf(HasSubstr("nope"), HasSubstr("no such file")));
  EXPECT_THAT(ErrorOf([&] { HfCheckpoint::Open(dir_); }),
              AllOf(HasSubstr(dir_), HasSubstr("model.safetensors.index.json")));
}

TEST_F(HfCheckpointTest, MissingShard) {
  Sharded(48);
  fs::remove(Path("model-00002-of-00002.safetensors"));
  EXPECT_THAT(ErrorOf([&] { HfCheckpoint::Open(dir_); }),
              AllOf(HasSubstr("index.json"), HasSubstr("shard 'model-00002-of-00002.safetensors'"),
                    HasSubstr("missing")));
}

TEST_F(HfCheckpointTest, IndexInconsistencies) {
  Sharded(48);
  const std::string index_path = Path("model.safetensors.index.json");
  const auto good = nlohmann::json::parse(ReadFile(index_path));
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    WriteFileAtomic(index_path, j.dump());
    return ErrorOf([&] { HfCheckpoint::Open(dir_); });
  };
  // Listed, but not in that shard.
  EXPECT_THAT(with([](auto& j) { j["weight_map"]["ghost"] = "model-00001-of-00002.safetensors"; }),
              AllOf(HasSubstr("index.json"), HasSubstr("'ghost'"), HasSubstr("no such tensor")));
  // In a shard, but not listed.
  EXPECT_THAT(with([](auto& j) { j["weight_map"].erase("c"); }),
              AllOf(HasSubstr("model-00002-of-00002.safetensors"), HasSubstr("'c'"), HasSubstr("not listed")));
  // Listed in the wrong shard.
  EXPECT_THAT(with([](auto& j) { j["weight_map"]["c"] = "model-00001-of-00002.safetensors"; }),
              AllOf(HasSubstr("'c'"), HasSubstr("places it in")));
  EXPECT_THAT(with([](auto& j) { j.erase("weight_map"); }), HasSubstr("missing 'weight_map'"));
  EXPECT_THAT(with([](auto& j) { j["weight_map"] = nlohmann::json::array(); }), HasSubstr("'weight_map' must be"));
  EXPECT_THAT(with([](auto& j) { j["weight_map"] = nlohmann::json::object(); }), HasSubstr("empty"));
  EXPECT_THAT(with([](auto& j) { j["weight_map"]["a"] = 3; }), AllOf(HasSubstr("weight_map['a']"), HasSubstr("shard file")));
  EXPECT_THAT(with([](auto& j) { j["weight_map"]["a"] = "../model-00001-of-00002.safetensors"; }),
              HasSubstr("not a file inside the directory"));
  EXPECT_THAT(with([](auto& j) { j["weight_map"]["a"] = "/etc/passwd"; }), HasSubstr("not a file inside"));
  EXPECT_THAT(with([](auto& j) { j = nlohmann::json::array(); }), HasSubstr("must be a JSON object"));
  WriteFileAtomic(index_path, "{\"weight_map\": ");
  EXPECT_THAT(ErrorOf([&] { HfCheckpoint::Open(dir_); }), AllOf(HasSubstr("index.json"), HasSubstr("not valid JSON")));
}

TEST_F(HfCheckpointTest, SameTensorInTwoShards) {
  // Two single-tensor shards both holding "a"; the index can only name one of them.
  const float x[2] = {1, 2};
  SafetensorsWriter w;
  w.AddF32("a", {2}, x);
  w.Write(Path("s1.safetensors"));
  w.Write(Path("s2.safetensors"));
  WriteFileAtomic(Path("model.safetensors.index.json"),
                  R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  EXPECT_THAT(ErrorOf([&] { HfCheckpoint::Open(dir_); }),
              AllOf(HasSubstr("s2.safetensors"), HasSubstr("'a'")));
}

TEST_F(HfCheckpointTest, CorruptShardNamesTheShard) {
  Sharded(48);
  WriteFileAtomic(Path("model-00001-of-00002.safetensors"), "garbage!garbage");
  EXPECT_THAT(ErrorOf([&] { HfCheckpoint::Open(dir_); }), HasSubstr("model-00001-of-00002.safetensors"));
}

TEST_F(HfCheckpointTest, LookupErrors) {
  Sharded(48);
  auto ck = HfCheckpoint::Open(dir_);
  EXPECT_EQ(ck.Find("zzz"), nullptr);
  EXPECT_THAT(ErrorOf([&] { ck.Get("zzz"); }), AllOf(HasSubstr(dir_), HasSubstr("'zzz'")));
  EXPECT_THAT(ErrorOf([&] { ck.ReadF32("c"); }),
              AllOf(HasSubstr("model-00002-of-00002.safetensors"), HasSubstr("'c'"), HasSubstr("I64")));
  float dst[3];
  EXPECT_THAT(ErrorOf([&] { ck.ReadF32Into("a", dst, 3); }), AllOf(HasSubstr("'a'"), HasSubstr("expected 3")));
}

TEST_F(HfCheckpointTest, WriterRefusesDuplicates) {
  const float x[2] = {};
  HfCheckpointWriter w;
  w.AddF32("a", {2}, x);
  EXPECT_THAT(ErrorOf([&] { w.AddF32("a", {2}, x); }), HasSubstr("'a' added twice"));
  EXPECT_THAT(ErrorOf([] { HfCheckpointWriter bad(0); }), HasSubstr("positive"));
}

}  // namespace
}  // namespace replica

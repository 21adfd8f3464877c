// Batch lookup (data/batch_lookup.h): the instances it names for global batch b are the ones the
// DataLoader feeds at step b + 1 (across an epoch boundary too), it reads only the files that hold
// them, and the OLMo-core fingerprint follows NumpyDatasetBase.fingerprint's text.
#include "data/batch_lookup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/checksum.h"
#include "core/error.h"
#include "data/fsl_dataset.h"
#include "data/loader.h"
#include "test_util.h"
#include "testing/util.h"

namespace replica::data {
namespace {

using testing::ScratchDir;
using testing::WriteTokens;

constexpr int64_t kSeq = 16;

// Twelve files of awkward sizes (tails that are not whole instances, one file with none).
std::vector<std::string> MakeCorpus(const ScratchDir& dir) {
  const std::vector<uint64_t> tokens = {1000, 37, 640, 2001, 333, 15, 480, 97, 1203, 64, 700, 81};
  std::mt19937 rng(11);
  std::vector<std::string> paths;
  for (size_t f = 0; f < tokens.size(); ++f) {
    std::vector<uint32_t> ids(tokens[f]);
    for (auto& id : ids) id = rng() % 50000;
    paths.push_back(dir.File("part-" + std::to_string(f) + ".npy"));
    WriteTokens(paths.back(), ids);
  }
  return paths;
}

BatchLookupOptions Options(const std::vector<std::string>& paths, uint64_t head) {
  BatchLookupOptions o;
  o.paths = paths;
  o.seq_len = kSeq;
  o.seed = 34521;
  o.global_batch_instances = 8;
  o.head_tokens = head;
  return o;
}

TEST(BatchLookup, EqualsWhatTheLoaderFeedsAtEveryStepAcrossEpochs) {
  ScratchDir dir("lookup-loader");
  const auto paths = MakeCorpus(dir);
  auto ds = std::make_shared<NumpyFslDataset>(
      FslDatasetOptions{paths, kSeq, TokenDtype::kUint32, 100278});
  LoaderOptions lo;
  lo.seed = 34521;
  lo.global_batch_instances = 8;
  DataLoader loader(ds, lo);
  const uint64_t per_epoch = loader.batches_per_epoch();
  ASSERT_GT(per_epoch, 10u);
  for (uint64_t b = 0; b < per_epoch + 5; ++b) {  // into the second epoch
    const RankBatch fed = loader.Next();
    const BatchLookup r = LookupGlobalBatch(Options(paths, kSeq), b);
    ASSERT_EQ(r.epoch, fed.epoch) << b;
    ASSERT_EQ(r.batch_in_epoch, fed.batch) << b;
    ASSERT_EQ(r.num_instances, ds->num_instances());
    ASSERT_EQ(r.instances.size(), fed.instances.size());
    for (size_t i = 0; i < r.instances.size(); ++i) {
      ASSERT_EQ(r.instances[i].instance, fed.instances[i]) << "batch " << b << " position " << i;
      const InstanceLocation loc = ds->Locate(fed.instances[i]);
      EXPECT_EQ(r.instances[i].file, loc.file);
      EXPECT_EQ(r.instances[i].token_offset, loc.token_offset);
      const std::vector<int32_t> row(fed.input_ids.begin() + static_cast<int64_t>(i) * kSeq,
                                     fed.input_ids.begin() + static_cast<int64_t>(i + 1) * kSeq);
      EXPECT_EQ(r.instances[i].head, row) << "batch " << b << " position " << i;
    }
  }
}

TEST(BatchLookup, LateBatchReadsOnlyTheFilesItNeeds) {
  ScratchDir dir("lookup-late");
  const auto paths = MakeCorpus(dir);
  const uint64_t late = 60;  // in the second epoch (412 instances: 51 batches per epoch)
  const BatchLookup before = LookupGlobalBatch(Options(paths, 4), late);
  ASSERT_EQ(before.epoch, 2u);
  std::set<size_t> holding;
  for (const auto& x : before.instances) holding.insert(x.file);
  EXPECT_EQ(before.files_opened, holding);
  ASSERT_LT(holding.size(), paths.size());
  // Every other file gets different contents of the same size (and an unreadable mode); the
  // lookup must not notice.
  for (size_t f = 0; f < paths.size(); ++f) {
    if (holding.count(f)) continue;
    const auto size = std::filesystem::file_size(paths[f]);
    std::filesystem::remove(paths[f]);
    WriteTokens(paths[f], std::vector<uint32_t>(size / 4, 99999));
    std::filesystem::permissions(paths[f], std::filesystem::perms::none);
  }
  const BatchLookup after = LookupGlobalBatch(Options(paths, 4), late);
  ASSERT_EQ(after.instances.size(), before.instances.size());
  for (size_t i = 0; i < after.instances.size(); ++i) {
    EXPECT_EQ(after.instances[i].instance, before.instances[i].instance);
    EXPECT_EQ(after.instances[i].head, before.instances[i].head);
  }
  EXPECT_EQ(after.files_opened, holding);
  for (const auto& p : paths) std::filesystem::permissions(p, std::filesystem::perms::owner_all);
}

TEST(BatchLookup, ErrorsNameTheFileOrTheBatch) {
  ScratchDir dir("lookup-errors");
  auto paths = MakeCorpus(dir);
  {
    std::ofstream(dir.File("odd.npy"), std::ios::binary) << "abc";  // 3 bytes: not uint32s
    auto bad = paths;
    bad.push_back(dir.File("odd.npy"));
    const std::string err = test::ErrorOf([&] { LookupGlobalBatch(Options(bad, 4), 0); });
    EXPECT_NE(err.find("odd.npy: size 3 bytes"), std::string::npos) << err;
  }
  auto missing = paths;
  missing.push_back(dir.File("nope.npy"));
  const std::string err = test::ErrorOf([&] { LookupGlobalBatch(Options(missing, 4), 0); });
  EXPECT_NE(err.find("nope.npy"), std::string::npos) << err;
  BatchLookupOptions huge = Options(paths, 4);
  huge.global_batch_instances = 1u << 20;
  EXPECT_NE(test::ErrorOf([&] { LookupGlobalBatch(huge, 0); }).find("larger than the dataset"),
            std::string::npos);
}

TEST(BatchLookup, OlmoCoreFingerprintText) {
  // NumpyDatasetBase.fingerprint (v2.0) for NumpyFSLDataset: class, then
  // "field=value," for vocab_size, pad_token_id, eos_token_id, dtype, max_target_sequence_length,
  // bos_token_id, then "path=<basename>,size=<bytes>," per file.
  const std::string expected = Sha256Hex(
      "class=NumpyFSLDatasetvocab_size=100278,pad_token_id=100277,eos_token_id=100257,"
      "dtype=<class 'numpy.uint32'>,max_target_sequence_length=8192,bos_token_id=None,"
      "path=000000.npy,size=400,path=000001.npy,size=8,");
  OlmoCoreFingerprintFields f{100278, 100277, 100257, -1, 8192};
  EXPECT_EQ(OlmoCoreFslFingerprint({"s3://a/b/000000.npy", "/x/000001.npy"}, {400, 8},
                                   TokenDtype::kUint32, f),
            expected);
}

}  // namespace
}  // namespace replica::data

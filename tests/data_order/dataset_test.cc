// Token files and NumpyFslDataset: instance layout across files, dtypes, validation errors,
// labels and the dataset fingerprint.
#include "testing/util.h"
#include "data/fsl_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "test_util.h"

namespace replica::data {
namespace {

using testing::ScratchDir;
using testing::WriteCountingFile;
using testing::WriteTokens;

using replica::test::ErrorOf;

TEST(FslDataset, InstancesPerFileDropTailsAndNeverCrossFiles) {
  ScratchDir dir("layout");
  // 10, 7, 2 and 9 tokens at seq_len 3 -> 3, 2, 0 and 3 instances.
  std::vector<std::string> paths = {
      WriteCountingFile(dir, "a.npy", 1000, 10), WriteCountingFile(dir, "b.npy", 2000, 7),
      WriteCountingFile(dir, "c.npy", 3000, 2), WriteCountingFile(dir, "d.npy", 4000, 9)};
  NumpyFslDataset ds({paths, 3, TokenDtype::kUint32, 5000});
  ASSERT_EQ(ds.num_instances(), 8u);
  EXPECT_EQ(ds.first_instance(), (std::vector<uint64_t>{0, 3, 5, 5, 8}));
  struct Want {
    size_t file;
    uint64_t offset;
    int32_t first_token;
  };
  std::vector<Want> want = {{0, 0, 1000}, {0, 3, 1003}, {0, 6, 1006}, {1, 0, 2000},
                            {1, 3, 2003}, {3, 0, 4000}, {3, 3, 4003}, {3, 6, 4006}};
  for (uint64_t g = 0; g < 8; ++g) {
    auto loc = ds.Locate(g);
    EXPECT_EQ(loc.file, want[g].file) << g;
    EXPECT_EQ(loc.token_offset, want[g].offset) << g;
    int32_t buf[3];
    ds.ReadInstance(g, buf);
    EXPECT_EQ(buf[0], want[g].first_token);
    EXPECT_EQ(buf[1], want[g].first_token + 1);
    EXPECT_EQ(buf[2], want[g].first_token + 2);
  }
  EXPECT_THROW(ds.Locate(8), Error);
}

TEST(FslDataset, ReadsUint16Files) {
  ScratchDir dir("u16");
  std::vector<uint16_t> ids = {1, 65535, 7, 8, 9, 10, 11};
  WriteTokens(dir.File("a.npy"), ids);
  NumpyFslDataset ds({{dir.File("a.npy")}, 3, TokenDtype::kUint16, 100278});
  ASSERT_EQ(ds.num_instances(), 2u);
  int32_t buf[3];
  ds.ReadInstance(0, buf);
  EXPECT_EQ(std::vector<int32_t>(buf, buf + 3), (std::vector<int32_t>{1, 65535, 7}));
  ds.ReadInstance(1, buf);
  EXPECT_EQ(std::vector<int32_t>(buf, buf + 3), (std::vector<int32_t>{8, 9, 10}));
}

TEST(FslDataset, BadInputIsAClearError) {
  ScratchDir dir("bad");
  std::string good = WriteCountingFile(dir, "good.npy", 0, 64);
  std::string missing = dir.File("missing.npy");
  std::string e = ErrorOf([&] { NumpyFslDataset({{good, missing}, 4, TokenDtype::kUint32, 100}); });
  EXPECT_NE(e.find("missing.npy"), std::string::npos) << e;

  std::ofstream(dir.File("odd.npy"), std::ios::binary) << "1234567";  // 7 bytes
  e = ErrorOf([&] { NumpyFslDataset({{dir.File("odd.npy")}, 2, TokenDtype::kUint32, 100}); });
  EXPECT_NE(e.find("odd.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("not a multiple of 4"), std::string::npos) << e;

  std::vector<uint32_t> ids(40, 5);
  ids[33] = 100278;
  WriteTokens(dir.File("big.npy"), ids);
  e = ErrorOf([&] { NumpyFslDataset({{dir.File("big.npy")}, 4, TokenDtype::kUint32, 100278}); });
  EXPECT_NE(e.find("big.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("token id 100278 at token offset 33"), std::string::npos) << e;

  std::string tiny = WriteCountingFile(dir, "tiny.npy", 0, 3);
  e = ErrorOf([&] { NumpyFslDataset({{tiny, tiny}, 4, TokenDtype::kUint32, 100}); });
  EXPECT_NE(e.find("no complete instance"), std::string::npos) << e;

  WriteTokens(dir.File("empty.npy"), std::vector<uint32_t>{});
  EXPECT_THROW(NumpyFslDataset({{dir.File("empty.npy")}, 4, TokenDtype::kUint32, 100}), Error);
  EXPECT_THROW(NumpyFslDataset({{}, 4, TokenDtype::kUint32, 100}), Error);
  EXPECT_THROW(NumpyFslDataset({{good}, 1, TokenDtype::kUint32, 100}), Error);
  EXPECT_THROW(NumpyFslDataset({{good}, 4, TokenDtype::kUint32, 0}), Error);
  EXPECT_THROW(ParseDtype("int32"), Error);
}

TEST(FslDataset, LabelsAreInputsShiftedLeftWithIgnoredLastPosition) {
  std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int32_t> labels(8);
  MakeLabels(ids.data(), 2, 4, labels.data());
  EXPECT_EQ(labels, (std::vector<int32_t>{2, 3, 4, kLabelIgnore, 6, 7, 8, kLabelIgnore}));
}

TEST(FslDataset, FingerprintFollowsContentNotLocation) {
  ScratchDir dir("fp");
  std::filesystem::create_directories(dir.File("moved"));
  std::string a = WriteCountingFile(dir, "a.npy", 0, 40);
  std::string b = WriteCountingFile(dir, "b.npy", 100, 40);
  auto fp = [](std::vector<std::string> p, int64_t T, TokenDtype dt = TokenDtype::kUint32) {
    return NumpyFslDataset({p, T, dt, 1000}).fingerprint();
  };
  std::string base = fp({a, b}, 4);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(fp({a, b}, 4), base);
  std::filesystem::copy_file(a, dir.File("moved/a.npy"));
  std::filesystem::copy_file(b, dir.File("moved/b.npy"));
  EXPECT_EQ(fp({dir.File("moved/a.npy"), dir.File("moved/b.npy")}, 4), base);
  EXPECT_NE(fp({b, a}, 4), base);
  EXPECT_NE(fp({a, b}, 5), base);
  EXPECT_NE(fp({a, b}, 2, TokenDtype::kUint16), fp({a, b}, 4, TokenDtype::kUint16));
  WriteCountingFile(dir, "b.npy", 101, 40);  // same size, one token different everywhere
  EXPECT_NE(fp({a, b}, 4), base);
}

}  // namespace
}  // namespace replica::data

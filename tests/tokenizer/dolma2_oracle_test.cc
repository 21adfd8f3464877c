// dolma2 against its oracles: the 60 public texts of tests/data/oracles/tokenizer (exact ids), the
// 64 cl100k_base cases of gpt-tokenizer's TestPlans.txt, and round trips.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "tokenizer/tokenizer_registry.h"
#include "test_tokenizer_util.h"

namespace replica {
namespace {

using testing::Dolma2;

std::vector<uint32_t> Ids(const nlohmann::json& a) { return a.get<std::vector<uint32_t>>(); }

TEST(Dolma2Oracle, EveryPublicTextMatchesExactly) {
  std::ifstream in(std::string(REPLICA_TEST_DATA) + "/oracles/tokenizer/dolma2-public.jsonl");
  ASSERT_TRUE(in.good());
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    std::string text = j["text"];
    std::vector<uint32_t> want = Ids(j["ids"]);
    EXPECT_EQ(Dolma2().Encode(text), want) << "text: " << j["text"].dump();
    EXPECT_EQ(Dolma2().Decode(want), text);
    ++cases;
  }
  EXPECT_EQ(cases, 60);
}

TEST(Dolma2Oracle, GptTokenizerTestPlansCl100k) {
  std::ifstream in(std::string(REPLICA_TEST_DATA) + "/tokenizer/TestPlans.txt");
  ASSERT_TRUE(in.good());
  std::string line, encoding, sample;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.starts_with("EncodingName: ")) encoding = line.substr(14);
    if (line.starts_with("Sample: ")) sample = line.substr(8);
    if (line.starts_with("Encoded: ") && encoding == "cl100k_base") {
      std::vector<uint32_t> want = Ids(nlohmann::json::parse(line.substr(9)));
      EXPECT_EQ(Dolma2().Encode(sample), want) << "sample: " << sample;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 64);
}

TEST(Dolma2, SpecialIdsAndSizes) {
  const Tokenizer& t = Dolma2();
  EXPECT_EQ(t.vocab_size(), 100278u);
  EXPECT_EQ(t.embedding_rows(), 100352u);
  EXPECT_EQ(t.eos_id(), 100257u);
  EXPECT_EQ(t.pad_id(), 100277u);
  EXPECT_EQ(t.TokenBytes(100257), "<|endoftext|>");
  EXPECT_EQ(t.TokenBytes(100277), "<|pad|>");
  EXPECT_EQ(t.TokenBytes(100275), "<|extra_id_10|>");
  EXPECT_EQ(t.added_tokens().tokens().size(), 22u);
  EXPECT_THROW(t.TokenBytes(100278), Error);
  EXPECT_THROW(t.Decode(std::vector<uint32_t>{100352}), Error);
}

TEST(Dolma2, AddedTokensAreLiteralLeftmostLongest) {
  const Tokenizer& t = Dolma2();
  EXPECT_EQ(t.Encode("a <|endoftext|> b"), (std::vector<uint32_t>{64, 220, 100257, 293}));
  EXPECT_EQ(t.Encode("<|extra_id_10|>"), (std::vector<uint32_t>{100275}));
  EXPECT_EQ(t.Encode("<|extra_id_1|><|pad|>"), (std::vector<uint32_t>{100266, 100277}));
  // Near misses are ordinary text.
  for (std::string s : {"<|im_sep|>", "<|endoftext|", "|||phone_number|||", "<|extra_id_11|>"}) {
    for (uint32_t id : t.Encode(s)) EXPECT_LT(id, 100256u) << s;
    EXPECT_EQ(t.Decode(t.Encode(s)), s);
  }
  // EncodeOrdinary treats the added strings as text.
  std::vector<uint32_t> plain;
  t.EncodeOrdinary("<|endoftext|>", &plain);
  EXPECT_GT(plain.size(), 1u);
  for (uint32_t id : plain) EXPECT_LT(id, 100256u);
}

TEST(Dolma2, InvalidUtf8IsRefusedWithOffset) {
  std::string bad = "ok \xC3\x28 text";
  try {
    Dolma2().Encode(bad);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid UTF-8 at byte 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Dolma2().Encode(std::string("\xED\xA0\x80")), Error);  // surrogate
  EXPECT_THROW(Dolma2().Encode(std::string("abc\xF0\x9F")), Error);   // truncated
}

TEST(Dolma2, RoundTripsArbitraryValidText) {
  // Long runs exercise the heap merge path and the regex engine's stack.
  std::string letters(300000, 'x'), spaces(300000, ' '), digits(100000, '7');
  std::string mixed;
  for (int i = 0; i < 5000; ++i) mixed += "\t \u00a0\u3000e\u0301\U0001F600<|pad|>\r\n";
  for (const std::string& s : {letters, spaces, digits, mixed, spaces + "x" + spaces}) {
    std::vector<uint32_t> ids = Dolma2().Encode(s);
    EXPECT_EQ(Dolma2().Decode(ids), s);
  }
}

TEST(Dolma2, RankFileHashIsChecked) {
  std::string good = ReadFile(std::string(REPLICA_SOURCE_DIR) + "/data/cl100k_base.tiktoken");
  std::string path = ::testing::TempDir() + "/bad_cl100k.tiktoken";
  std::string bad = good;
  bad[10] = bad[10] == 'A' ? 'B' : 'A';
  WriteFileAtomic(path, bad);
  try {
    LoadDolma2Tokenizer(path);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sha256"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LoadDolma2Tokenizer(::testing::TempDir() + "/missing.tiktoken"), Error);
}

TEST(Dolma2, RegistryFindsBundledRankFile) {
  const Tokenizer& t = SharedTokenizer("dolma2");
  EXPECT_EQ(t.info().source_sha256, kCl100kSha256);
  EXPECT_EQ(&t, &SharedTokenizer("dolma2"));
  EXPECT_THROW(LoadTokenizer("gpt5"), Error);
}

}  // namespace
}  // namespace replica

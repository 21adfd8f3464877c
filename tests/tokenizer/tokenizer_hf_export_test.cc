// dolma2 written as a Hugging Face tokenizer.json (what `replica convert` puts beside exported
// weights) loads back through the tokenizer.json reader and encodes the dolma2 oracle texts
// (tests/data/oracles/tokenizer) exactly as dolma2 does, with and without the whole-piece
// shortcut (so the derived merges themselves are right); decoding through the file's vocab gives
// the same bytes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "tokenizer/tokenizer_hf.h"
#include "tokenizer/tokenizer_hf_export.h"
#include "test_tokenizer_util.h"
#include "testing/util.h"

namespace replica {
namespace {

TEST(HfTokenizerExport, Dolma2RoundTripsThroughTokenizerJson) {
  const Tokenizer& d = testing::Dolma2();
  const test::TempDir tmp("tok-export");
  const std::string dir = tmp.str();
  const std::vector<std::string> files = WriteHfTokenizerFiles(d, dir, 65536);
  EXPECT_EQ(files.size(), 3u);
  const Tokenizer hf = LoadHfTokenizerJson(dir + "/tokenizer.json");
  EXPECT_EQ(hf.vocab_size(), d.vocab_size());
  EXPECT_EQ(hf.eos_id(), d.eos_id());
  EXPECT_EQ(hf.pad_id(), d.pad_id());

  // The merges alone (no whole-piece lookup) must rebuild every token.
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "/tokenizer.json"));
  EXPECT_LE(j["model"]["merges"].size(), d.bpe().num_tokens() - 256);
  EXPECT_GT(j["model"]["merges"].size(), d.bpe().num_tokens() - 300);
  j["model"]["ignore_merges"] = false;
  WriteFileAtomic(dir + "/merges_only.json", j.dump());
  const Tokenizer merges_only = LoadHfTokenizerJson(dir + "/merges_only.json");

  std::ifstream in(std::string(REPLICA_TEST_DATA) + "/oracles/tokenizer/dolma2-public.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const nlohmann::json o = nlohmann::json::parse(line);
    const std::string text = o["text"];
    const std::vector<uint32_t> want = d.Encode(text);
    EXPECT_EQ(hf.Encode(text), want) << text;
    EXPECT_EQ(merges_only.Encode(text), want) << text;
    EXPECT_EQ(hf.Decode(want), text);
    ++n;
  }
  EXPECT_EQ(n, 60);
  const nlohmann::json config = nlohmann::json::parse(ReadFile(dir + "/tokenizer_config.json"));
  EXPECT_EQ(config["eos_token"], "<|endoftext|>");
  EXPECT_EQ(config["pad_token"], "<|pad|>");
  EXPECT_EQ(config["model_max_length"], 65536);
}

}  // namespace
}  // namespace replica

// The Hugging Face tokenizer.json loader, on a hand-made byte-level BPE (tests/data/tokenizer/
// tiny_bytelevel_bpe.tokenizer.json). Merges, by rank: 0 "h e", 1 "l l", 2 "he ll", 3 "hell o",
// 4 " w", 5 "o r", 6 " w" + "or". Ids: bytes 0..255 are their own ids, merge k makes id 256 + k,
// "<|endoftext|>" = 263, "<pad>" = 264.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "tokenizer/tokenizer_hf.h"
#include "tokenizer/tokenizer_registry.h"

namespace replica {
namespace {

using Ids = std::vector<uint32_t>;
const std::string kTiny = std::string(REPLICA_TEST_DATA) + "/tokenizer/tiny_bytelevel_bpe.tokenizer.json";

TEST(HfTokenizer, LoadsTinyByteLevelBpe) {
  Tokenizer t = LoadHfTokenizerJson(kTiny);
  EXPECT_EQ(t.vocab_size(), 265u);
  EXPECT_EQ(t.eos_id(), 263u);
  EXPECT_EQ(t.pad_id(), 264u);
  EXPECT_EQ(t.bpe().num_merges(), 7u);
  // h e -> he; l l -> ll; he ll -> hell; hell o -> hello.
  EXPECT_EQ(t.Encode("hello"), (Ids{259}));
  // " world": " w" (rank 4) first, then "or" (5), then " w"+"or" (6); "l", "d" stay bytes.
  EXPECT_EQ(t.Encode(" world"), (Ids{262, 'l', 'd'}));
  // Equal ranks merge leftmost first.
  EXPECT_EQ(t.Encode("lll"), (Ids{257, 'l'}));
  // GPT-2 regex splits "hello world" into "hello", " world"; added tokens are cut out first.
  EXPECT_EQ(t.Encode("hello<|endoftext|> world"), (Ids{259, 263, 262, 'l', 'd'}));
  EXPECT_EQ(t.Encode("<pad><pad>"), (Ids{264, 264}));
  // Bytes outside ASCII are their own ids here (no merges touch them).
  EXPECT_EQ(t.Encode("\u00e9"), (Ids{0xC3, 0xA9}));
  EXPECT_EQ(t.Decode(Ids{259, 263, 262, 'l', 'd'}), "hello<|endoftext|> world");
  EXPECT_EQ(t.TokenBytes(0x20), " ");  // byte-level 'Ġ' decodes to the space byte
  EXPECT_EQ(t.embedding_rows(), 384u);
}

TEST(HfTokenizer, SharedThroughRegistryByPath) {
  const Tokenizer& t = SharedTokenizer(kTiny);
  EXPECT_EQ(t.Encode("hello"), (Ids{259}));
}

TEST(HfTokenizer, ByteLevelTableMatchesGpt2) {
  EXPECT_EQ(ByteLevelCodePoint('!'), uint32_t{'!'});
  EXPECT_EQ(ByteLevelCodePoint(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(ByteLevelCodePoint('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(ByteLevelCodePoint(0), 0x100u);
  EXPECT_EQ(ByteLevelCodePoint(0xAD), 0x143u);  // the last of the remapped bytes
}

// Writes a variant of the tiny tokenizer with `edit` applied, returns its path.
template <typename Edit>
std::string Variant(const std::string& name, Edit edit) {
  nlohmann::json j = nlohmann::json::parse(ReadFile(kTiny));
  edit(j);
  std::string path = ::testing::TempDir() + "/" + name + ".tokenizer.json";
  WriteFileAtomic(path, j.dump());
  return path;
}

TEST(HfTokenizer, SplitSequencePreTokenizer) {
  std::string path = Variant("split", [](nlohmann::json& j) {
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", "\\p{N}{1,3}|[^\\p{N}]+"}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  });
  Tokenizer t = LoadHfTokenizerJson(path);
  // Pieces "hello", "1234" -> "123", "4": digits are bytes.
  EXPECT_EQ(t.Encode("hello1234"), (Ids{259, '1', '2', '3', '4'}));
}

TEST(HfTokenizer, IgnoreMergesLooksUpWholePieceFirst) {
  // Add a vocabulary entry "lll" with no merge producing it: only the whole-piece lookup finds it.
  auto add_lll = [](nlohmann::json& j) { j["model"]["vocab"]["lll"] = 270; };
  EXPECT_EQ(LoadHfTokenizerJson(Variant("no_ignore", add_lll)).Encode("lll"), (Ids{257, 'l'}));
  std::string path = Variant("ignore", [&](nlohmann::json& j) {
    add_lll(j);
    j["model"]["ignore_merges"] = true;
  });
  EXPECT_EQ(LoadHfTokenizerJson(path).Encode("lll"), (Ids{270}));
}

TEST(HfTokenizer, MergesAsPairs) {
  std::string path = Variant("pairs", [](nlohmann::json& j) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& m : j["model"]["merges"]) {
      std::string s = m;
      pairs.push_back({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
    }
    j["model"]["merges"] = pairs;
  });
  EXPECT_EQ(LoadHfTokenizerJson(path).Encode("hello world"), (Ids{259, 262, 'l', 'd'}));
}

void ExpectRefused(const std::string& name, const std::function<void(nlohmann::json&)>& edit,
                   const std::string& needle) {
  try {
    LoadHfTokenizerJson(Variant(name, edit));
    ADD_FAILURE() << name << ": expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << name << ": " << e.what();
  }
}

TEST(HfTokenizer, UnsupportedFeaturesAreRefusedByName) {
  ExpectRefused("normalizer", [](auto& j) { j["normalizer"] = {{"type", "NFC"}}; }, "normalizer");
  ExpectRefused("prefix", [](auto& j) { j["pre_tokenizer"]["add_prefix_space"] = true; },
                "add_prefix_space");
  ExpectRefused("lstrip", [](auto& j) { j["added_tokens"][0]["lstrip"] = true; }, "lstrip");
  ExpectRefused("wordpiece", [](auto& j) { j["model"]["type"] = "WordPiece"; }, "BPE only");
  ExpectRefused("dropout", [](auto& j) { j["model"]["dropout"] = 0.1; }, "dropout");
  ExpectRefused("missing_byte", [](auto& j) { j["model"]["vocab"].erase("!"); }, "0x21");
  ExpectRefused("bad_merge", [](auto& j) { j["model"]["merges"].push_back("x yz"); },
                "merges[7]");
  ExpectRefused("bad_regex", [](auto& j) {
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers",
                           {{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}},
                             {"behavior", "Isolated"}, {"invert", false}},
                            {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  }, "does not compile");
  ExpectRefused("not_bytelevel", [](auto& j) { j["model"]["vocab"]["\u4e2d"] = 300; },
                "byte-level alphabet");
  ExpectRefused("shared_added_id", [](auto& j) { j["added_tokens"][1]["id"] = 263; },
                "added tokens '<|endoftext|>' and '<pad>' share id 263");
  EXPECT_THROW(LoadHfTokenizerJson(::testing::TempDir() + "/none.json"), Error);
  std::string garbage = ::testing::TempDir() + "/garbage.json";
  WriteFileAtomic(garbage, "{not json");
  EXPECT_THROW(LoadHfTokenizerJson(garbage), Error);
}

}  // namespace
}  // namespace replica

// The bundled corpus (data/corpus): its split, and dolma2 round trips and chunked encoding on it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>
#include <set>

#include "tokenizer/text_reader.h"
#include "tokenizer/tokenizer_batch.h"
#include "test_tokenizer_util.h"

namespace replica {
namespace {

using testing::Dolma2;

struct Doc {
  std::string id, text;
};

std::vector<Doc> ReadCorpus(const std::string& name) {
  TextReader r(std::string(REPLICA_SOURCE_DIR) + "/data/corpus/" + name);
  std::vector<Doc> docs;
  std::string line;
  while (r.ReadLine(&line)) {
    auto j = nlohmann::json::parse(line);
    docs.push_back({j.at("id"), j.at("text")});
  }
  return docs;
}

const std::vector<Doc>& AllDocs() {
  static const std::vector<Doc> all = [] {
    std::vector<Doc> v;
    for (const char* f : {"sotu.jsonl.zst", "heldout_sotu.jsonl.zst", "moby_dick.jsonl.zst"}) {
      auto d = ReadCorpus(f);
      v.insert(v.end(), d.begin(), d.end());
    }
    return v;
  }();
  return all;
}

TEST(Corpus, HeldOutAddressesAreNotInTraining) {
  auto train = ReadCorpus("sotu.jsonl.zst"), held = ReadCorpus("heldout_sotu.jsonl.zst");
  EXPECT_EQ(train.size(), 221u);
  EXPECT_EQ(held.size(), 12u);
  EXPECT_EQ(ReadCorpus("moby_dick.jsonl.zst").size(), 138u);
  std::set<std::string> train_texts;
  for (const Doc& d : train) {
    EXPECT_LT(std::stoi(d.id.substr(5, 4)), 2010) << d.id;  // "sotu/YYYY_..."
    train_texts.insert(d.text);
  }
  for (const Doc& d : held) {
    EXPECT_GE(std::stoi(d.id.substr(5, 4)), 2010) << d.id;
    EXPECT_FALSE(train_texts.count(d.text)) << d.id;
  }
}

TEST(Corpus, Dolma2RoundTripsEveryDocument) {
  std::vector<std::string_view> texts;
  for (const Doc& d : AllDocs()) texts.emplace_back(d.text);
  auto ids = EncodeBatch(Dolma2(), texts);
  size_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    tokens += ids[i].size();
    ASSERT_EQ(Dolma2().Decode(ids[i]), texts[i]) << AllDocs()[i].id;
  }
  EXPECT_GT(tokens, 2000000u);
}

TEST(Corpus, ChunkedEncodingEqualsWholeEncoding) {
  const Tokenizer& t = Dolma2();
  size_t cut_docs = 0;
  for (const Doc& d : AllDocs()) {
    auto chunks = t.SplitForParallelEncode(d.text, 2000);
    cut_docs += chunks.size() > 1;
    std::vector<uint32_t> joined;
    for (std::string_view c : chunks) t.Encode(c, &joined);
    ASSERT_EQ(joined, t.Encode(d.text)) << d.id;
  }
  EXPECT_GT(cut_docs, 100u);
}

TEST(Corpus, ChunkedEncodingOnAdversarialText) {
  // Whitespace, punctuation, contractions and added tokens right before "\n<letter>" cuts.
  const Tokenizer& t = Dolma2();
  const std::vector<std::string> atoms = {"\n", "\r\n", " ", "  ", "\t", "\u00a0", "\u3000", "x",
                                          "Q", "'s", "'", "?!", "12", "\u00e9", "\u0301", ".",
                                          "<|endoftext|>", "\u0085", "<", "|"};
  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    std::string text;
    for (int k = 0; k < 400; ++k) text += atoms[rng() % atoms.size()];
    for (size_t target : {1, 7, 50}) {
      std::vector<uint32_t> joined;
      for (std::string_view c : t.SplitForParallelEncode(text, target)) t.Encode(c, &joined);
      ASSERT_EQ(joined, t.Encode(text)) << ::testing::PrintToString(text);
    }
  }
}

}  // namespace
}  // namespace replica

// Perplexity and multiple-choice evaluators against an independent computation with a toy model
// (toy_model.h). The same checks against the real Olmo 3 model on the fixtures are in
// model_eval_test.cc.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "eval/multiple_choice.h"
#include "eval/perplexity.h"
#include "toy_model.h"

namespace replica::eval {
namespace {

using testing::ToyBigram;

constexpr int32_t kEos = 256, kPad = 257;

EvalSet Docs(const std::vector<std::string>& texts) {
  std::string jsonl;
  for (size_t i = 0; i < texts.size(); ++i) {
    jsonl += nlohmann::json{{"id", "d" + std::to_string(i)}, {"text", texts[i]}}.dump() + "\n";
  }
  return ParseEvalSet(jsonl, "docs.jsonl");
}

TEST(Perplexity, MatchesIndependentComputationAndIsBatchInvariant) {
  ToyBigram model(258);
  auto enc = MakeByteEncoder(kEos, kPad);
  EvalSet set = Docs({"Fellow citizens!", "a", "The state of the union is strong.", "xyz"});
  const int64_t seq_len = 16;
  // Independent: each document's bytes + EOS, first seq_len tokens, predict t+1 from t.
  double ce = 0;
  int64_t n = 0, truncated = 0;
  for (const PplDoc& d : set.docs) {
    std::vector<int32_t> x(d.text.begin(), d.text.end());
    x.push_back(kEos);
    if (x.size() > static_cast<size_t>(seq_len)) {
      x.resize(seq_len);
      ++truncated;
    }
    for (size_t t = 0; t + 1 < x.size(); ++t, ++n) ce -= model.LogProb(x[t], x[t + 1]);
  }
  auto inst = BuildPplInstances(set, *enc, seq_len);
  for (int64_t batch : {1, 2, 3, 8}) {
    PplResult r = EvaluatePerplexity(inst, model.AsLossFn(), batch, kPad);
    EXPECT_EQ(r.docs, 4);
    EXPECT_EQ(r.tokens, n);
    EXPECT_EQ(r.truncated_docs, truncated);
    EXPECT_NEAR(r.ce_loss(), ce / n, 1e-12);
    EXPECT_NEAR(r.ppl(), std::exp(ce / n), 1e-9);
  }
  EXPECT_EQ(truncated, 2);
  EXPECT_EQ(inst[1].tokens, (std::vector<int32_t>{'a', kEos}));  // EOS appended
}

TEST(Perplexity, RejectsBadSequenceLength) {
  auto enc = MakeByteEncoder(kEos, kPad);
  EXPECT_THROW(BuildPplInstances(Docs({"x"}), *enc, 1), Error);
}

EvalSet Items() {
  const char* jsonl =
      "{\"id\":\"q0\",\"context\":\"The sky is\",\"choices\":[\" blue\",\" green\",\" a\"],\"gold\":0}\n"
      "{\"id\":\"q1\",\"context\":\"Two plus two is\",\"choices\":[\" five\",\" four\"],\"gold\":1}\n"
      "{\"id\":\"q2\",\"context\":\"Caf\",\"choices\":[\"\xc3\xa9 au lait\",\"e\"],\"gold\":0}\n";
  return ParseEvalSet(jsonl, "mc.jsonl");
}

TEST(MultipleChoice, MatchesIndependentComputation) {
  ToyBigram model(258, 7);
  auto enc = MakeByteEncoder(kEos, kPad);
  EvalSet set = Items();
  auto req = BuildMcRequests(set, *enc, 64);
  McResult r = EvaluateMultipleChoice(req, model.AsLossFn());
  int64_t correct = 0, correct_norm = 0;
  double bpb = 0;
  for (size_t i = 0; i < set.items.size(); ++i) {
    const McItem& item = set.items[i];
    std::vector<double> s, norm;
    for (size_t c = 0; c < item.choices.size(); ++c) {
      // S = Σ log p(cont_t | prefix): the first continuation byte follows the context's last byte.
      std::string full = item.context + item.choices[c];
      double score = 0;
      for (size_t t = item.context.size(); t < full.size(); ++t) {
        score += model.LogProb(static_cast<unsigned char>(full[t - 1]), static_cast<unsigned char>(full[t]));
      }
      EXPECT_NEAR(r.scores[i][c], score, 1e-12) << item.id << " choice " << c;
      s.push_back(score);
      norm.push_back(score / Utf8Chars(item.choices[c]));
    }
    correct += std::max_element(s.begin(), s.end()) - s.begin() == item.gold;
    correct_norm += std::max_element(norm.begin(), norm.end()) - norm.begin() == item.gold;
    bpb += -s[item.gold] / item.choices[item.gold].size() / std::log(2.0);
  }
  EXPECT_EQ(Utf8Chars("\xc3\xa9 au lait"), 9);  // é is one character, two bytes
  nlohmann::json j = r.ToJson();
  EXPECT_EQ(j["items"], 3);
  EXPECT_DOUBLE_EQ(j["acc"].get<double>(), correct / 3.0);
  EXPECT_DOUBLE_EQ(j["len_norm_acc"].get<double>(), correct_norm / 3.0);
  EXPECT_NEAR(j["bpb"].get<double>(), bpb / 3.0, 1e-12);
}

TEST(MultipleChoice, ItemsLongerThanTheContextAreClearErrors) {
  auto enc = MakeByteEncoder(kEos, kPad);
  EvalSet set = Items();
  // "The sky is" + " blue" - 1 = 14 tokens > 12.
  try {
    BuildMcRequests(set, *enc, 12);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mc.jsonl:1: item \"q0\" choice 0 needs 14 tokens"), std::string::npos)
        << e.what();
  }
  // Left-truncation on request, as OLMES: the query keeps the last 12 tokens.
  auto req = BuildMcRequests(set, *enc, 12, /*truncate_context=*/true);
  EXPECT_EQ(req[1].choices[0].query.size(), 12u);
  EXPECT_EQ(req[1].choices[0].ctx_len, 12 - 5 + 1);
  EXPECT_TRUE(req[1].truncated);
  // A continuation longer than the whole sequence cannot be scored at all.
  EXPECT_THROW(BuildMcRequests(set, *enc, 4, true), Error);
}

}  // namespace
}  // namespace replica::eval

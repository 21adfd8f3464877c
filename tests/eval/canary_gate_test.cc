#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "eval/canary.h"
#include "eval/eval_gate.h"
#include "eval/eval_suite.h"
#include "toy_model.h"

namespace replica::eval {
namespace {

TEST(Canary, TwinIsDeterministicAndDistinct) {
  EvalSet a = MakeCanarySet("canary", 11, 8, 16, 500);
  EvalSet a2 = MakeCanarySet("canary", 11, 8, 16, 500);
  EXPECT_EQ(a.docs[3].tokens, a2.docs[3].tokens);
  EvalSet b = MakeCanaryTwin(a, 500);
  EvalSet b2 = MakeCanaryTwin(a2, 500);
  ASSERT_EQ(b.docs.size(), 8u);
  EXPECT_EQ(b.docs[0].tokens.size(), 16u);
  EXPECT_EQ(b.docs[5].tokens, b2.docs[5].tokens);
  EXPECT_NE(b.docs[0].tokens, a.docs[0].tokens);
  for (const auto& d : b.docs)
    for (int32_t t : d.tokens) ASSERT_TRUE(t >= 0 && t < 500);
}

// A model that has "memorised" some sequences: it predicts their next token with high probability.
LossFn Memorising(const testing::ToyBigram& base, const EvalSet& memorised) {
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (const auto& d : memorised.docs)
    for (size_t t = 0; t + 1 < d.tokens.size(); ++t) pairs.insert({d.tokens[t], d.tokens[t + 1]});
  return [&base, pairs](const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T) {
    CrossEntropySums s;
    for (int64_t i = 0; i < B * T; ++i) {
      if (labels[i] == kIgnoreLabel) continue;
      s.ce_sum += pairs.count({tokens[i], labels[i]}) ? 0.5 : -base.LogProb(tokens[i], labels[i]);
      s.tokens += 1;
    }
    return s;
  };
}

TEST(Canary, AlarmFiresOnlyWhenTheRegisteredSetBecomesEasier) {
  testing::ToyBigram model(300, 3);
  EvalSet a = MakeCanarySet("canary", 5, 64, 32, 300);
  EvalSet b = MakeCanaryTwin(a, 300);
  CanaryResult clean = EvaluateCanaries(a, b, model.AsLossFn(), 64, 4.0);
  EXPECT_FALSE(clean.alarm);
  EXPECT_LT(std::abs(clean.z), 4.0);
  EXPECT_GT(clean.registered_ce, 0.0);
  CanaryResult leaked = EvaluateCanaries(a, b, Memorising(model, a), 64, 4.0);
  EXPECT_TRUE(leaked.alarm);
  EXPECT_GT(leaked.gap, 1.0);
  // Memorising the twin instead makes the registered set look harder: no alarm.
  CanaryResult other = EvaluateCanaries(a, b, Memorising(model, b), 64, 4.0);
  EXPECT_FALSE(other.alarm);
}

TEST(EvalSuite, RunsEverySetAndTheCanaries) {
  testing::ToyBigram model(300, 4);
  auto enc = MakeByteEncoder(256, 257);
  std::vector<EvalSet> sets;
  sets.push_back(ParseEvalSet("{\"id\":\"a\",\"text\":\"held out text\"}\n", "held.jsonl"));
  sets.push_back(ParseEvalSet(
      "{\"id\":\"q\",\"context\":\"Sky\",\"choices\":[\" blue\",\" red\"],\"gold\":0}\n", "cloze.jsonl"));
  EvalSuiteOptions o;
  o.seq_len = 32;
  o.canary_vocab = 256;
  EvalSuite suite(std::move(sets), *enc, o,
                  std::make_unique<EvalSet>(MakeCanarySet("canary_registered", 1, 16, 24, 256)));
  nlohmann::json j = suite.Run(model.AsLossFn());
  EXPECT_EQ(j["held"]["kind"], "perplexity");
  EXPECT_EQ(j["held"]["tokens"], 13);  // 13 bytes + EOS, first token unpredicted
  EXPECT_EQ(j["cloze"]["kind"], "multiple_choice");
  EXPECT_EQ(j["canary"]["docs"], 16);
  EXPECT_FALSE(j["canary"]["alarm"].get<bool>());
  // Duplicate set names are refused.
  std::vector<EvalSet> dup;
  dup.push_back(ParseEvalSet("{\"id\":\"a\",\"text\":\"x\"}\n", "a/held.jsonl"));
  dup.push_back(ParseEvalSet("{\"id\":\"a\",\"text\":\"x\"}\n", "b/held.jsonl"));
  EXPECT_THROW(EvalSuite(std::move(dup), *enc, o), Error);
}

// Documents longer than the sequence length are scored on a prefix: the suite says so (notes(),
// logged as a warning) instead of truncating silently; sets that fit get no note.
TEST(EvalSuite, SaysWhenDocumentsAreTruncated) {
  auto enc = MakeByteEncoder(256, 257);
  EvalSuiteOptions o;
  o.seq_len = 8;
  std::vector<EvalSet> sets;
  sets.push_back(ParseEvalSet("{\"id\":\"a\",\"text\":\"a long held out document\"}\n"
                              "{\"id\":\"b\",\"text\":\"short\"}\n",
                              "held.jsonl"));
  EvalSuite suite(std::move(sets), *enc, o);
  ASSERT_EQ(suite.notes().size(), 1u);
  EXPECT_NE(suite.notes()[0].find("held: 1 of 2 documents are longer than the sequence length 8"),
            std::string::npos)
      << suite.notes()[0];
  o.seq_len = 64;
  std::vector<EvalSet> fits;
  fits.push_back(ParseEvalSet("{\"id\":\"a\",\"text\":\"a long held out document\"}\n",
                              "held.jsonl"));
  EXPECT_TRUE(EvalSuite(std::move(fits), *enc, o).notes().empty());
}

nlohmann::json EvalLine(int64_t step, double ce, double acc, bool alarm = false) {
  return {{"step", step},
          {"eval", {{"held", {{"kind", "perplexity"}, {"ce_loss", ce}, {"ppl", std::exp(ce)}, {"tokens", 100}}},
                    {"cloze", {{"kind", "multiple_choice"}, {"acc", acc}, {"len_norm_acc", acc}, {"bpb", 1.0}}},
                    {"canary", {{"alarm", alarm}, {"gap", 0.0}}}}}};
}

TEST(EvalGate, FlagsCandidatesThatAreBetterThanTheReference) {
  std::vector<nlohmann::json> ref{{{"step", 1}, {"loss", 3.0}}, EvalLine(10, 3.0, 0.5), EvalLine(20, 2.5, 0.6)};
  // Identical runs pass.
  EvalGateResult same = CheckEvalGate(ref, ref, {});
  EXPECT_TRUE(same.pass());
  EXPECT_EQ(same.compared, 2 * 5);  // ce_loss, ppl, acc, len_norm_acc, bpb per step
  // Worse is not this gate's business.
  std::vector<nlohmann::json> worse{EvalLine(10, 3.1, 0.4), EvalLine(20, 2.6, 0.5)};
  EXPECT_TRUE(CheckEvalGate(ref, worse, {}).pass());
  // Better beyond the tolerance is suspicious; within it is not.
  std::vector<nlohmann::json> better{EvalLine(10, 3.0, 0.5), EvalLine(20, 2.3, 0.6)};
  EvalGateResult r = CheckEvalGate(ref, better, {0.01});
  EXPECT_FALSE(r.pass());
  ASSERT_EQ(r.suspicious.size(), 2u);  // ce_loss and ppl at step 20
  EXPECT_EQ(r.suspicious[0].step, 20);
  EXPECT_EQ(r.suspicious[0].set, "held");
  EXPECT_EQ(r.suspicious[0].metric, "ce_loss");
  EXPECT_NEAR(r.suspicious[0].improvement, 0.2, 1e-12);
  EXPECT_TRUE(CheckEvalGate(ref, better, {0.3}).suspicious.size() == 1);  // ppl moved by 3.9
  std::vector<nlohmann::json> acc_better{EvalLine(10, 3.0, 0.9)};
  EXPECT_EQ(CheckEvalGate(ref, acc_better, {0.1}).suspicious.size(), 2u);  // acc, len_norm_acc
  // A canary alarm in the candidate fails the gate.
  std::vector<nlohmann::json> alarm{EvalLine(10, 3.0, 0.5, true)};
  EvalGateResult ra = CheckEvalGate(ref, alarm, {});
  EXPECT_FALSE(ra.pass());
  EXPECT_EQ(ra.canary_alarm_steps, std::vector<int64_t>{10});
  EXPECT_EQ(ra.ToJson(0.0)["pass"], false);
}

TEST(EvalGate, MetricsLinesWithOutOfRangeNumbersAreErrorsNamingTheLine) {
  const std::string dir = ::testing::TempDir() + "/eval_gate_overflow";
  std::filesystem::create_directories(dir);
  const std::string good = dir + "/good.jsonl", bad = dir + "/bad.jsonl";
  std::ofstream(good) << "{\"step\": 1, \"loss\": 3.0}\n";
  std::ofstream(bad) << "{\"step\": 1, \"loss\": 3.0}\n{\"step\": 2, \"loss\": 1e999}\n";
  try {
    CheckEvalGateFiles(good, bad, {});
    ADD_FAILURE() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2: not valid JSON"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace replica::eval

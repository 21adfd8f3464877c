// Evaluator numbers on the real Olmo 3 model (tests/data/olmo3 fixtures, bytes tokenizer with the
// fixture's EOS 510 / pad 511) against an independent computation from the model's own logits:
// ForwardLogits on each unpadded sequence, log-softmax in double, sums taken here.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "ops/cpu/cpu_backend.h"
#include "eval/eval_suite.h"
#include "eval/model_loader.h"
#include "hf/hf_weights.h"
#include "model/model_config.h"

namespace replica::eval {
namespace {

const std::string kDir = std::string(REPLICA_TEST_DATA) + "/olmo3/tiny-mha";

// log p(x[t+1] | x[0..t]) for every t, from the model's logits.
std::vector<double> LogProbs(InferenceModel& model, const std::vector<int32_t>& x) {
  const int64_t T = static_cast<int64_t>(x.size()), V = model.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(T * V));
  model.ForwardLogits(x.data(), 1, T, logits.data());
  std::vector<double> out;
  for (int64_t t = 0; t + 1 < T; ++t) {
    const float* row = logits.data() + t * V;
    double m = row[0];
    for (int64_t v = 1; v < V; ++v) m = std::max<double>(m, row[v]);
    double s = 0;
    for (int64_t v = 0; v < V; ++v) s += std::exp(static_cast<double>(row[v]) - m);
    out.push_back(row[x[t + 1]] - m - std::log(s));
  }
  return out;
}

TEST(ModelEval, PerplexityAndMultipleChoiceMatchTheModelsLogits) {
  const int64_t seq_len = 40;
  EvalModel m = LoadEvalModel(kDir, seq_len, CpuBackend());
  EXPECT_EQ(m.source, "hf:" + kDir);
  InferenceModel& model = *m.model;
  auto enc = MakeByteEncoder(510, 511);
  EvalSet docs = ParseEvalSet(
      "{\"id\":\"a\",\"text\":\"Fellow citizens of the Senate\"}\n"
      "{\"id\":\"b\",\"text\":\"short\"}\n"
      "{\"id\":\"c\",\"text\":\"A document far longer than the forty-token sequence length, so it is truncated.\"}\n"
      "{\"id\":\"d\",\"text\":\"the state of the union\"}\n",
      "held.jsonl");
  EvalSet items = ParseEvalSet(
      "{\"id\":\"q0\",\"context\":\"The sky is\",\"choices\":[\" blue\",\" green\",\" a\"],\"gold\":0}\n"
      "{\"id\":\"q1\",\"context\":\"Two plus two is\",\"choices\":[\" five\",\" four\"],\"gold\":1}\n",
      "cloze.jsonl");

  // Independent perplexity: each document + EOS, first seq_len tokens, no padding, batch 1.
  double ce = 0;
  int64_t n = 0;
  for (const PplDoc& d : docs.docs) {
    std::vector<int32_t> x(d.text.begin(), d.text.end());
    x.push_back(510);
    if (x.size() > static_cast<size_t>(seq_len)) x.resize(seq_len);
    for (double lp : LogProbs(model, x)) ce -= lp, ++n;
  }
  // Independent choice scores: context + choice, summing the continuation positions.
  std::vector<std::vector<double>> scores;
  for (const McItem& it : items.items) {
    scores.emplace_back();
    for (const std::string& c : it.choices) {
      std::string full = it.context + c;
      std::vector<int32_t> x(full.begin(), full.end());
      std::vector<double> lp = LogProbs(model, x);
      double s = 0;
      for (size_t t = it.context.size(); t < full.size(); ++t) s += lp[t - 1];
      scores.back().push_back(s);
    }
  }

  LossFn loss = ModelLossFn(model);
  for (int64_t batch : {1, 3}) {  // padding to the longest row must not change anything
    PplResult r = EvaluatePerplexity(BuildPplInstances(docs, *enc, seq_len), loss, batch, 511);
    EXPECT_EQ(r.tokens, n);
    EXPECT_EQ(r.truncated_docs, 1);
    EXPECT_NEAR(r.ce_loss(), ce / n, 2e-6 * ce / n) << "batch " << batch;
  }
  McResult mc = EvaluateMultipleChoice(BuildMcRequests(items, *enc, seq_len), loss);
  for (size_t i = 0; i < scores.size(); ++i) {
    for (size_t c = 0; c < scores[i].size(); ++c) {
      EXPECT_NEAR(mc.scores[i][c], scores[i][c], 2e-6 * std::abs(scores[i][c])) << i << "," << c;
    }
  }
  std::printf("tiny-mha: held ce_loss %.9f (independent %.9f), %lld tokens\n",
              EvaluatePerplexity(BuildPplInstances(docs, *enc, seq_len), loss, 3, 511).ce_loss(), ce / n,
              static_cast<long long>(n));
}

TEST(ModelEval, TokensOutsideTheVocabularyAreAnError) {
  EvalModel m = LoadEvalModel(kDir, 16, CpuBackend());
  LossFn loss = ModelLossFn(*m.model);
  std::vector<int32_t> tokens{1, 2, 600}, labels{2, 600, kIgnoreLabel};
  EXPECT_THROW(loss(tokens.data(), labels.data(), 1, 3), Error);
}

}  // namespace
}  // namespace replica::eval

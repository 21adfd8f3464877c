// EvalSuite's progress: the callback sees every model call, and the positions it counts add up to
// WorkPositions() exactly (so the progress line ends at 100%, not short of it or past it), for
// perplexity batches with padding, multiple-choice requests and canaries alike.
#include <gtest/gtest.h>

#include "eval/canary.h"
#include "eval/eval_suite.h"
#include "toy_model.h"

namespace replica::eval {
namespace {

TEST(EvalSuite, ProgressCountsEveryPositionOfWorkPositions) {
  testing::ToyBigram model(300, 4);
  auto enc = MakeByteEncoder(256, 257);
  std::vector<EvalSet> sets;
  sets.push_back(ParseEvalSet("{\"id\":\"a\",\"text\":\"held out text\"}\n"
                              "{\"id\":\"b\",\"text\":\"a somewhat longer held out text\"}\n"
                              "{\"id\":\"c\",\"text\":\"x\"}\n",
                              "held.jsonl"));
  sets.push_back(ParseEvalSet(
      "{\"id\":\"q\",\"context\":\"Sky\",\"choices\":[\" blue\",\" red\"],\"gold\":0}\n", "cloze.jsonl"));
  EvalSuiteOptions o;
  o.seq_len = 32;
  o.batch_size = 2;  // two batches: [a, b] padded to b's length, then [c]
  o.canary_vocab = 256;
  EvalSuite suite(std::move(sets), *enc, o,
                  std::make_unique<EvalSet>(MakeCanarySet("canary_registered", 1, 4, 24, 256)));
  int64_t seen = 0, calls = 0, last_total = -1;
  std::vector<std::string> order;
  const LossFn inner = model.AsLossFn();
  const LossFn counting = [&](const int32_t* t, const int32_t* l, int64_t B, int64_t T) {
    seen += B * T;
    return inner(t, l, B, T);
  };
  const nlohmann::json plain = suite.Run(model.AsLossFn());
  const nlohmann::json with = suite.Run(counting, [&](int64_t done, int64_t total, const std::string& set) {
    ++calls;
    EXPECT_EQ(done, seen);
    last_total = total;
    if (order.empty() || order.back() != set) order.push_back(set);
  });
  EXPECT_EQ(with, plain);  // progress changes nothing
  EXPECT_EQ(last_total, suite.WorkPositions());
  EXPECT_EQ(seen, suite.WorkPositions());
  EXPECT_EQ(calls, 2 + 2 + 2 * 4);  // 2 ppl batches, 2 choices, 4 canaries and their 4 twins
  EXPECT_EQ(order, (std::vector<std::string>{"held", "cloze", "canaries"}));
}

}  // namespace
}  // namespace replica::eval

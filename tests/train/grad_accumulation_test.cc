// The micro-batch accumulations (train/grad_accumulation.h): the sequential one is the left fold
// of the micro-batch gradients in natural order, each computed from zero, sum starting at zero
// (checked against that fold written out here), with the loss sums folded the same way; the tree
// one runs MicroBatchOrder. And InitParamsRange (train/init.h) gives, range by range, the bits of
// InitParams on the whole buffer.
#include "train/grad_accumulation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "model/olmo3.h"
#include "train/init.h"

namespace replica {
namespace {

ModelConfig Tiny() {
  return ModelConfig::FromHfJson({{"model_type", "olmo3"},
                                  {"vocab_size", 40},
                                  {"hidden_size", 16},
                                  {"intermediate_size", 32},
                                  {"num_hidden_layers", 2},
                                  {"num_attention_heads", 2},
                                  {"num_key_value_heads", 1},
                                  {"rms_norm_eps", 1e-6},
                                  {"rope_theta", 10000.0},
                                  {"sliding_window", 4},
                                  {"max_position_embeddings", 32}},
                                 "tiny test model");
}

TEST(SequentialAccumulation, IsTheLeftFoldInMicroBatchOrder) {
  const int64_t m = 5, T = 6;
  Olmo3Model model(Tiny(), 1, T, CpuBackend());
  InitParams(model.layout(), model.params(), {.seed = 2, .std = 0.02});
  std::mt19937 rng(8);
  std::vector<int32_t> ids(m * T), labels(m * T);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int32_t>(rng() % 40);
    labels[i] = static_cast<int32_t>(rng() % 40);
  }
  const size_t n = model.grads().size();
  std::vector<float> want(n, 0.0f);
  double want_ce = 0, want_lse = 0;
  for (int64_t k = 0; k < m; ++k) {
    model.grads().Zero();
    const CrossEntropySums s = model.ForwardBackward(&ids[k * T], &labels[k * T], 1, T, 0.1, 1e-4);
    for (size_t i = 0; i < n; ++i) want[i] = want[i] + model.grads().data()[i];
    want_ce = want_ce + s.ce_sum;
    want_lse = want_lse + s.lse_sq_sum;
  }
  SequentialAccumulation acc(model);
  for (int run = 0; run < 2; ++run) {  // a second step starts from zero again
    const std::vector<int64_t>& order = acc.Begin(m);
    ASSERT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
    for (int64_t k : order) {
      const CrossEntropySums s =
          model.ForwardBackward(&ids[k * T], &labels[k * T], 1, T, 0.1, 1e-4);
      acc.Add(k, {s.ce_sum, s.lse_sq_sum});
    }
    EXPECT_EQ(std::memcmp(acc.grads().data(), want.data(), n * sizeof(float)), 0) << "run " << run;
    EXPECT_EQ(acc.scalars()[0], want_ce);
    EXPECT_EQ(acc.scalars()[1], want_lse);
  }
  EXPECT_EQ(&acc.params(), &model.params());
}

TEST(TreeAccumulation, RunsTheEvensFirstOrder) {
  Olmo3Model model(Tiny(), 1, 4, CpuBackend());
  TreeAccumulation acc(model);
  EXPECT_EQ(acc.Begin(8), MicroBatchOrder(8));
  EXPECT_EQ(&acc.grads(), &model.grads());
}

TEST(InitParamsRange, RangesHaveTheWholeBuffersBits) {
  const ParamLayout layout = Tiny().BuildLayout();
  FlatBuffer whole(layout.total_floats());
  InitParams(layout, whole, {.seed = 9, .std = 0.02});
  const size_t total = layout.total_floats();
  for (size_t cut : {size_t{0}, size_t{1}, std::min(size_t{4096}, total), total / 3, total - 7, total}) {
    std::vector<float> a(cut), b(total - cut);
    InitParamsRange(layout, a.data(), 0, cut, {.seed = 9, .std = 0.02});
    InitParamsRange(layout, b.data(), cut, total, {.seed = 9, .std = 0.02});
    // memcmp compares the bits; an empty range has no data pointer to pass it.
    EXPECT_TRUE(cut == 0 || std::memcmp(a.data(), whole.data(), cut * sizeof(float)) == 0) << cut;
    EXPECT_TRUE(cut == total ||
                std::memcmp(b.data(), whole.data() + cut, (total - cut) * sizeof(float)) == 0)
        << cut;
  }
}

}  // namespace
}  // namespace replica

// A rank batch with cu_doc_lens (data::RankBatch, packed instances) trains as the model's masked
// forward of the whole batch: the trainer's step (RunRankBatch -> TrainStep, micro-batches of
// rows k, k+m, ...) gives the loss and gradient norm of one Olmo3Model::ForwardBackward over all
// rows with the batch's cu_doc_lens, and a different loss, gradient norm and update from the same
// tokens without them. One micro-batch of all rows gives the masked forward's loss bit for bit.
#include "train/rank_batch_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "core/error.h"
#include "model/olmo3.h"
#include "testing/random_model.h"
#include "optim/adamw.h"
#include "optim/skip_step.h"
#include "ops/registry.h"
#include "train/grad_reducer.h"

namespace replica {
namespace {

ModelConfig SmallConfig() {
  ModelConfig c;
  c.model_type = "olmo3";
  c.vocab_size = 31;
  c.hidden_size = 32;
  c.intermediate_size = 24;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.rms_norm_eps = 1e-5;
  c.SetPlainRope(10000);
  c.sliding_window = 6;
  c.layer_types = {AttentionType::kSliding, AttentionType::kFull};
  c.max_position_embeddings = 64;
  return c;
}

using test::RandomInit;

constexpr int64_t kRows = 4, kT = 20;
constexpr double kZLoss = 1e-4, kLr = 1e-3;

data::RankBatch PackedBatch(int64_t micro) {
  data::RankBatch b;
  b.seq_len = kT;
  b.micro_batch_instances = micro;
  std::mt19937_64 rng(7);
  for (int64_t r = 0; r < kRows; ++r) b.instances.push_back(static_cast<uint32_t>(r));
  for (int64_t i = 0; i < kRows * kT; ++i) {
    b.input_ids.push_back(static_cast<int32_t>(rng() % 31));
    b.labels.push_back(i % 9 == 4 ? kIgnoreLabel : static_cast<int32_t>(rng() % 31));
  }
  // Rows of mixed documents: a single token, shorter and longer than the window, a whole row.
  b.cu_doc_lens = {0, 1, 8, 20, 40, 43, 55, 60, 71, 80};
  return b;
}

struct Trained {
  StepOutcome outcome;
  std::vector<float> params;
};

Trained TrainOneStep(const data::RankBatch& batch) {
  const ModelConfig c = SmallConfig();
  Olmo3Model m(c, batch.micro_batch_instances, kT, SelectBackend("cpu", Precision::kFp32));
  RandomInit(m, 3);
  AdamWConfig ac;
  AdamW adam(m.layout(), ac, m.backend());
  LocalGradReducer reducer;
  SkipStepRule skip(SkipStepConfig{});
  TrainStep step(m, reducer, adam, skip, batch.micro_batch_instances, kZLoss);
  Trained t;
  t.outcome = RunRankBatch(step, batch, kLr);
  t.params.assign(m.params().data(), m.params().data() + m.params().size());
  return t;
}

struct Masked {
  CrossEntropySums sums;
  double grad_norm = 0;
};

// The model's masked forward and backward of all rows at once.
Masked MaskedForward(const data::RankBatch& b, int64_t N) {
  const ModelConfig c = SmallConfig();
  Olmo3Model m(c, kRows, kT, SelectBackend("cpu", Precision::kFp32));
  RandomInit(m, 3);
  m.grads().Zero();
  Masked r;
  r.sums = m.ForwardBackward(b.input_ids.data(), b.labels.data(), kRows, kT, 1.0 / N, kZLoss,
                             b.cu_doc_lens.data(), static_cast<int64_t>(b.cu_doc_lens.size()));
  r.grad_norm = GlobalGradNorm(m.grads(), m.backend());
  return r;
}

TEST(RankBatchStep, DocumentLengthsTrainAsTheMaskedForward) {
  for (int64_t micro : {int64_t{1}, int64_t{2}, kRows}) {
    SCOPED_TRACE("micro-batch " + std::to_string(micro));
    const data::RankBatch packed = PackedBatch(micro);
    data::RankBatch plain = packed;
    plain.cu_doc_lens.clear();

    const Trained with = TrainOneStep(packed);
    const Trained without = TrainOneStep(plain);
    const Masked masked = MaskedForward(packed, with.outcome.label_tokens);
    const double n = static_cast<double>(with.outcome.label_tokens);
    ASSERT_EQ(with.outcome.label_tokens, masked.sums.tokens);

    const double ce = masked.sums.ce_sum / n;
    if (micro == kRows) {
      EXPECT_EQ(with.outcome.ce_loss, ce);  // the same single forward
    } else {
      EXPECT_NEAR(with.outcome.ce_loss, ce, 1e-6 * ce);  // sums over micro-batches
    }
    EXPECT_NEAR(with.outcome.z_loss, kZLoss * masked.sums.lse_sq_sum / n,
                1e-6 * with.outcome.z_loss);
    EXPECT_NEAR(with.outcome.grad_norm, masked.grad_norm, 1e-5 * masked.grad_norm);
    EXPECT_FALSE(with.outcome.skipped);

    // The same tokens as unpacked rows: another loss, gradient and update.
    EXPECT_GT(std::fabs(without.outcome.ce_loss - ce), 1e-3 * ce);
    EXPECT_GT(std::fabs(without.outcome.grad_norm - masked.grad_norm), 1e-3 * masked.grad_norm);
    // AdamW's first update is about lr·sign(g) per weight: a weight whose gradient changes sign
    // moves by about 2·lr the other way.
    double moved = 0;
    for (size_t i = 0; i < with.params.size(); ++i)
      moved = std::max(moved, std::fabs(double(with.params[i]) - without.params[i]));
    EXPECT_GT(moved, kLr);
  }
}

TEST(RankBatchStep, BadDocumentLengthsAreErrors) {
  data::RankBatch b = PackedBatch(2);
  b.cu_doc_lens.back() = kRows * kT - 1;  // does not end at rows·T
  EXPECT_THROW(TrainOneStep(b), Error);
  b = PackedBatch(2);
  b.cu_doc_lens = {0, 10, 30, 80};  // a document crosses the row start 20
  EXPECT_THROW(TrainOneStep(b), Error);
  b = PackedBatch(2);
  b.input_ids.pop_back();
  EXPECT_THROW(TrainOneStep(b), Error);
}

}  // namespace
}  // namespace replica

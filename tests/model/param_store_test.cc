// The model's ParamStore seam (model/param_store.h): the units cut the layout as promised, the
// model makes exactly the promised calls (Acquire/Release bracket every use, gradients opened
// before and closed after each unit's backward, in the order L+1, L, ..., 0, the same calls every
// time), and a model over any store that hands out the same bytes computes the same bits as the
// default resident model, untied and tied.
#include "model/param_store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "core/error.h"
#include "model/olmo3.h"
#include "train/init.h"

namespace replica {
namespace {

ModelConfig Tiny(bool tied) {
  return ModelConfig::FromHfJson({{"model_type", "olmo3"},
                                  {"vocab_size", 48},
                                  {"hidden_size", 32},
                                  {"intermediate_size", 48},
                                  {"num_hidden_layers", 3},
                                  {"num_attention_heads", 4},
                                  {"num_key_value_heads", 2},
                                  {"rms_norm_eps", 1e-6},
                                  {"rope_theta", 10000.0},
                                  {"sliding_window", 4},
                                  {"tie_word_embeddings", tied},
                                  {"max_position_embeddings", 64}},
                                 "tiny test model");
}

// A resident store that records every call and checks the promises as they come: weights are
// copied into a private buffer on Acquire and poisoned on Release, so a read outside
// Acquire/Release would show up as a different result.
class RecordingStore final : public ParamStore {
 public:
  RecordingStore(const ParamLayout& layout, int64_t layers, const FlatBuffer& params)
      : bounds(UnitBounds(layout, layers)), params_(params), grads(layout.total_floats()) {
    held.resize(bounds.size() - 1);
    open.assign(bounds.size() - 1, false);
  }
  const float* Acquire(int u) override {
    calls.push_back("A" + std::to_string(u));
    FlatBuffer& h = held.at(static_cast<size_t>(u));
    EXPECT_EQ(h.size(), 0u) << "unit " << u << " acquired twice";
    h = FlatBuffer(bounds[u + 1] - bounds[u]);
    std::memcpy(h.data(), params_.data() + bounds[u], h.size() * sizeof(float));
    return h.data();
  }
  void Release(int u) override {
    calls.push_back("R" + std::to_string(u));
    FlatBuffer& h = held.at(static_cast<size_t>(u));
    EXPECT_GT(h.size(), 0u) << "unit " << u << " released but not acquired";
    for (size_t i = 0; i < h.size(); ++i) h.data()[i] = std::nanf("");
    h = FlatBuffer();
  }
  float* Grads(int u) override {
    calls.push_back("G" + std::to_string(u));
    open.at(static_cast<size_t>(u)) = true;
    return grads.data() + bounds[u];
  }
  void GradsDone(int u) override {
    calls.push_back("D" + std::to_string(u));
    EXPECT_TRUE(open.at(static_cast<size_t>(u))) << "unit " << u << " done but never opened";
    open.at(static_cast<size_t>(u)) = false;
    done.push_back(u);
  }

  std::vector<size_t> bounds;
  const FlatBuffer& params_;
  FlatBuffer grads;
  std::vector<FlatBuffer> held;
  std::vector<bool> open;
  std::vector<std::string> calls;
  std::vector<int> done;
};

TEST(ParamStore, UnitBoundsCutTheLayoutIntoEmbeddingLayersAndHead) {
  for (bool tied : {false, true}) {
    const ModelConfig c = Tiny(tied);
    const ParamLayout layout = c.BuildLayout();
    const std::vector<size_t> b = UnitBounds(layout, c.num_layers);
    ASSERT_EQ(b.size(), static_cast<size_t>(c.num_layers + 3));
    EXPECT_EQ(b.front(), 0u);
    EXPECT_EQ(b.back(), layout.total_floats());
    EXPECT_EQ(b[1], layout.Get("model.layers.0.self_attn.q_proj.weight").offset);
    EXPECT_EQ(b[c.num_layers + 1], layout.Get("model.norm.weight").offset);
    for (const ParamView& v : layout.views()) {  // every tensor lies inside one unit
      size_t u = 0;
      while (b[u + 1] <= v.offset) ++u;
      EXPECT_LE(v.offset + v.numel, b[u + 1]) << v.name;
    }
  }
  EXPECT_THROW(UnitBounds(Tiny(false).BuildLayout(), 4), Error);
}

// The layout's size and largest unit from one layer equal the whole layout's, for shapes whose
// tensors need alignment padding, tied and untied, with the embedding or a layer the largest unit.
TEST(ParamStore, ModelLayoutSizeEqualsTheWholeLayouts) {
  for (bool tied : {false, true})
    for (int64_t vocab : {37, 4099})
      for (int64_t layers : {1, 2, 5}) {
        const ModelConfig c = ModelConfig::FromHfJson({{"model_type", "olmo3"},
                                                       {"vocab_size", vocab},
                                                       {"hidden_size", 18},
                                                       {"intermediate_size", 50},
                                                       {"num_hidden_layers", layers},
                                                       {"num_attention_heads", 3},
                                                       {"num_key_value_heads", 1},
                                                       {"rms_norm_eps", 1e-6},
                                                       {"rope_theta", 10000.0},
                                                       {"sliding_window", 4},
                                                       {"tie_word_embeddings", tied},
                                                       {"max_position_embeddings", 64}},
                                                      "padded test model");
        const ParamLayout layout = c.BuildLayout();
        const LayoutSize size = ModelLayoutSize(c);
        SCOPED_TRACE(testing::Message() << "tied " << tied << " vocab " << vocab << " layers "
                                        << layers);
        EXPECT_GT(layout.total_floats(), layout.num_elements());  // padding is counted
        EXPECT_EQ(size.total_floats, layout.total_floats());
        EXPECT_EQ(size.largest_unit_floats,
                  LargestUnitFloats(UnitBounds(layout, c.num_layers)));
      }
}

// Field by field: the struct has padding after its flag, which memcmp would read.
bool SameSums(const CrossEntropySums& a, const CrossEntropySums& b) {
  return std::memcmp(&a.ce_sum, &b.ce_sum, sizeof a.ce_sum) == 0 &&
         std::memcmp(&a.lse_sq_sum, &b.lse_sq_sum, sizeof a.lse_sq_sum) == 0 &&
         a.tokens == b.tokens && a.fp32 == b.fp32;
}

TEST(ParamStore, ModelMakesThePromisedCallsAndTheResidentBits) {
  for (bool tied : {false, true}) {
    const ModelConfig c = Tiny(tied);
    const int64_t B = 2, T = 8, L = c.num_layers;
    Olmo3Model want(c, B, T, CpuBackend());
    InitParams(want.layout(), want.params(), {.seed = 11, .std = 0.02});
    auto owned = std::make_unique<RecordingStore>(want.layout(), L, want.params());
    RecordingStore& rec = *owned;
    Olmo3Model got(c, B, T, CpuBackend(), std::move(owned));
    EXPECT_THROW(got.params(), Error);  // no whole buffer behind a non-resident store

    std::mt19937 rng(3);
    std::vector<int32_t> ids(B * T), labels(B * T);
    for (size_t i = 0; i < ids.size(); ++i) {
      ids[i] = static_cast<int32_t>(rng() % 48);
      labels[i] = i % 5 == 0 ? kIgnoreLabel : static_cast<int32_t>(rng() % 48);
    }
    want.grads().Zero();
    const CrossEntropySums a = want.ForwardBackward(ids.data(), labels.data(), B, T, 0.01, 1e-4);
    const CrossEntropySums b = got.ForwardBackward(ids.data(), labels.data(), B, T, 0.01, 1e-4);
    EXPECT_TRUE(SameSums(a, b)) << "loss sums, tied " << tied;
    EXPECT_EQ(std::memcmp(want.grads().data(), rec.grads.data(),
                          rec.grads.size() * sizeof(float)),
              0)
        << "gradients, tied " << tied;
    std::vector<int> order;
    for (int u = static_cast<int>(L) + 1; u >= 0; --u) order.push_back(u);
    EXPECT_EQ(rec.done, order) << "GradsDone order, tied " << tied;
    for (const FlatBuffer& h : rec.held) EXPECT_EQ(h.size(), 0u) << "a unit left acquired";

    const std::vector<std::string> first = rec.calls;
    rec.calls.clear();
    got.ForwardBackward(ids.data(), labels.data(), B, T, 0.01, 1e-4);
    EXPECT_EQ(rec.calls, first) << "the calls do not depend on the call";

    rec.calls.clear();
    const CrossEntropySums fa = want.ForwardLoss(ids.data(), labels.data(), B, T);
    const CrossEntropySums fb = got.ForwardLoss(ids.data(), labels.data(), B, T);
    EXPECT_TRUE(SameSums(fa, fb));
    for (const std::string& call : rec.calls) EXPECT_TRUE(call[0] == 'A' || call[0] == 'R') << call;
    std::vector<float> la(B * T * 48), lb(la.size());
    want.ForwardLogits(ids.data(), B, T, la.data());
    got.ForwardLogits(ids.data(), B, T, lb.data());
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace replica

#include "infer/inference_model.h"

#include <algorithm>

#include "core/error.h"
#include "model/block.h"
#include "model/layer_tensors.h"

namespace replica {
namespace {

std::string LayerName(int64_t l, int t) {
  return LayerTensorName(l, LayerTensorTable()[static_cast<size_t>(t)].id);
}

// Layer l's BlockSite (model/block.h) over the layer's widened fp32 weights, slot t holding table
// entry t: positions 0..T-1 in every row, attention over the row's own keys; the post-RoPE keys
// and values go to the caller's sink first.
class EvalSite final : public BlockSite {
 public:
  EvalSite(const Backend& ops, const float* const* p, const RopeTable& rope,
           const AttentionShape& shape, int64_t l, const InferenceModel::KvSink& sink)
      : ops_(ops), p_(p), rope_(rope), shape_(shape), l_(l), sink_(sink) {}
  void Linear(LayerTensor t, const float* x, int64_t rows, int64_t in, int64_t out,
              float* y) const override {
    ops_.LinearForward(x, p_[static_cast<int>(t)], rows, in, out, y);
  }
  const float* Norm(LayerTensor t) const override { return p_[static_cast<int>(t)]; }
  void Rope(float* q, float* k) const override {
    ops_.RopeForward(rope_, q, shape_.B, shape_.T, shape_.H, nullptr, q);
    ops_.RopeForward(rope_, k, shape_.B, shape_.T, shape_.KV, nullptr, k);
  }
  void Attend(const float* q, const float* k, const float* v, float* att,
              float* lse) const override {
    if (sink_) sink_(l_, k, v);
    ops_.AttentionForward(shape_, q, k, v, att, lse);
  }

 private:
  const Backend& ops_;
  const float* const* p_;
  const RopeTable& rope_;
  AttentionShape shape_;
  int64_t l_;
  const InferenceModel::KvSink& sink_;
};

}  // namespace

InferenceModel::InferenceModel(ModelWeights weights, const Backend& backend)
    : weights_(std::move(weights)), ops_(&backend) {
  size_t n = 0;
  for (int t = 0; t < kLayerTensorCount; ++t)
    n += static_cast<size_t>(weights_.Get(LayerName(0, t)).numel());
  layer_buf_.resize(n);
}

void InferenceModel::Validate(const int32_t* tokens, const int32_t* labels, int64_t N) const {
  const int64_t V = config().vocab_size;
  for (int64_t i = 0; i < N; ++i) {
    Require(tokens[i] >= 0 && tokens[i] < V,
            "token id {} at position {} is outside the model's vocabulary [0, {})", tokens[i], i, V);
    if (labels) {
      Require(labels[i] == kIgnoreLabel || (labels[i] >= 0 && labels[i] < V),
              "label {} at position {} is neither -100 nor in [0, {})", labels[i], i, V);
    }
  }
}

void InferenceModel::set_mlp_rows(int64_t rows) {
  Require(rows >= 1, "forward: MLP pass of {} rows must be >= 1", rows);
  mlp_rows_ = rows;
}

void InferenceModel::WidenLayer(int64_t l) {
  float* p = layer_buf_.data();
  for (int t = 0; t < kLayerTensorCount; ++t) {
    const std::string name = LayerName(l, t);
    weights_.ToF32(name, p);
    if (release_pages_) weights_.Release(name);
    p += weights_.Get(name).numel();
  }
}

void InferenceModel::WidenLmHead() {
  const ModelConfig& c = config();
  if (!lm_head_.empty()) return;
  const std::string name = c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  lm_head_.resize(static_cast<size_t>(c.vocab_size * c.hidden_size));
  weights_.ToF32(name, lm_head_.data());
  if (release_pages_) weights_.Release(name);
}

void InferenceModel::ReleaseLmHead() { std::vector<float>().swap(lm_head_); }

void InferenceModel::LogitsRows(const float* xf, int64_t rows, float* logits) {
  WidenLmHead();
  ops_->LmHeadLogits(xf, lm_head_.data(), rows, config().hidden_size, config().vocab_size, logits);
}

// Every layer's block (model/block.h) as Olmo3Model's forward runs it, one layer's weights widened
// at a time.
void InferenceModel::ForwardHidden(const int32_t* tokens, int64_t B, int64_t T, float* xf,
                                   const KvSink& kv_sink) {
  const ModelConfig& c = config();
  Require(B >= 1 && T >= 1, "forward: batch {} and sequence length {} must be >= 1", B, T);
  const int64_t N = B * T, D = c.hidden_size, I = c.intermediate_size, H = c.num_heads;
  const int64_t KV = c.num_kv_heads, hd = c.head_dim, Qd = H * hd, KVd = KV * hd;
  const double eps = c.rms_norm_eps;
  Validate(tokens, nullptr, N);
  if (ropes_.max_positions() < T) ropes_ = LayerRopes(c, T);
  // Nothing is kept for a backward: q and k are normed in place, every norm shares one rstd, and
  // the MLP's buffers hold one pass of mlp_rows_ rows.
  const int64_t P = std::min(N, mlp_rows_);
  std::vector<float> x(N * D), q(N * Qd), k(N * KVd), v(N * KVd), att(N * Qd), a(N * D), h(N * D),
      g(P * I), u(P * I), s(P * I), m(P * D), lse(N * H), rstd(N);
  const BlockActivations acts{x.data(), q.data(),    k.data(),   v.data(),    q.data(),
                              k.data(), rstd.data(), rstd.data(), att.data(), lse.data(),
                              a.data(), rstd.data(), h.data(),   g.data(),    u.data(),
                              s.data(), m.data(),    rstd.data()};
  const TensorInfo& e = weights_.Get("model.embed_tokens.weight");
  ops_->EmbeddingForwardStored({e.dtype, e.data, c.vocab_size, D}, tokens, N, x.data());
  for (int64_t l = 0; l < c.num_layers; ++l) {
    WidenLayer(l);
    const float* p[kLayerTensorCount];
    const float* at = layer_buf_.data();
    for (int t = 0; t < kLayerTensorCount; ++t) {
      p[t] = at;
      at += weights_.Get(LayerName(l, t)).numel();
    }
    const EvalSite site(*ops_, p, ropes_.ForLayer(l), {B, T, H, KV, hd, c.Window(l)}, l, kv_sink);
    BlockForward(*ops_, {N, D, I, Qd, KVd, eps, P}, site, acts, x.data());
  }
  std::vector<float> final_norm(D);
  weights_.ToF32("model.norm.weight", final_norm.data());
  ops_->RMSNormForward(x.data(), final_norm.data(), N, D, eps, xf, rstd.data());
}

void InferenceModel::ForEachLogitsChunk(const float* xf, int64_t N, int64_t chunk_rows,
                                        const LogitsSink& sink) {
  const int64_t D = config().hidden_size, V = config().vocab_size;
  Require(chunk_rows >= 1, "logits: chunk of {} rows must be >= 1", chunk_rows);
  WidenLmHead();
  std::vector<float> logits(static_cast<size_t>(std::min(chunk_rows, N) * V));
  for (int64_t r0 = 0; r0 < N; r0 += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, N - r0);
    ops_->LmHeadLogits(xf + r0 * D, lm_head_.data(), rows, D, V, logits.data());
    sink(r0, rows, logits.data());
  }
  ReleaseLmHead();
}

void InferenceModel::ForwardLogits(const int32_t* tokens, int64_t B, int64_t T, float* logits) {
  const int64_t N = B * T, D = config().hidden_size, V = config().vocab_size;
  std::vector<float> xf(N * D);
  ForwardHidden(tokens, B, T, xf.data());
  WidenLmHead();
  ops_->LmHeadLogits(xf.data(), lm_head_.data(), N, D, V, logits);
  ReleaseLmHead();
}

CrossEntropySums InferenceModel::ForwardLoss(const int32_t* tokens, const int32_t* labels, int64_t B,
                                     int64_t T) {
  const int64_t N = B * T, D = config().hidden_size, V = config().vocab_size;
  Require(labels != nullptr, "InferenceModel::ForwardLoss: labels are required");
  Validate(tokens, labels, N);
  std::vector<float> xf(N * D);
  ForwardHidden(tokens, B, T, xf.data());
  WidenLmHead();
  LmHeadWorkspace ws(N, V);
  const CrossEntropySums s = ops_->LmHeadLossForward(xf.data(), lm_head_.data(), labels, N, D, V, ws);
  ReleaseLmHead();
  return {s.ce_sum, s.lse_sq_sum, s.tokens};
}

}  // namespace replica

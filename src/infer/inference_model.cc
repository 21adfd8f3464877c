#include "infer/inference_model.h"

#include <algorithm>

#include "core/error.h"
#include "model/block.h"
#include "model/layer_tensors.h"
#include "ops/host_copy.h"

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
  layer_buf_ = ops_->AllocateFloats(n);
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
  FillFromHost(*ops_, layer_buf_, layer_buf_.size(), [&](float* p) {
    for (int t = 0; t < kLayerTensorCount; ++t) {
      const std::string name = LayerName(l, t);
      weights_.ToF32(name, p);
      if (release_pages_) weights_.Release(name);
      p += weights_.Get(name).numel();
    }
  });
}

void InferenceModel::WidenLmHead() {
  const ModelConfig& c = config();
  if (lm_head_.size() != 0) return;
  const std::string name = c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  const size_t n = static_cast<size_t>(c.vocab_size * c.hidden_size);
  lm_head_ = ops_->AllocateFloats(n);
  FillFromHost(*ops_, lm_head_, n, [&](float* p) { weights_.ToF32(name, p); });
  if (release_pages_) weights_.Release(name);
}

void InferenceModel::ReleaseLmHead() { lm_head_ = FlatBuffer(); }

void InferenceModel::LogitsRows(const float* xf, int64_t rows, float* logits) {
  WidenLmHead();
  const int64_t D = config().hidden_size, V = config().vocab_size;
  if (ops_->is_host()) {
    ops_->LmHeadLogits(xf, lm_head_.data(), rows, D, V, logits);
    return;
  }
  const size_t n = static_cast<size_t>(rows * V);
  if (logits_.size() < n) logits_ = ops_->AllocateFloats(n);
  ops_->LmHeadLogits(xf, lm_head_.data(), rows, D, V, logits_.data());
  ops_->CopyToHost(logits, logits_.data(), n * sizeof(float));
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
  if (ropes_.max_positions() < T) ropes_ = LayerRopes(*ops_, c, T);
  // Nothing is kept for a backward: q and k are normed in place, every norm shares one rstd, and
  // the MLP's buffers hold one pass of mlp_rows_ rows.
  const int64_t P = std::min(N, mlp_rows_);
  // One allocation from the backend, carved in this order, each piece on a 64-byte boundary.
  const int64_t sizes[] = {N * D, N * Qd, N * KVd, N * KVd, N * Qd, N * D, N * D,
                           P * I, P * I,  P * I,   P * D,   N * H,  N};
  constexpr int64_t kAlign = 16;  // floats
  int64_t total = 0;
  for (int64_t n : sizes) total += (n + kAlign - 1) / kAlign * kAlign;
  FlatBuffer buffer = ops_->AllocateFloats(static_cast<size_t>(total));
  float* carved[std::size(sizes)];
  float* next = buffer.data();
  for (size_t i = 0; i < std::size(sizes); ++i) {
    carved[i] = next;
    next += (sizes[i] + kAlign - 1) / kAlign * kAlign;
  }
  float *x = carved[0], *q = carved[1], *k = carved[2], *v = carved[3], *att = carved[4],
        *a = carved[5], *h = carved[6], *g = carved[7], *u = carved[8], *s = carved[9],
        *m = carved[10], *lse = carved[11], *rstd = carved[12];
  const BlockActivations acts{x, q, k, v, q, k, rstd, rstd, att, lse, a, rstd, h, g, u, s, m, rstd};
  const TensorInfo& e = weights_.Get("model.embed_tokens.weight");
  ops_->EmbeddingForwardStored({e.dtype, e.data, c.vocab_size, D}, tokens, N, x);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    WidenLayer(l);
    const float* p[kLayerTensorCount];
    const float* at = layer_buf_.data();
    for (int t = 0; t < kLayerTensorCount; ++t) {
      p[t] = at;
      at += weights_.Get(LayerName(l, t)).numel();
    }
    const EvalSite site(*ops_, p, ropes_.ForLayer(l), {B, T, H, KV, hd, c.Window(l)}, l, kv_sink);
    BlockForward(*ops_, {N, D, I, Qd, KVd, eps, P}, site, acts, x);
  }
  FlatBuffer final_norm = ops_->AllocateFloats(static_cast<size_t>(D));
  FillFromHost(*ops_, final_norm, static_cast<size_t>(D),
               [&](float* host) { weights_.ToF32("model.norm.weight", host); });
  ops_->RMSNormForward(x, final_norm.data(), N, D, eps, xf, rstd);
}

void InferenceModel::ForEachLogitsChunk(const float* xf, int64_t N, int64_t chunk_rows,
                                        const LogitsSink& sink) {
  const int64_t D = config().hidden_size, V = config().vocab_size;
  Require(chunk_rows >= 1, "logits: chunk of {} rows must be >= 1", chunk_rows);
  WidenLmHead();
  FlatBuffer logits = ops_->AllocateFloats(static_cast<size_t>(std::min(chunk_rows, N) * V));
  std::vector<float> staging;
  for (int64_t r0 = 0; r0 < N; r0 += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, N - r0);
    ops_->LmHeadLogits(xf + r0 * D, lm_head_.data(), rows, D, V, logits.data());
    sink(r0, rows, ReadOnHost(*ops_, logits, static_cast<size_t>(rows * V), staging));
  }
  ReleaseLmHead();
}

void InferenceModel::ForwardLogits(const int32_t* tokens, int64_t B, int64_t T, float* logits) {
  const int64_t N = B * T, D = config().hidden_size;
  FlatBuffer xf = ops_->AllocateFloats(static_cast<size_t>(N * D));
  ForwardHidden(tokens, B, T, xf.data());
  LogitsRows(xf.data(), N, logits);
  ReleaseLmHead();
  logits_ = FlatBuffer();
}

CrossEntropySums InferenceModel::ForwardLoss(const int32_t* tokens, const int32_t* labels, int64_t B,
                                     int64_t T) {
  const int64_t N = B * T, D = config().hidden_size, V = config().vocab_size;
  Require(labels != nullptr, "InferenceModel::ForwardLoss: labels are required");
  Validate(tokens, labels, N);
  FlatBuffer xf = ops_->AllocateFloats(static_cast<size_t>(N * D));
  ForwardHidden(tokens, B, T, xf.data());
  WidenLmHead();
  LmHeadWorkspace ws(*ops_, N, V);
  const CrossEntropySums s = ops_->LmHeadLossForward(xf.data(), lm_head_.data(), labels, N, D, V, ws);
  ReleaseLmHead();
  return {s.ce_sum, s.lse_sq_sum, s.tokens};
}

}  // namespace replica

#include "infer/inference_model.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "model/layer_tensors.h"

namespace replica {
namespace {

// The per-layer tensors (model/layer_tensors.h), laid out in the layer buffer in table order;
// slot t is table entry t.
enum Slot { kQ, kK, kV, kO, kQNorm, kKNorm, kGate, kUp, kDown, kAttnNorm, kFfNorm, kCount };
static_assert(kCount == kLayerTensorCount);

std::string LayerName(int64_t l, int t) {
  return LayerTensorName(l, LayerTensorTable()[static_cast<size_t>(t)].id);
}

// Copies the embedding rows of tokens [N] into x [N, D], widening from the stored dtype.
void Embed(const ModelWeights& w, const int32_t* tokens, int64_t N, int64_t D, float* x) {
  const TensorInfo& e = w.Get("model.embed_tokens.weight");
  const size_t esize = DTypeSize(e.dtype);
#pragma omp parallel for schedule(static) if (N * D >= (int64_t{1} << 15))
  for (int64_t i = 0; i < N; ++i) {
    const uint8_t* row = e.data + static_cast<size_t>(tokens[i]) * D * esize;
    float* out = x + i * D;
    for (int64_t j = 0; j < D; ++j) {
      uint16_t h;
      switch (e.dtype) {
        case DType::kF32:
          std::memcpy(out + j, row + 4 * j, 4);
          break;
        case DType::kBF16:
          std::memcpy(&h, row + 2 * j, 2);
          out[j] = Bf16ToF32(h);
          break;
        default:
          std::memcpy(&h, row + 2 * j, 2);
          out[j] = F16ToF32(h);
          break;
      }
    }
  }
}

}  // namespace

InferenceModel::InferenceModel(ModelWeights weights, const Backend& backend)
    : weights_(std::move(weights)), ops_(&backend) {
  size_t n = 0;
  for (int t = 0; t < kCount; ++t) n += static_cast<size_t>(weights_.Get(LayerName(0, t)).numel());
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

void InferenceModel::WidenLayer(int64_t l) {
  float* p = layer_buf_.data();
  for (int t = 0; t < kCount; ++t) {
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

// Layer l: h = x + RMSNorm(Attn(x)); out = h + RMSNorm(MLP(h)) — Olmo3Model's LayerForward.
void InferenceModel::ForwardHidden(const int32_t* tokens, int64_t B, int64_t T, float* xf,
                                   const KvSink& kv_sink) {
  const ModelConfig& c = config();
  Require(B >= 1 && T >= 1, "forward: batch {} and sequence length {} must be >= 1", B, T);
  const int64_t N = B * T, D = c.hidden_size, I = c.intermediate_size, H = c.num_heads;
  const int64_t KV = c.num_kv_heads, hd = c.head_dim, Qd = H * hd, KVd = KV * hd;
  const double eps = c.rms_norm_eps;
  Validate(tokens, nullptr, N);
  if (ropes_.max_positions() < T) ropes_ = LayerRopes(c, T);
  std::vector<float> x(N * D), q_raw(N * Qd), k_raw(N * KVd), v(N * KVd), q(N * Qd), k(N * KVd),
      att(N * Qd), a(N * D), h(N * D), g(N * I), u(N * I), s(N * I), m(N * D), lse(N * H),
      rstd(N);
  Embed(weights_, tokens, N, D, x.data());
  for (int64_t l = 0; l < c.num_layers; ++l) {
    WidenLayer(l);
    const float* p[kCount];
    const float* at = layer_buf_.data();
    for (int t = 0; t < kCount; ++t) {
      p[t] = at;
      at += weights_.Get(LayerName(l, t)).numel();
    }
    const RopeTable& rope = ropes_.ForLayer(l);
    ops_->LinearForward(x.data(), p[kQ], N, D, Qd, q_raw.data());
    ops_->LinearForward(x.data(), p[kK], N, D, KVd, k_raw.data());
    ops_->LinearForward(x.data(), p[kV], N, D, KVd, v.data());
    ops_->RMSNormForward(q_raw.data(), p[kQNorm], N, Qd, eps, q.data(), rstd.data());
    ops_->RMSNormForward(k_raw.data(), p[kKNorm], N, KVd, eps, k.data(), rstd.data());
    ops_->RopeForward(rope, q.data(), B, T, H, q.data());
    ops_->RopeForward(rope, k.data(), B, T, KV, k.data());
    if (kv_sink) kv_sink(l, k.data(), v.data());
    ops_->AttentionForward({B, T, H, KV, hd, c.Window(l)}, q.data(), k.data(), v.data(), att.data(),
                     lse.data());
    ops_->LinearForward(att.data(), p[kO], N, Qd, D, a.data());
    ops_->RMSNormAddForward(a.data(), p[kAttnNorm], x.data(), N, D, eps, h.data(), rstd.data());
    ops_->LinearForward(h.data(), p[kGate], N, D, I, g.data());
    ops_->LinearForward(h.data(), p[kUp], N, D, I, u.data());
    ops_->SwiGLUForward(g.data(), u.data(), N * I, s.data());
    ops_->LinearForward(s.data(), p[kDown], N, I, D, m.data());
    ops_->RMSNormAddForward(m.data(), p[kFfNorm], h.data(), N, D, eps, x.data(), rstd.data());
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

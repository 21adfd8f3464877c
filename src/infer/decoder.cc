#include "infer/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/finite.h"
#include "core/half.h"
#include "core/huge_pages.h"
#include "infer/matvec.h"
#include "model/layer_tensors.h"
#include "ops/cpu/rmsnorm.h"
#include "ops/cpu/swiglu.h"

namespace replica {
namespace {

// The layer's matmul weights (model/layer_tensors.h), in table order: q, k, v, o, gate, up, down.
std::vector<LayerTensor> LayerMatrices() {
  std::vector<LayerTensor> out;
  for (const LayerTensorInfo& t : LayerTensorTable())
    if (t.matmul_weight) out.push_back(t.id);
  return out;
}

const char* HeadName(const ModelConfig& c) {
  return c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
}

}  // namespace

std::vector<std::string> Decoder::StepMatrixNames(const ModelConfig& c) {
  std::vector<std::string> names;
  for (int64_t l = 0; l < c.num_layers; ++l)
    for (LayerTensor t : LayerMatrices()) names.push_back(LayerTensorName(l, t));
  names.push_back(HeadName(c));
  return names;
}

Decoder::Weights Decoder::AutoWeights(const InferenceModel& model) {
  uint64_t bytes = 0;
  for (const std::string& n : StepMatrixNames(model.config())) bytes += model.weights().Get(n).nbytes;
  const double available = static_cast<double>(AvailableMemoryBytes());
  return static_cast<double>(bytes) <= 0.8 * available ? Weights::kCopied : Weights::kMapped;
}

Decoder::Decoder(InferenceModel& model, int64_t max_context, Weights weights)
    : model_(model), c_(model.config()), max_context_(max_context), weights_(weights) {
  Require(max_context >= 1, "decoder: context of {} positions must be >= 1", max_context);
  Require(c_.max_position_embeddings <= 0 || max_context <= c_.max_position_embeddings,
          "decoder: context of {} positions exceeds the model's max_position_embeddings {}",
          max_context, c_.max_position_embeddings);
  model_.set_release_pages(false);
  const ModelWeights& w = model.weights();
  const int64_t D = c_.hidden_size, I = c_.intermediate_size, H = c_.num_heads;
  const int64_t KVd = c_.num_kv_heads * c_.head_dim, Qd = H * c_.head_dim, V = c_.vocab_size;
  ropes_ = LayerRopes(c_, max_context);
  cache_.resize(static_cast<size_t>(c_.num_layers));
  norms_.resize(cache_.size());
  for (int64_t l = 0; l < c_.num_layers; ++l) {
    const int64_t W = c_.Window(l);
    cache_[l].capacity = W > 0 ? std::min(W, max_context) : max_context;
    cache_[l].k.resize(static_cast<size_t>(cache_[l].capacity * KVd));
    cache_[l].v.resize(cache_[l].k.size());
    auto& n = norms_[l];
    n.resize(static_cast<size_t>(Qd + KVd + 2 * D));
    w.ToF32(LayerTensorName(l, LayerTensor::kQNorm), n.data());
    w.ToF32(LayerTensorName(l, LayerTensor::kKNorm), n.data() + Qd);
    w.ToF32(LayerTensorName(l, LayerTensor::kPostAttentionNorm), n.data() + Qd + KVd);
    w.ToF32(LayerTensorName(l, LayerTensor::kPostFeedforwardNorm), n.data() + Qd + KVd + D);
  }
  const std::vector<std::string> names = StepMatrixNames(c_);
  for (const std::string& name : names) {
    step_weight_bytes_ += w.Get(name).nbytes;
    Weight(name);  // refuses a dtype MatVec cannot read, before any work
  }
  if (weights_ == Weights::kCopied) model_.mutable_weights().CopyToMemory(names);
  matrices_.resize(cache_.size());
  const std::vector<LayerTensor> layer_matrices = LayerMatrices();
  Require(layer_matrices.size() == kLayerMatrices, "decoder: {} layer matrices, expected {}",
          layer_matrices.size(), static_cast<int>(kLayerMatrices));
  for (int64_t l = 0; l < c_.num_layers; ++l)
    for (int m = 0; m < kLayerMatrices; ++m)
      matrices_[l][m] = Weight(LayerTensorName(l, layer_matrices[m]));
  head_ = Weight(HeadName(c_));
  final_norm_.resize(D);
  w.ToF32("model.norm.weight", final_norm_.data());
  for (auto* b : {&x_, &a_, &h_, &m_, &xf_}) b->resize(D);
  for (auto* b : {&q_raw_, &q_, &att_}) b->resize(Qd);
  for (auto* b : {&k_raw_, &k_, &v_}) b->resize(KVd);
  for (auto* b : {&g_, &u_, &s_}) b->resize(I);
  logits_.resize(V);
  scores_.resize(static_cast<size_t>(H * max_context));
}

Decoder::Matrix Decoder::Weight(const std::string& name) const {
  const TensorInfo& t = model_.weights().Get(name);
  Require(t.dtype == DType::kF32 || t.dtype == DType::kBF16,
          "{}: tensor '{}' is stored as {}; decoding reads F32 or BF16 matrices (convert with "
          "`replica convert --dtype bf16`)", model_.weights().FileOf(name), name,
          DTypeName(t.dtype));
  return {t.dtype, t.data};
}

std::span<const float> Decoder::Prefill(std::span<const int32_t> prompt) {
  const int64_t T = static_cast<int64_t>(prompt.size());
  Require(T >= 1, "generate: the prompt is empty");
  Require(T <= max_context_,
          "generate: the prompt has {} tokens, more than the context of {} positions", T,
          max_context_);
  const int64_t D = c_.hidden_size, KVd = c_.num_kv_heads * c_.head_dim, V = c_.vocab_size;
  std::vector<float> xf(static_cast<size_t>(T * D));
  model_.ForwardHidden(prompt.data(), 1, T, xf.data(), [&](int64_t l, const float* k,
                                                          const float* v) {
    LayerCache& lc = cache_[l];
    for (int64_t p = std::max<int64_t>(0, T - lc.capacity); p < T; ++p) {
      const int64_t slot = p % lc.capacity;
      std::memcpy(lc.k.data() + slot * KVd, k + p * KVd, KVd * sizeof(float));
      std::memcpy(lc.v.data() + slot * KVd, v + p * KVd, KVd * sizeof(float));
    }
  });
  length_ = T;
  MatVec(head_.dtype, head_.data, xf.data() + (T - 1) * D, V, D, logits_.data());
  RequireFiniteLogits(T - 1);
  return logits_;
}

// A step reads the stored weights directly (the prefill checked only the layers it widened), so
// a NaN or Inf anywhere in them shows up here first; sampling from such logits would print
// arbitrary tokens with exit 0.
void Decoder::RequireFiniteLogits(int64_t pos) const {
  const std::optional<size_t> bad = FirstNonFinite(logits_.data(), logits_.size());
  if (!bad) return;
  Fail("generate: the next-token logits at position {} hold {} (vocabulary id {}): the model's "
       "weights are not all finite (the LM head '{}', an embedding row or a layer); refusing to "
       "sample. `replica eval --model DIR` names the first bad tensor of the layers",
       pos, logits_[*bad], *bad,
       c_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
}

// One query row q_ [H, hd] at position pos against layer l's cached keys: online softmax per head
// in fp32, as AttentionForward computes it, over the visible positions in position order.
void Decoder::Attend(int64_t l, int64_t pos) {
  const LayerCache& lc = cache_[l];
  const int64_t H = c_.num_heads, KV = c_.num_kv_heads, hd = c_.head_dim, KVd = KV * hd;
  const int64_t W = c_.Window(l);
  const int64_t first = W > 0 ? std::max<int64_t>(0, pos - W + 1) : 0;
  const int64_t n = pos - first + 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
#pragma omp parallel for schedule(static) if (H * n * hd >= (int64_t{1} << 15))
  for (int64_t head = 0; head < H; ++head) {
    const int64_t kvh = head / (H / KV);
    const float* qh = q_.data() + head * hd;
    float* sc = scores_.data() + head * max_context_;
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
      const float* kj = lc.k.data() + ((first + j) % lc.capacity) * KVd + kvh * hd;
      float dot = 0;
      for (int64_t d = 0; d < hd; ++d) dot += qh[d] * kj[d];
      sc[j] = dot * scale;
      mx = std::max(mx, sc[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      sc[j] = std::exp(sc[j] - mx);
      sum += sc[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    float* out = att_.data() + head * hd;
    std::fill(out, out + hd, 0.0f);
    for (int64_t j = 0; j < n; ++j) {
      const float* vj = lc.v.data() + ((first + j) % lc.capacity) * KVd + kvh * hd;
      const float pj = sc[j] * inv;
      for (int64_t d = 0; d < hd; ++d) out[d] += pj * vj[d];
    }
  }
}

std::span<const float> Decoder::Step(int32_t token) {
  Require(length_ >= 1, "decoder: Step before Prefill");
  Require(length_ < max_context_, "generate: the context of {} positions is full", max_context_);
  const int64_t D = c_.hidden_size, I = c_.intermediate_size, H = c_.num_heads;
  const int64_t KV = c_.num_kv_heads, hd = c_.head_dim, Qd = H * hd, KVd = KV * hd;
  const int64_t V = c_.vocab_size;
  const double eps = c_.rms_norm_eps;
  Require(token >= 0 && token < V, "generate: token id {} is outside the vocabulary [0, {})",
          token, V);
  const int64_t pos = length_;
  // Embedding row, widened.
  {
    const TensorInfo& e = model_.weights().Get("model.embed_tokens.weight");
    for (int64_t j = 0; j < D; ++j) {
      const uint8_t* p = e.data + (static_cast<size_t>(token) * D + j) * DTypeSize(e.dtype);
      uint16_t h;
      if (e.dtype == DType::kF32) {
        std::memcpy(&x_[j], p, 4);
      } else {
        std::memcpy(&h, p, 2);
        x_[j] = e.dtype == DType::kBF16 ? Bf16ToF32(h) : F16ToF32(h);
      }
    }
  }
  float rstd;
  for (int64_t l = 0; l < c_.num_layers; ++l) {
    const float* n = norms_[l].data();
    auto mv = [&](int m, const float* in, int64_t rows, int64_t cols, float* out) {
      const Matrix& w = matrices_[l][m];
      MatVec(w.dtype, w.data, in, rows, cols, out);
    };
    mv(kQ, x_.data(), Qd, D, q_raw_.data());
    mv(kK, x_.data(), KVd, D, k_raw_.data());
    mv(kV, x_.data(), KVd, D, v_.data());
    RMSNormForward(q_raw_.data(), n, 1, Qd, eps, q_.data(), &rstd);
    RMSNormForward(k_raw_.data(), n + Qd, 1, KVd, eps, k_.data(), &rstd);
    const RopeTable& rope = ropes_.ForLayer(l);
    RopeRowInPlace(rope, pos, H, q_.data());
    RopeRowInPlace(rope, pos, KV, k_.data());
    LayerCache& lc = cache_[l];
    const int64_t slot = pos % lc.capacity;
    std::memcpy(lc.k.data() + slot * KVd, k_.data(), KVd * sizeof(float));
    std::memcpy(lc.v.data() + slot * KVd, v_.data(), KVd * sizeof(float));
    Attend(l, pos);
    mv(kO, att_.data(), D, Qd, a_.data());
    RMSNormAddForward(a_.data(), n + Qd + KVd, x_.data(), 1, D, eps, h_.data(), &rstd);
    mv(kGate, h_.data(), I, D, g_.data());
    mv(kUp, h_.data(), I, D, u_.data());
    SwiGLUForward(g_.data(), u_.data(), I, s_.data());
    mv(kDown, s_.data(), D, I, m_.data());
    RMSNormAddForward(m_.data(), n + Qd + KVd + D, h_.data(), 1, D, eps, x_.data(), &rstd);
  }
  RMSNormForward(x_.data(), final_norm_.data(), 1, D, eps, xf_.data(), &rstd);
  MatVec(head_.dtype, head_.data, xf_.data(), V, D, logits_.data());
  RequireFiniteLogits(pos);
  length_ = pos + 1;
  return logits_;
}

}  // namespace replica

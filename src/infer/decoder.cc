#include "infer/decoder.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/finite.h"
#include "core/half.h"
#include "core/huge_pages.h"
#include "model/block.h"
#include "model/layer_tensors.h"
#include "ops/host_copy.h"

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
  const Backend& ops = model.backend();
  ropes_ = LayerRopes(ops, c_, max_context);
  cache_.resize(static_cast<size_t>(c_.num_layers));
  norms_.resize(cache_.size());
  for (int64_t l = 0; l < c_.num_layers; ++l) {
    const int64_t W = c_.Window(l);
    cache_[l].capacity = W > 0 ? std::min(W, max_context) : max_context;
    cache_[l].k = ops.AllocateFloats(static_cast<size_t>(cache_[l].capacity * KVd));
    cache_[l].v = ops.AllocateFloats(static_cast<size_t>(cache_[l].capacity * KVd));
    const size_t n = static_cast<size_t>(Qd + KVd + 2 * D);
    norms_[l] = ops.AllocateFloats(n);
    FillFromHost(ops, norms_[l], n, [&](float* p) {
      w.ToF32(LayerTensorName(l, LayerTensor::kQNorm), p);
      w.ToF32(LayerTensorName(l, LayerTensor::kKNorm), p + Qd);
      w.ToF32(LayerTensorName(l, LayerTensor::kPostAttentionNorm), p + Qd + KVd);
      w.ToF32(LayerTensorName(l, LayerTensor::kPostFeedforwardNorm), p + Qd + KVd + D);
    });
  }
  const std::vector<std::string> names = StepMatrixNames(c_);
  for (const std::string& name : names) {
    step_weight_bytes_ += w.Get(name).nbytes;
    Weight(name);  // refuses a dtype MatVec cannot read, before any work
  }
  if (weights_ == Weights::kCopied) model_.mutable_weights().CopyToMemory(names);
  matrices_.resize(cache_.size());
  for (int64_t l = 0; l < c_.num_layers; ++l)
    for (LayerTensor t : LayerMatrices())
      matrices_[l][static_cast<size_t>(t)] = Weight(LayerTensorName(l, t));
  head_ = Weight(HeadName(c_));
  final_norm_ = ops.AllocateFloats(static_cast<size_t>(D));
  FillFromHost(ops, final_norm_, static_cast<size_t>(D),
               [&](float* p) { w.ToF32("model.norm.weight", p); });
  auto make = [&](int64_t n) { return ops.AllocateFloats(static_cast<size_t>(n)); };
  for (auto* b : {&x_, &a_, &h_, &m_, &xf_}) *b = make(D);
  for (auto* b : {&q_raw_, &q_, &att_}) *b = make(Qd);
  for (auto* b : {&k_raw_, &k_, &v_}) *b = make(KVd);
  for (auto* b : {&g_, &u_, &s_}) *b = make(I);
  logits_ = make(V);
  scores_ = make(H * max_context);
  rstd_ = make(1);
}

StoredMatrix Decoder::Weight(const std::string& name) const {
  const TensorInfo& t = model_.weights().Get(name);
  Require(t.dtype == DType::kF32 || t.dtype == DType::kBF16,
          "{}: tensor '{}' is stored as {}; decoding reads F32 or BF16 matrices (convert with "
          "`replica convert --dtype bf16`)", model_.weights().FileOf(name), name,
          DTypeName(t.dtype));
  Require(t.shape.size() == 2, "{}: tensor '{}' has {} dimensions, a matrix has 2",
          model_.weights().FileOf(name), name, t.shape.size());
  return {t.dtype, t.data, t.shape[0], t.shape[1]};
}

std::span<const float> Decoder::Prefill(std::span<const int32_t> prompt) {
  const int64_t T = static_cast<int64_t>(prompt.size());
  Require(T >= 1, "generate: the prompt is empty");
  Require(T <= max_context_,
          "generate: the prompt has {} tokens, more than the context of {} positions", T,
          max_context_);
  const int64_t D = c_.hidden_size, KVd = c_.num_kv_heads * c_.head_dim;
  const Backend& ops = model_.backend();
  FlatBuffer xf = ops.AllocateFloats(static_cast<size_t>(T * D));
  model_.ForwardHidden(prompt.data(), 1, T, xf.data(), [&](int64_t l, const float* k,
                                                          const float* v) {
    LayerCache& lc = cache_[l];
    for (int64_t p = std::max<int64_t>(0, T - lc.capacity); p < T; ++p) {
      const int64_t slot = p % lc.capacity;
      ops.Copy(lc.k.data() + slot * KVd, k + p * KVd, KVd);
      ops.Copy(lc.v.data() + slot * KVd, v + p * KVd, KVd);
    }
  });
  length_ = T;
  ops.MatVec(head_, xf.data() + (T - 1) * D, logits_.data());
  return HostLogits(T - 1);
}

// A step reads the stored weights directly (the prefill checked only the layers it widened), so
// a NaN or Inf anywhere in them shows up here first; sampling from such logits would print
// arbitrary tokens with exit 0.
std::span<const float> Decoder::HostLogits(int64_t pos) {
  const float* logits = ReadOnHost(model_.backend(), logits_, logits_.size(), host_logits_);
  const std::span<const float> out(logits, logits_.size());
  const std::optional<size_t> bad = FirstNonFinite(out.data(), out.size());
  if (!bad) return out;
  Fail("generate: the next-token logits at position {} hold {} (vocabulary id {}): the model's "
       "weights are not all finite (the LM head '{}', an embedding row or a layer); refusing to "
       "sample. `replica eval --model DIR` names the first bad tensor of the layers",
       pos, out[*bad], *bad,
       c_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
}

// Layer l's BlockSite (model/block.h) for the one row at position pos: projections are matrix-
// vector products on the stored matrices, RoPE at pos, and attention over the layer's cache after
// this position's key and value are written into its slot.
class Decoder::Site final : public BlockSite {
 public:
  Site(Decoder& d, int64_t l, int64_t pos) : d_(d), l_(l), pos_(pos) {}
  void Linear(LayerTensor t, const float* x, int64_t rows, int64_t in, int64_t out,
              float* y) const override {
    const StoredMatrix& w = d_.matrices_[l_][static_cast<size_t>(t)];
    Require(rows == 1 && w.rows == out && w.cols == in,
            "decoder: {} is [{}, {}], the block reads [{}, {}] for {} rows", LayerTensorName(l_, t),
            w.rows, w.cols, out, in, rows);
    d_.model_.backend().MatVec(w, x, y);
  }
  const float* Norm(LayerTensor t) const override {
    const int64_t D = d_.c_.hidden_size, Qd = d_.c_.num_heads * d_.c_.head_dim;
    const int64_t KVd = d_.c_.num_kv_heads * d_.c_.head_dim;
    const float* n = d_.norms_[l_].data();
    switch (t) {
      case LayerTensor::kQNorm: return n;
      case LayerTensor::kKNorm: return n + Qd;
      case LayerTensor::kPostAttentionNorm: return n + Qd + KVd;
      case LayerTensor::kPostFeedforwardNorm: return n + Qd + KVd + D;
      default: Fail("decoder: {} is not a norm weight", LayerTensorName(l_, t));
    }
  }
  void Rope(float* q, float* k) const override {
    const RopeTable& rope = d_.ropes_.ForLayer(l_);
    const int32_t pos = static_cast<int32_t>(pos_);
    d_.model_.backend().RopeForward(rope, q, 1, 1, d_.c_.num_heads, &pos, q);
    d_.model_.backend().RopeForward(rope, k, 1, 1, d_.c_.num_kv_heads, &pos, k);
  }
  void Attend(const float* q, const float* k, const float* v, float* att,
              float*) const override {
    const int64_t KVd = d_.c_.num_kv_heads * d_.c_.head_dim;
    LayerCache& lc = d_.cache_[l_];
    const int64_t slot = pos_ % lc.capacity;
    d_.model_.backend().Copy(lc.k.data() + slot * KVd, k, KVd);
    d_.model_.backend().Copy(lc.v.data() + slot * KVd, v, KVd);
    const DecodeAttentionShape s{d_.c_.num_heads, d_.c_.num_kv_heads, d_.c_.head_dim,
                                 d_.c_.Window(l_), lc.capacity, pos_};
    d_.model_.backend().AttentionDecode(s, q, lc.k.data(), lc.v.data(), att,
                                        d_.scores_.data());
  }

 private:
  Decoder& d_;
  int64_t l_, pos_;
};

std::span<const float> Decoder::Step(int32_t token) {
  Require(length_ >= 1, "decoder: Step before Prefill");
  Require(length_ < max_context_, "generate: the context of {} positions is full", max_context_);
  const int64_t D = c_.hidden_size, I = c_.intermediate_size, H = c_.num_heads;
  const int64_t Qd = H * c_.head_dim, KVd = c_.num_kv_heads * c_.head_dim;
  const int64_t V = c_.vocab_size;
  const double eps = c_.rms_norm_eps;
  Require(token >= 0 && token < V, "generate: token id {} is outside the vocabulary [0, {})",
          token, V);
  const int64_t pos = length_;
  const Backend& ops = model_.backend();
  const TensorInfo& e = model_.weights().Get("model.embed_tokens.weight");
  ops.EmbeddingForwardStored({e.dtype, e.data, V, D}, &token, 1, x_.data());
  float* rstd = rstd_.data();
  const BlockActivations a{x_.data(), q_raw_.data(), k_raw_.data(), v_.data(),  q_.data(),
                           k_.data(), rstd,          rstd,          att_.data(), nullptr,
                           a_.data(), rstd,          h_.data(),     g_.data(),   u_.data(),
                           s_.data(), m_.data(),     rstd};
  for (int64_t l = 0; l < c_.num_layers; ++l)
    BlockForward(ops, {1, D, I, Qd, KVd, eps}, Site(*this, l, pos), a, x_.data());
  ops.RMSNormForward(x_.data(), final_norm_.data(), 1, D, eps, xf_.data(), rstd);
  ops.MatVec(head_, xf_.data(), logits_.data());
  const std::span<const float> logits = HostLogits(pos);
  length_ = pos + 1;
  return logits;
}

}  // namespace replica

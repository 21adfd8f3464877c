// The Olmo 3 forward and backward (docs/design.md §3; math in tests/data/olmo3/README.md).
//
// One layer's forward is the block of model/block.h (the list of op calls that evaluation and
// decoding run too), over this model's Site; LayerBackward below is that list read bottom-up. Every op is a call on the Backend the model was built over
// (ops/backend.h), so no arithmetic on tensors happens here. The activations the backward needs
// live in one preallocated arena: what the recompute policy keeps (model/recompute.h) per layer,
// what it recomputes in one working set shared by all layers, refilled in backward by re-issuing
// the forward's own op calls before each layer's backward; gradient scratch is shared by all layers, carved
// for the call's row count out of one region that is zeroed once per layer (the backward ops
// accumulate). Weights and parameter gradients come one unit at a time from the ParamStore
// (model/param_store.h): every use of a unit's weights is bracketed by Acquire/Release, and a
// unit's gradients by Grads/GradsDone in backward. The gradient of the residual stream lives in one buffer that flows from the LM head
// down to the embedding: each sublayer's backward adds its contribution into it in place (the
// residual path itself is the identity).
#include "model/olmo3.h"

#include <vector>

#include "core/profile.h"
#include "core/error.h"
#include "model/block.h"
#include "model/document_positions.h"
#include "model/layer_ropes.h"
#include "model/layer_tensors.h"
#include "ops/document_mask.h"

namespace replica {

namespace {

// Carves 64-byte aligned float regions out of one FlatBuffer: first counts, then hands out.
class Arena {
 public:
  float* Take(int64_t n) {
    const size_t at = used_;
    used_ += (static_cast<size_t>(n) + ParamLayout::kAlignFloats - 1) / ParamLayout::kAlignFloats *
             ParamLayout::kAlignFloats;
    return base_ ? base_ + at : nullptr;
  }
  size_t used() const { return used_; }
  void Reset(float* base) {
    base_ = base;
    used_ = 0;
  }

 private:
  float* base_ = nullptr;
  size_t used_ = 0;
};

}  // namespace

// Per-layer parameter (or gradient) pointers into a FlatBuffer.
template <typename F>
struct LayerTensors {
  F* q_proj;     // [H*hd, D]
  F* k_proj;     // [KV*hd, D]
  F* v_proj;     // [KV*hd, D]
  F* o_proj;     // [D, H*hd]
  F* q_norm;     // [H*hd]
  F* k_norm;     // [KV*hd]
  F* gate_proj;  // [I, D]
  F* up_proj;    // [I, D]
  F* down_proj;  // [D, I]
  F* attn_norm;  // [D]  post_attention_layernorm
  F* ff_norm;    // [D]  post_feedforward_layernorm

  F* operator[](LayerTensor t) const {
    switch (t) {
      case LayerTensor::kQProj: return q_proj;
      case LayerTensor::kKProj: return k_proj;
      case LayerTensor::kVProj: return v_proj;
      case LayerTensor::kOProj: return o_proj;
      case LayerTensor::kQNorm: return q_norm;
      case LayerTensor::kKNorm: return k_norm;
      case LayerTensor::kGateProj: return gate_proj;
      case LayerTensor::kUpProj: return up_proj;
      case LayerTensor::kDownProj: return down_proj;
      case LayerTensor::kPostAttentionNorm: return attn_norm;
      case LayerTensor::kPostFeedforwardNorm: return ff_norm;
    }
    return nullptr;
  }
};

// Where each layer tensor starts, relative to its unit's first float.
struct LayerOffsets {
  size_t q_proj, k_proj, v_proj, o_proj, q_norm, k_norm, gate_proj, up_proj, down_proj, attn_norm,
      ff_norm;
  template <typename F>
  LayerTensors<F> At(F* unit) const {
    return {unit + q_proj,    unit + k_proj,  unit + v_proj,    unit + o_proj,
            unit + q_norm,    unit + k_norm,  unit + gate_proj, unit + up_proj,
            unit + down_proj, unit + attn_norm, unit + ff_norm};
  }
};

// What the backward of one layer needs from its forward (model/block.h). N = max_batch * max_seq
// rows. Under a recompute policy the recomputed values of every layer point at the same
// working-set buffers.
using LayerActivations = BlockActivations;

// Gradients of one layer's intermediate values, shared by all layers (one layer's backward at a
// time). Carved for the call's N = B*T rows out of one region, so zeroing them is one call.
struct LayerGrads {
  float* dm;                     // [N, D]
  float* ds, *dg, *du;           // [N, I]
  float* da;                     // [N, D]
  float* datt;                   // [N, H*hd]
  float* dq, *dq_norm, *dq_raw;  // [N, H*hd]  (after rope, before rope, before norm)
  float* dk, *dk_norm, *dk_raw;  // [N, KV*hd]
  float* dv;                     // [N, KV*hd]
};

// The widths the activation arena is carved by.
struct ArenaShape {
  int64_t L, D, I, H, Qd, KVd;
  explicit ArenaShape(const ModelConfig& c)
      : L(c.num_layers), D(c.hidden_size), I(c.intermediate_size), H(c.num_heads),
        Qd(c.num_heads * c.head_dim), KVd(c.num_kv_heads * c.head_dim) {}
};

LayerGrads TakeLayerGrads(const ArenaShape& s, Arena& arena, int64_t N) {
  LayerGrads g;
  g.dm = arena.Take(N * s.D);
  g.ds = arena.Take(N * s.I);
  g.dg = arena.Take(N * s.I);
  g.du = arena.Take(N * s.I);
  g.da = arena.Take(N * s.D);
  g.datt = arena.Take(N * s.Qd);
  g.dq = arena.Take(N * s.Qd);
  g.dq_norm = arena.Take(N * s.Qd);
  g.dq_raw = arena.Take(N * s.Qd);
  g.dk = arena.Take(N * s.KVd);
  g.dk_norm = arena.Take(N * s.KVd);
  g.dk_raw = arena.Take(N * s.KVd);
  g.dv = arena.Take(N * s.KVd);
  return g;
}

// Every activation buffer of the model, carved out of one arena.
struct ActivationBuffers {
  std::vector<LayerActivations> acts;  // [L]
  float* final_in;     // [N, D] residual stream after the last layer
  float* xf;           // [N, D] RMSNorm(final_in)
  float* rstd_f;       // [N]
  float* dres;         // [N, D] ∂loss/∂(residual stream), flows layer to layer
  float* dxf;          // [N, D] ∂loss/∂xf
  float* layer_grads;  // region holding LayerGrads for up to N rows

  // Carves for N rows: per layer what `policy` keeps, once what it recomputes (the working set),
  // then the head's buffers and the gradient scratch. With a null-based arena it only counts.
  void Carve(const ArenaShape& s, int64_t N, Recompute policy, Arena& arena) {
    const bool keep_attention = policy != Recompute::kFull;  // and the norms' statistics
    const bool keep_mlp = policy == Recompute::kNone;        // g, u, s, m
    acts.assign(static_cast<size_t>(s.L), {});
    LayerActivations work{};
    for (size_t l = 0; l < acts.size(); ++l) {
      LayerActivations& a = acts[l];
      auto take = [&](bool keep, float* LayerActivations::*field, int64_t n) {
        if (keep) {
          a.*field = arena.Take(n);
        } else {
          if (l == 0) work.*field = arena.Take(n);
          a.*field = work.*field;
        }
      };
      take(true, &LayerActivations::x, N * s.D);
      take(keep_attention, &LayerActivations::q_raw, N * s.Qd);
      take(keep_attention, &LayerActivations::k_raw, N * s.KVd);
      take(keep_attention, &LayerActivations::v, N * s.KVd);
      take(keep_attention, &LayerActivations::q, N * s.Qd);
      take(keep_attention, &LayerActivations::k, N * s.KVd);
      take(keep_attention, &LayerActivations::rstd_q, N);
      take(keep_attention, &LayerActivations::rstd_k, N);
      take(keep_attention, &LayerActivations::att, N * s.Qd);
      take(keep_attention, &LayerActivations::lse, N * s.H);
      take(keep_attention, &LayerActivations::a, N * s.D);
      take(keep_attention, &LayerActivations::rstd_a, N);
      take(keep_attention, &LayerActivations::h, N * s.D);
      take(keep_mlp, &LayerActivations::g, N * s.I);
      take(keep_mlp, &LayerActivations::u, N * s.I);
      take(keep_mlp, &LayerActivations::s, N * s.I);
      take(keep_mlp, &LayerActivations::m, N * s.D);
      take(keep_attention, &LayerActivations::rstd_m, N);
    }
    final_in = arena.Take(N * s.D);
    xf = arena.Take(N * s.D);
    rstd_f = arena.Take(N);
    dres = arena.Take(N * s.D);
    dxf = arena.Take(N * s.D);
    Arena sizing;
    TakeLayerGrads(s, sizing, N);
    layer_grads = arena.Take(static_cast<int64_t>(sizing.used()));
  }
};

struct Olmo3Model::Impl : ActivationBuffers {
  const Backend& ops;
  ModelConfig config;
  ParamLayout layout;
  int64_t max_batch, max_seq;
  Recompute recompute;
  int64_t D, I, V, L, H, KV, hd, Qd, KVd;  // Qd = H*hd, KVd = KV*hd
  std::unique_ptr<ParamStore> store;
  ResidentParamStore* resident;  // store, when it is the resident one; else null
  int head_unit;                 // L+1: final norm (+ untied LM head)
  int lm_head_unit;              // head_unit, or 0 when the LM head is the embedding
  size_t final_norm_at, lm_head_at;  // offsets in those units
  std::vector<LayerOffsets> layer_at;  // [L]
  FlatBuffer acts_buffer;
  LayerRopes ropes;  // each layer's table, for positions [0, max_seq)
  LmHeadWorkspace lm_ws;
  std::vector<int32_t> cu_doc_lens;  // the current call's document lengths; empty = none
  std::vector<int32_t> positions;    // [B·T] RoPE positions within the documents; empty = none

  Impl(const Backend& backend, const ModelConfig& c, int64_t max_b, int64_t max_t,
       std::unique_ptr<ParamStore> s, Recompute policy);
  void BindUnits();
  void Carve(Arena& arena) { ActivationBuffers::Carve(ArenaShape(config), max_batch * max_seq,
                                                     recompute, arena); }
  void ZeroScratch(float* p, int64_t n) const {
    ProfileScope profile_scope(ProfileCategory::kZero);
    ops.Zero(p, n);
  }
  void Validate(const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T) const;
  // Keeps a copy of the call's document lengths (validated) and their RoPE positions, or clears
  // them.
  void SetDocuments(const int32_t* cu, int64_t n, int64_t B, int64_t T);
  AttentionShape Shape(int64_t l, int64_t B, int64_t T) const {
    AttentionShape s{B, T, H, KV, hd, config.Window(l)};
    if (!cu_doc_lens.empty()) {
      s.cu_doc_lens = cu_doc_lens.data();
      s.num_cu_doc_lens = static_cast<int64_t>(cu_doc_lens.size());
    }
    return s;
  }
  // RoPE on x [B, T, heads, hd] in place, and its backward into dx: positions t within the row, or,
  // with documents, t minus the document's start.
  void RopeForward(const RopeTable& rope, float* x, int64_t B, int64_t T, int64_t heads) const {
    ops.RopeForward(rope, x, B, T, heads, positions.empty() ? nullptr : positions.data(), x);
  }
  void RopeBackward(const RopeTable& rope, const float* dy, int64_t B, int64_t T, int64_t heads,
                    float* dx) const {
    ops.RopeBackward(rope, dy, B, T, heads, positions.empty() ? nullptr : positions.data(), dx);
  }

  // Up to xf. Returns the head unit's weights, left acquired for the caller's LM head (which
  // releases it).
  const float* Forward(const int32_t* tokens, int64_t B, int64_t T);
  // The LM head weights [V, D] for a head unit acquired at `head`; acquires unit 0 when tied.
  const float* AcquireLmHead(const float* head);
  void ReleaseHead();
  class Site;  // layer l's BlockSite: the unit's fp32 weights, the batch's positions and keys
  BlockDims Dims(int64_t B, int64_t T) const {
    return {B * T, D, I, Qd, KVd, config.rms_norm_eps};
  }
  void LayerForward(int64_t l, int64_t B, int64_t T, const LayerTensors<const float>& p);
  // Refills the working set with layer l's recomputed values (the policy's part of its forward).
  void RecomputeLayer(int64_t l, int64_t B, int64_t T, const LayerTensors<const float>& p);
  void LayerBackward(int64_t l, int64_t B, int64_t T, const LayerTensors<const float>& p,
                     const LayerTensors<float>& g);
};

Olmo3Model::Impl::Impl(const Backend& backend, const ModelConfig& c, int64_t max_b,
                       int64_t max_t, std::unique_ptr<ParamStore> s, Recompute policy)
    : ops(backend),
      config(c), layout(c.BuildLayout()), max_batch(max_b), max_seq(max_t), recompute(policy),
      store(std::move(s)) {
  Require(max_b >= 1 && max_t >= 1, "Olmo3Model: max batch {} and max sequence {} must be >= 1",
          max_b, max_t);
  D = c.hidden_size, I = c.intermediate_size, V = c.vocab_size, L = c.num_layers;
  H = c.num_heads, KV = c.num_kv_heads, hd = c.head_dim;
  Qd = H * hd, KVd = KV * hd;
  Require(D > 0 && I > 0 && V > 0 && L > 0 && H > 0 && KV > 0 && hd > 0 && H % KV == 0,
          "Olmo3Model: invalid model shape (D={}, I={}, V={}, L={}, H={}, KV={}, hd={})", D, I, V, L,
          H, KV, hd);
  Require(static_cast<int64_t>(c.layer_types.size()) == L,
          "Olmo3Model: {} layer types for {} layers", c.layer_types.size(), L);
  if (!store) store = std::make_unique<ResidentParamStore>(layout, L, ops);
  resident = dynamic_cast<ResidentParamStore*>(store.get());
  BindUnits();
  Arena arena;
  Carve(arena);  // count
  acts_buffer = ops.AllocateFloats(arena.used());
  arena.Reset(acts_buffer.data());
  Carve(arena);  // hand out
  ropes = LayerRopes(ops, c, max_seq);
  lm_ws = LmHeadWorkspace(ops, max_batch * max_seq, V);
}

void Olmo3Model::Impl::BindUnits() {
  const std::vector<size_t> bounds = UnitBounds(layout, L);
  head_unit = static_cast<int>(L + 1);
  auto at = [&](const std::string& name, int unit) {
    return layout.Get(name).offset - bounds[static_cast<size_t>(unit)];
  };
  for (int64_t l = 0; l < L; ++l) {
    const int u = static_cast<int>(l + 1);
    auto t = [&](LayerTensor id) { return at(LayerTensorName(l, id), u); };
    using enum LayerTensor;
    layer_at.push_back({t(kQProj), t(kKProj), t(kVProj), t(kOProj), t(kQNorm), t(kKNorm),
                        t(kGateProj), t(kUpProj), t(kDownProj), t(kPostAttentionNorm),
                        t(kPostFeedforwardNorm)});
  }
  final_norm_at = at("model.norm.weight", head_unit);
  lm_head_unit = config.tie_word_embeddings ? 0 : head_unit;
  lm_head_at = config.tie_word_embeddings ? 0 : at("lm_head.weight", head_unit);
}

void Olmo3Model::Impl::Validate(const int32_t* tokens, const int32_t* labels, int64_t B,
                                int64_t T) const {
  Require(B >= 1 && B <= max_batch, "Olmo3Model: batch {} outside [1, {}] (max_batch)", B,
          max_batch);
  Require(T >= 1 && T <= max_seq, "Olmo3Model: sequence length {} outside [1, {}] (max_seq)", T,
          max_seq);
  for (int64_t i = 0; i < B * T; ++i) {
    Require(tokens[i] >= 0 && tokens[i] < V,
            "Olmo3Model: input id {} at [{}, {}] is outside the vocabulary [0, {})", tokens[i],
            i / T, i % T, V);
    if (labels) {
      Require(labels[i] == kIgnoreLabel || (labels[i] >= 0 && labels[i] < V),
              "Olmo3Model: label {} at [{}, {}] is neither -100 nor in [0, {})", labels[i], i / T,
              i % T, V);
    }
  }
}

void Olmo3Model::Impl::SetDocuments(const int32_t* cu, int64_t n, int64_t B, int64_t T) {
  cu_doc_lens.clear();
  positions.clear();
  if (cu == nullptr && n == 0) return;
  ValidateDocumentLengths(cu, n, B, T);
  cu_doc_lens.assign(cu, cu + n);
  positions = DocumentPositions(cu, n, B, T);
}

class Olmo3Model::Impl::Site final : public BlockSite {
 public:
  Site(const Impl& m, int64_t l, int64_t B, int64_t T, const LayerTensors<const float>& p)
      : m_(m), l_(l), B_(B), T_(T), p_(p) {}
  void Linear(LayerTensor t, const float* x, int64_t rows, int64_t in, int64_t out,
              float* y) const override {
    m_.ops.LinearForward(x, p_[t], rows, in, out, y);
  }
  const float* Norm(LayerTensor t) const override { return p_[t]; }
  void Rope(float* q, float* k) const override {
    const RopeTable& rope = m_.ropes.ForLayer(l_);
    m_.RopeForward(rope, q, B_, T_, m_.H);
    m_.RopeForward(rope, k, B_, T_, m_.KV);
  }
  void Attend(const float* q, const float* k, const float* v, float* att,
              float* lse) const override {
    m_.ops.AttentionForward(m_.Shape(l_, B_, T_), q, k, v, att, lse);
  }

 private:
  const Impl& m_;
  int64_t l_, B_, T_;
  const LayerTensors<const float>& p_;
};

// Layer l's block (model/block.h); its output is the next layer's input (or final_in).
void Olmo3Model::Impl::LayerForward(int64_t l, int64_t B, int64_t T,
                                    const LayerTensors<const float>& p) {
  BlockForward(ops, Dims(B, T), Site(*this, l, B, T, p), acts[l],
               l + 1 < L ? acts[l + 1].x : final_in);
}

// mlp: the MLP's projections from the kept h (rstd_m is kept). full: the whole layer from the kept
// x; its output lands in the next layer's input slot (or final_in), whose backward is done, and it
// is the same bits that are there.
void Olmo3Model::Impl::RecomputeLayer(int64_t l, int64_t B, int64_t T,
                                      const LayerTensors<const float>& p) {
  if (recompute == Recompute::kMlp) BlockMlp(ops, Dims(B, T), Site(*this, l, B, T, p), acts[l]);
  if (recompute == Recompute::kFull) LayerForward(l, B, T, p);
}

// The mirror of LayerForward. On entry dres = ∂loss/∂out; on exit it is ∂loss/∂x. Every op
// accumulates: into dres (the residual stream's gradient), into the parameter gradients, and into
// this layer's gradient scratch, zeroed once here.
void Olmo3Model::Impl::LayerBackward(int64_t l, int64_t B, int64_t T,
                                     const LayerTensors<const float>& p,
                                     const LayerTensors<float>& g) {
  const int64_t N = B * T;
  const LayerActivations& a = acts[l];
  Arena arena;
  arena.Reset(layer_grads);
  const LayerGrads d = TakeLayerGrads(ArenaShape(config), arena, N);
  ZeroScratch(layer_grads, static_cast<int64_t>(arena.used()));
  // MLP (dres is ∂out, then ∂h: out = h + RMSNorm(m)).
  ops.RMSNormBackward(a.m, p.ff_norm, a.rstd_m, dres, N, D, d.dm, g.ff_norm);
  ops.LinearBackward(a.s, p.down_proj, d.dm, N, I, D, d.ds, g.down_proj);
  ops.SwiGLUBackward(a.g, a.u, d.ds, N * I, d.dg, d.du);
  ops.LinearBackward(a.h, p.up_proj, d.du, N, D, I, dres, g.up_proj);
  ops.LinearBackward(a.h, p.gate_proj, d.dg, N, D, I, dres, g.gate_proj);
  // Attention (dres becomes ∂x: h = x + RMSNorm(a)).
  ops.RMSNormBackward(a.a, p.attn_norm, a.rstd_a, dres, N, D, d.da, g.attn_norm);
  ops.LinearBackward(a.att, p.o_proj, d.da, N, Qd, D, d.datt, g.o_proj);
  ops.AttentionBackward(Shape(l, B, T), a.q, a.k, a.v, a.att, a.lse, d.datt, d.dq, d.dk, d.dv);
  const RopeTable& rope = ropes.ForLayer(l);
  RopeBackward(rope, d.dk, B, T, KV, d.dk_norm);
  RopeBackward(rope, d.dq, B, T, H, d.dq_norm);
  ops.RMSNormBackward(a.k_raw, p.k_norm, a.rstd_k, d.dk_norm, N, KVd, d.dk_raw, g.k_norm);
  ops.RMSNormBackward(a.q_raw, p.q_norm, a.rstd_q, d.dq_norm, N, Qd, d.dq_raw, g.q_norm);
  ops.LinearBackward(a.x, p.v_proj, d.dv, N, D, KVd, dres, g.v_proj);
  ops.LinearBackward(a.x, p.k_proj, d.dk_raw, N, D, KVd, dres, g.k_proj);
  ops.LinearBackward(a.x, p.q_proj, d.dq_raw, N, D, Qd, dres, g.q_proj);
}

const float* Olmo3Model::Impl::Forward(const int32_t* tokens, int64_t B, int64_t T) {
  const int64_t N = B * T;
  ops.EmbeddingForward(store->Acquire(0), tokens, N, D, acts[0].x);
  store->Release(0);
  for (int64_t l = 0; l < L; ++l) {
    const int u = static_cast<int>(l + 1);
    LayerForward(l, B, T, layer_at[static_cast<size_t>(l)].At(store->Acquire(u)));
    store->Release(u);
  }
  const float* head = store->Acquire(head_unit);
  ops.RMSNormForward(final_in, head + final_norm_at, N, D, config.rms_norm_eps, xf, rstd_f);
  return head;
}

const float* Olmo3Model::Impl::AcquireLmHead(const float* head) {
  return lm_head_unit == head_unit ? head + lm_head_at : store->Acquire(lm_head_unit) + lm_head_at;
}

void Olmo3Model::Impl::ReleaseHead() {
  if (lm_head_unit != head_unit) store->Release(lm_head_unit);
  store->Release(head_unit);
}

Olmo3Model::Olmo3Model(const ModelConfig& config, int64_t max_batch, int64_t max_seq,
                       const Backend& backend, Recompute recompute)
    : impl_(std::make_unique<Impl>(backend, config, max_batch, max_seq, nullptr, recompute)) {}
Olmo3Model::Olmo3Model(const ModelConfig& config, int64_t max_batch, int64_t max_seq,
                       const Backend& backend, std::unique_ptr<ParamStore> store,
                       Recompute recompute)
    : impl_(std::make_unique<Impl>(backend, config, max_batch, max_seq, std::move(store),
                                   recompute)) {}
Olmo3Model::~Olmo3Model() = default;

uint64_t Olmo3Model::ActivationArenaFloats(const ModelConfig& config, int64_t max_batch,
                                           int64_t max_seq, Recompute recompute) {
  ActivationBuffers counted;
  Arena arena;
  counted.Carve(ArenaShape(config), max_batch * max_seq, recompute, arena);
  return arena.used();
}

Recompute Olmo3Model::recompute() const { return impl_->recompute; }
uint64_t Olmo3Model::activation_arena_floats() const { return impl_->acts_buffer.size(); }
uint64_t Olmo3Model::lm_head_workspace_bytes() const { return impl_->lm_ws.allocated_bytes(); }

const ModelConfig& Olmo3Model::config() const { return impl_->config; }
const ParamLayout& Olmo3Model::layout() const { return impl_->layout; }
FlatBuffer& Olmo3Model::params() {
  Require(impl_->resident != nullptr,
          "Olmo3Model: the parameters are sharded over ranks (parallel.sharding: zero3); there is "
          "no whole parameter buffer");
  return impl_->resident->params();
}
FlatBuffer& Olmo3Model::grads() {
  Require(impl_->resident != nullptr,
          "Olmo3Model: the gradients are sharded over ranks (parallel.sharding: zero3); there is "
          "no whole gradient buffer");
  return impl_->resident->grads();
}
ParamStore& Olmo3Model::store() { return *impl_->store; }
const Backend& Olmo3Model::backend() const { return impl_->ops; }
int64_t Olmo3Model::ReplacePlainRopeEntries(int64_t positions, const float* cos,
                                            const float* sin) {
  return impl_->ropes.ReplacePlainEntries(impl_->ops, positions, cos, sin);
}

CrossEntropySums Olmo3Model::ForwardBackward(const int32_t* tokens, const int32_t* labels, int64_t B,
                                     int64_t T, double grad_scale, double z_loss_multiplier,
                                     const int32_t* cu_doc_lens, int64_t num_cu_doc_lens) {
  Impl& m = *impl_;
  Require(labels != nullptr, "Olmo3Model::ForwardBackward: labels are required");
  m.Validate(tokens, labels, B, T);
  m.SetDocuments(cu_doc_lens, num_cu_doc_lens, B, T);
  const int64_t N = B * T, D = m.D;
  ParamStore& store = *m.store;
  const float* head = m.Forward(tokens, B, T);
  m.ZeroScratch(m.dxf, N * D);
  m.ZeroScratch(m.dres, N * D);
  // logits = xf lm_head^T, fused with CE + z-loss and their backward. Tied: the LM head's
  // gradient goes into unit 0's, which stays open until the embedding's backward.
  float* dhead = store.Grads(m.head_unit);
  float* dlm_head =
      (m.lm_head_unit == m.head_unit ? dhead : store.Grads(m.lm_head_unit)) + m.lm_head_at;
  CrossEntropySums s = m.ops.LmHeadLossForwardBackward(m.xf, m.AcquireLmHead(head), labels, N, D,
                                                       m.V, grad_scale, z_loss_multiplier, m.lm_ws,
                                                       m.dxf, dlm_head);
  // xf = RMSNorm(final_in)
  m.ops.RMSNormBackward(m.final_in, head + m.final_norm_at, m.rstd_f, m.dxf, N, D, m.dres,
                        dhead + m.final_norm_at);
  m.ReleaseHead();
  store.GradsDone(m.head_unit);
  // The forward left the last layer's values in the working set; the others are recomputed with
  // the weights acquired for the layer's backward.
  for (int64_t l = m.L - 1; l >= 0; --l) {
    const int u = static_cast<int>(l + 1);
    const LayerOffsets& at = m.layer_at[static_cast<size_t>(l)];
    const LayerTensors<const float> p = at.At(store.Acquire(u));
    if (l + 1 < m.L) m.RecomputeLayer(l, B, T, p);
    m.LayerBackward(l, B, T, p, at.At(store.Grads(u)));
    store.Release(u);
    store.GradsDone(u);
  }
  // x0 = embed_tokens[tokens]
  m.ops.EmbeddingBackward(tokens, m.dres, N, m.V, D, store.Grads(0));
  store.GradsDone(0);
  return s;
}

CrossEntropySums Olmo3Model::ForwardLoss(const int32_t* tokens, const int32_t* labels, int64_t B,
                                 int64_t T, const int32_t* cu_doc_lens, int64_t num_cu_doc_lens) {
  Impl& m = *impl_;
  Require(labels != nullptr, "Olmo3Model::ForwardLoss: labels are required");
  m.Validate(tokens, labels, B, T);
  m.SetDocuments(cu_doc_lens, num_cu_doc_lens, B, T);
  const float* head = m.Forward(tokens, B, T);
  CrossEntropySums s =
      m.ops.LmHeadLossForward(m.xf, m.AcquireLmHead(head), labels, B * T, m.D, m.V, m.lm_ws);
  m.ReleaseHead();
  return s;
}

void Olmo3Model::ForwardLogits(const int32_t* tokens, int64_t B, int64_t T, float* logits,
                               const int32_t* cu_doc_lens, int64_t num_cu_doc_lens) {
  Impl& m = *impl_;
  m.Validate(tokens, nullptr, B, T);
  m.SetDocuments(cu_doc_lens, num_cu_doc_lens, B, T);
  const float* head = m.Forward(tokens, B, T);
  if (m.ops.is_host()) {
    m.ops.LmHeadLogits(m.xf, m.AcquireLmHead(head), B * T, m.D, m.V, logits);
  } else {
    // The caller's logits are host memory: computed in the backend's, then copied out.
    Buffer out = m.ops.Allocate(DType::kF32, static_cast<size_t>(B * T * m.V));
    m.ops.LmHeadLogits(m.xf, m.AcquireLmHead(head), B * T, m.D, m.V,
                       static_cast<float*>(out.raw()));
    m.ops.CopyToHost(logits, out.raw(), out.bytes());
  }
  m.ReleaseHead();
}

}  // namespace replica

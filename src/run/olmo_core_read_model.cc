// Readers of the model section: TransformerConfig, its blocks, attention, RoPE (and YaRN), norms.
#include <cmath>

#include "core/error.h"
#include "run/olmo_core_import.h"

namespace replica::olmo_core {

std::optional<double> Importer::ReadLayerNorm(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kLayerNorm);
  if (!cls) return std::nullopt;
  Obj o(*this, j, path, *cls);
  std::optional<double> eps = o.Num("eps");
  if (!eps) eps = 1e-5;  // the norm modules' default when LayerNormConfig.eps is None
  if (!std::isfinite(*eps) || *eps <= 0 || *eps >= 1)
    Refuse(o.At("eps"), fmt::format("{}: expected a norm epsilon in (0, 1)", *eps));
  o.Finish();
  return eps;
}

void Importer::ReadAttention(const json& j, const std::string& path, Block& b) {
  const ClassRule* cls = Dispatch(j, path, Role::kAttention);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  if (auto v = o.Int("n_heads"))
    b.n_heads.Set(*v, o.At("n_heads"));
  else if (!o.Has("n_heads"))
    b.n_heads.Set(16, o.At("n_heads") + " (absent: AttentionConfig default 16)");
  if (auto v = o.Int("n_kv_heads")) b.n_kv_heads.Set(*v, o.At("n_kv_heads"));
  if (auto v = o.Int("head_dim")) b.head_dim.Set(*v, o.At("head_dim"));
  for (const Src<int64_t>* s : {&b.n_heads, &b.n_kv_heads, &b.head_dim})
    if (s->set && (s->value < 1 || s->value > kMaxWidth))
      Refuse(s->path.substr(0, s->path.find(' ')),
             fmt::format("{}: expected 1 to {} (the most replica accepts)", s->value, kMaxWidth));
  if (const json* v = o.Take("qk_norm")) {
    if (auto eps = ReadLayerNorm(*v, o.At("qk_norm"))) b.qk_norm_eps.Set(*eps, o.At("qk_norm.eps"));
  } else {
    Refuse(o.At("qk_norm"), "absent: replica's model always applies QK-norm (Olmo 2/3)");
  }
  if (const json* v = o.Take("rope")) {
    const std::string rp = o.At("rope");
    if (const ClassRule* rcls = Dispatch(*v, rp, Role::kRope)) {
      Obj r(*this, *v, rp, *rcls);
      if (auto t = r.Num("theta")) {
        b.rope_theta.Set(*t, r.At("theta"));
        if (!std::isfinite(*t) || *t <= 1)
          Refuse(r.At("theta"), fmt::format("{}: expected a RoPE base above 1", *t));
      }
      if (const json* s = r.Take("scaling")) {
        b.scaling_present = true;
        ReadYarn(*s, r.At("scaling"), b);
      }
      r.Finish();
    }
  } else {
    Refuse(o.At("rope"), "absent: replica's model always applies RoPE");
  }
  if (const json* v = o.Take("sliding_window")) {
    const std::string wp = o.At("sliding_window");
    if (const ClassRule* wcls = Dispatch(*v, wp, Role::kSlidingWindow)) {
      Obj w(*this, *v, wp, *wcls);
      Window win;
      win.path = wp;
      if (const json* p = w.Take("pattern")) {
        bool ok = p->is_array() && !p->empty() && p->size() <= static_cast<size_t>(kMaxLayers);
        if (ok)
          for (const json& e : *p)
            ok = ok && e.is_number_integer() &&
                 (e.is_number_unsigned() ? e.get<uint64_t>() <= uint64_t{1} << 31
                                         : e.get<int64_t>() == -1);
        if (ok) {
          for (const json& e : *p) win.pattern.push_back(e.get<int64_t>());
        } else {
          Refuse(w.At("pattern"), "expected a non-empty list of window sizes (> 0, or -1 for "
                                  "full attention)");
        }
      } else {
        Refuse(w.At("pattern"), "missing");
      }
      win.first_full = w.Bool("force_full_attention_on_first_layer").value_or(true);
      win.last_full = w.Bool("force_full_attention_on_last_layer").value_or(true);
      w.Finish();
      if (!win.pattern.empty()) b.window = win;
    }
  }
  o.Finish();
}

// rope.scaling: YaRN is read field by field (docs/olmo-core.md); the other scaling classes are
// refused through the field table.
void Importer::ReadYarn(const json& j, const std::string& path, Block& b) {
  const ClassRule* cls = Dispatch(j, path, Role::kRopeScaling);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  OlmoCoreYarn y;  // the dataclass defaults for absent fields
  const size_t refused_before = out_.refused.size();
  for (const char* key : {"factor", "beta_fast", "beta_slow", "old_context_len"})
    if (!o.Has(key)) b.yarn_defaults.insert(key);
  if (auto v = o.Num("factor")) {
    y.factor = *v;
    if (!std::isfinite(*v) || *v < 1.0 || *v > 1e6) {
      Refuse(o.At("factor"), fmt::format("{}: replica's YaRN needs a factor >= 1 (it stretches "
                                         "the context) and at most 1e6",
                                         *v));
    }
  }
  for (auto [key, field] : {std::pair{"beta_fast", &y.beta_fast}, {"beta_slow", &y.beta_slow},
                            {"old_context_len", &y.old_context_len}}) {
    if (auto v = o.Int(key)) {
      *field = *v;
      if (*v <= 0 || *v > (int64_t{1} << 31)) {
        Refuse(o.At(key), fmt::format("{}: expected a positive integer up to 2^31 (OLMo-core "
                                      "divides by it or takes its logarithm)",
                                      *v));
      }
    }
  }
  // A field of older OLMo-core versions, dropped on load (_IGNORE_FIELDS): the factor is always
  // get_attention_rescale_factor(). Which value an older version trained with is not guessed.
  if (auto v = o.Num("attention_rescale_factor")) {
    const double computed = OlmoCoreYarnAttentionFactor(y);
    if (*v == computed) {
      Ignored(o.At("attention_rescale_factor"),
              "equals 0.1 * ln(factor) + 1, the factor OLMo-core computes (it drops this field "
              "on load)");
    } else {
      Refuse(o.At("attention_rescale_factor"),
             fmt::format("{} differs from 0.1 * ln(factor) + 1 = {}, which OLMo-core uses (it "
                         "drops this field on load); the version that trained with it may have "
                         "used either, so it is refused rather than guessed",
                         *v, computed));
    }
  }
  o.Finish();
  if (out_.refused.size() != refused_before) return;  // refused above: nothing is mapped
  b.yarn = y;
  b.yarn_path = path;
}

std::optional<Block> Importer::ReadBlock(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kBlock);
  if (!cls) return std::nullopt;
  Obj o(*this, j, path, *cls);
  Block b;
  b.path = path;
  const json* mixer = o.Take("sequence_mixer");
  const json* attention = o.Take("attention");
  if (mixer && attention) {
    Refuse(o.At("attention"),
           "both 'sequence_mixer' and the older 'attention' are set; OLMo-core refuses that too");
  } else if (mixer) {
    ReadAttention(*mixer, o.At("sequence_mixer"), b);
  } else if (attention) {
    ReadAttention(*attention, o.At("attention"), b);
  } else {
    Refuse(o.At("sequence_mixer"), "missing (neither 'sequence_mixer' nor 'attention' is set)");
  }
  if (const json* v = o.Take("layer_norm")) {
    if (auto eps = ReadLayerNorm(*v, o.At("layer_norm")))
      b.norm_eps.Set(*eps, o.At("layer_norm.eps"));
  } else {
    Refuse(o.At("layer_norm"), "absent: replica's block has RMSNorms");
  }
  if (const json* v = o.Take("feed_forward")) {
    const std::string fp = o.At("feed_forward");
    if (const ClassRule* fcls = Dispatch(*v, fp, Role::kFeedForward)) {
      Obj f(*this, *v, fp, *fcls);
      if (auto h = f.Int("hidden_size")) {
        b.ffn_hidden.Set(*h, f.At("hidden_size"));
        if (*h < 1 || *h > kMaxWidth)
          Refuse(f.At("hidden_size"),
                 fmt::format("{}: expected 1 to {} (the most replica accepts)", *h, kMaxWidth));
      } else if (!f.Has("hidden_size")) {
        Refuse(f.At("hidden_size"), "missing (a required field of FeedForwardConfig)");
      }
      f.Finish();
    }
  } else {
    Refuse(o.At("feed_forward"), "absent: replica's block has a SwiGLU MLP");
  }
  o.Finish();
  // Canonical form for comparing per-layer overrides: the mixer under one key, without the RoPE
  // scaling. Only the few objects involved are copied (the nesting depth is bounded on reading).
  b.canonical = j;
  if (b.canonical.contains("attention")) {
    b.canonical["sequence_mixer"] = b.canonical["attention"];
    b.canonical.erase("attention");
  }
  if (b.canonical.contains("sequence_mixer") && b.canonical["sequence_mixer"].is_object() &&
      b.canonical["sequence_mixer"].contains("rope") &&
      b.canonical["sequence_mixer"]["rope"].is_object())
    b.canonical["sequence_mixer"]["rope"].erase("scaling");
  return b;
}

void Importer::Model(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kModel);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  // Sizes first, each within the model's bounds, before anything is built per layer.
  auto size = [&](const char* key, Src<int64_t>& into, int64_t max, const char* what) {
    if (auto v = o.Int(key)) {
      if (*v < 1 || *v > max)
        Refuse(o.At(key), fmt::format("{}: expected 1 to {} ({})", *v, max, what));
      else
        into.Set(*v, o.At(key));
    } else if (!o.Has(key)) {
      Refuse(o.At(key), "missing (a required field of TransformerConfig)");
    }
  };
  size("d_model", r_.d_model, kMaxWidth, "the most replica accepts");
  size("vocab_size", r_.vocab_size, kMaxVocab, "token ids are 32-bit signed integers");
  size("n_layers", r_.n_layers, kMaxLayers, "the most replica accepts");
  if (auto v = o.Int("init_seed")) {
    if (*v < 0)
      Refuse(o.At("init_seed"), fmt::format("{}: expected a non-negative seed", *v));
    else
      r_.init_seed.Set(*v, o.At("init_seed"));
  }
  if (auto v = o.Num("init_std")) {
    // N(0, std) truncated at ±3 std: above 1 the first layers' outputs overflow bf16/fp32 range
    // within a few steps for any width OLMo-core trains (1e308 is not even an fp32 number).
    if (!std::isfinite(*v) || *v <= 0 || *v > 1)
      Refuse(o.At("init_std"),
             fmt::format("{}: expected a standard deviation in (0, 1]; larger initial weights "
                         "cannot train (OLMo-core's recipes use 0.02)",
                         *v));
    else
      r_.init_std.Set(*v, o.At("init_std"));
  }
  if (const json* v = o.Take("embedding_init_std")) {
    if (!v->is_number() || v->get<double>() != (r_.init_std.set ? r_.init_std.value : 0.02))
      Refuse(o.At("embedding_init_std"),
             "replica initialises the embedding with the same std as the other matrices");
  }
  if (const json* v = o.Take("block")) {
    r_.block = ReadBlock(*v, o.At("block"));
  } else {
    Refuse(o.At("block"), "missing");
  }
  if (const json* v = o.Take("block_overrides")) {
    if (!v->is_object()) {
      Refuse(o.At("block_overrides"), "expected an object of layer -> block");
    } else {
      for (auto it = v->begin(); it != v->end(); ++it) {
        const std::string lp = o.At("block_overrides." + it.key());
        int64_t layer = -1;
        if (!it.key().empty() && it.key().size() <= 6 &&
            it.key().find_first_not_of("0123456789") == std::string::npos)
          layer = std::stoll(it.key());
        if (layer < 0 || !r_.n_layers.set || layer >= r_.n_layers.value) {
          Refuse(lp, "expected a layer index in [0, n_layers)");
          continue;
        }
        if (auto b = ReadBlock(*it, lp)) r_.overrides[layer] = *b;
      }
    }
  }
  if (const json* v = o.Take("lm_head")) {
    const std::string hp = o.At("lm_head");
    if (const ClassRule* hcls = Dispatch(*v, hp, Role::kLmHead)) {
      Obj h(*this, *v, hp, *hcls);
      if (const json* n = h.Take("layer_norm")) {
        if (auto eps = ReadLayerNorm(*n, h.At("layer_norm")))
          r_.final_norm_eps.Set(*eps, h.At("layer_norm.eps"));
      } else {
        Refuse(h.At("layer_norm"), "absent: replica's model has a final RMSNorm");
      }
      h.Finish();
    }
  } else {
    Refuse(o.At("lm_head"), "missing");
  }
  o.Finish();
}

}  // namespace replica::olmo_core

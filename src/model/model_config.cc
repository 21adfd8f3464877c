#include "model/model_config.h"

#include "model/layer_tensors.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/log.h"

namespace replica {
namespace {

using json = nlohmann::json;

constexpr const char* kSliding = "sliding_attention";
constexpr const char* kFull = "full_attention";

// Field access with errors that name the file and the field. A field set to null counts as absent
// (transformers writes null for "use the default").
class Fields {
 public:
  Fields(const json& j, const std::string& source) : j_(j), source_(source) {}
  const json& object() const { return j_; }
  bool Has(const char* key) const { return j_.contains(key); }

  const json* Find(const char* key) const {
    auto it = j_.find(key);
    return (it == j_.end() || it->is_null()) ? nullptr : &*it;
  }
  [[noreturn]] void Bad(const char* key, const char* expected, const json& got) const {
    Fail("{}: field '{}': expected {}, got {}", source_, key, expected, got.dump());
  }
  const json& Required(const char* key) const {
    const json* v = Find(key);
    if (!v) Fail("{}: missing required field '{}'", source_, key);
    return *v;
  }

  static bool IsInt(const json& v) { return v.is_number_integer(); }
  int64_t AsPositiveInt(const char* key, const json& v) const {
    if (!IsInt(v) || v.get<int64_t>() <= 0) Bad(key, "a positive integer", v);
    return v.get<int64_t>();
  }
  int64_t PositiveInt(const char* key) const { return AsPositiveInt(key, Required(key)); }
  std::optional<int64_t> OptionalPositiveInt(const char* key) const {
    const json* v = Find(key);
    if (!v) return std::nullopt;
    return AsPositiveInt(key, *v);
  }
  // At most `max`, else an Error naming the field and the bound (`why` says where it comes from).
  int64_t AtMost(const char* key, int64_t v, int64_t max, const char* why) const {
    if (v > max) Fail("{}: field '{}' = {} is larger than {} ({})", source_, key, v, max, why);
    return v;
  }
  // null or absent -> -1; else a token id of the vocabulary (which also makes it a 32-bit id).
  int64_t TokenId(const char* key, int64_t vocab_size) const {
    const json* v = Find(key);
    if (!v) return -1;
    // Unsigned JSON integers may exceed INT64_MAX, so they are compared as uint64.
    const bool negative = !v->is_number_unsigned() && (!IsInt(*v) || v->get<int64_t>() < 0);
    if (negative) Bad(key, "a non-negative integer token id or null", *v);
    const uint64_t id = v->is_number_unsigned() ? v->get<uint64_t>()
                                                : static_cast<uint64_t>(v->get<int64_t>());
    if (id >= static_cast<uint64_t>(vocab_size))
      Fail("{}: field '{}' = {} is not a token id of the vocabulary (ids are 0 .. vocab_size - 1 "
           "= {})",
           source_, key, v->dump(), vocab_size - 1);
    return v->get<int64_t>();
  }
  double AsPositiveNumber(const char* key, const json& v) const {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      Bad(key, "a positive number", v);
    return v.get<double>();
  }
  double PositiveNumber(const char* key) const { return AsPositiveNumber(key, Required(key)); }
  bool Bool(const char* key, bool fallback) const {
    const json* v = Find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) Bad(key, "true or false", *v);
    return v->get<bool>();
  }
  const std::string& source() const { return source_; }

 private:
  const json& j_;
  const std::string& source_;
};

std::string Num(double v) { return json(v).dump(); }

// A positive finite number at `where` (a JSON path for messages).
double PositiveAt(const Fields& f, const json& v, const std::string& where) {
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    Fail("{}: field '{}': expected a positive number, got {}", f.source(), where, v.dump());
  return v.get<double>();
}

// The entry `key` of a RoPE object; null counts as absent (transformers reads `.get(key)`).
const json* Entry(const json& obj, const char* key) {
  auto it = obj.find(key);
  return (it == obj.end() || it->is_null()) ? nullptr : &*it;
}

// One RoPE settings object (rope_scaling, rope_parameters or rope_parameters.<layer type>), read
// as transformers' _compute_default_rope_parameters / _compute_yarn_parameters read it. `theta`
// is the rope_theta given outside this object (or none); `max_positions` is max_position_embeddings
// (0 if absent), the fallback for original_max_position_embeddings.
RopeParams ParseRopeObject(const Fields& f, const json& obj, const std::string& where,
                           std::optional<double> theta, int64_t max_positions,
                           bool type_required) {
  if (!obj.is_object())
    Fail("{}: field '{}': expected an object, got {}", f.source(), where, obj.dump());
  RopeParams p;
  // "type" is the older name of "rope_type".
  const char* type_key = Entry(obj, "rope_type") ? "rope_type" : "type";
  std::string type = "default";
  if (const json* t = Entry(obj, type_key)) {
    if (!t->is_string())
      Fail("{}: field '{}.{}': expected a string, got {}", f.source(), where, type_key, t->dump());
    type = t->get<std::string>();
  } else if (type_required) {
    Fail("{}: missing required field '{}.rope_type' (\"default\" or \"yarn\")", f.source(), where);
  }
  if (type == "yarn") {
    p.type = RopeType::kYarn;
  } else if (type != "default") {
    Fail("{}: field '{}.{}' is '{}': replica supports the RoPE types \"default\" and \"yarn\"",
         f.source(), where, type_key, type);
  }

  if (const json* t = Entry(obj, "rope_theta")) {
    const double own = PositiveAt(f, *t, where + ".rope_theta");
    if (theta && *theta != own)
      Fail("{}: field '{}.rope_theta' = {} contradicts rope_theta {} given elsewhere", f.source(),
           where, Num(own), Num(*theta));
    theta = own;
  }
  if (!theta)
    Fail("{}: missing required field 'rope_theta' (or '{}.rope_theta')", f.source(), where);
  p.theta = *theta;
  if (p.type == RopeType::kDefault) return p;

  // YaRN. factor is required; a factor below 1 would shrink the context (transformers only warns).
  const json* factor = Entry(obj, "factor");
  if (!factor) Fail("{}: missing required field '{}.factor' (YaRN scaling factor)", f.source(), where);
  if (!factor->is_number() || !std::isfinite(factor->get<double>()))
    Fail("{}: field '{}.factor': expected a number >= 1, got {}", f.source(), where, factor->dump());
  p.factor = factor->get<double>();
  if (p.factor < 1.0)
    Fail("{}: field '{}.factor' is {}: YaRN needs factor >= 1 (it stretches the original context)",
         f.source(), where, factor->dump());

  if (const json* L = Entry(obj, "original_max_position_embeddings")) {
    if (!L->is_number_integer() || L->get<int64_t>() <= 0)
      Fail("{}: field '{}.original_max_position_embeddings': expected a positive integer, got {}",
           f.source(), where, L->dump());
    p.original_max_position_embeddings = L->get<int64_t>();
    p.original_max_given = true;
  } else if (max_positions > 0) {
    p.original_max_position_embeddings = max_positions;  // transformers' fallback
  } else {
    Fail("{}: missing field '{}.original_max_position_embeddings' (YaRN needs the original "
         "context; there is no max_position_embeddings to fall back on)",
         f.source(), where);
  }

  // beta_fast / beta_slow: `.get(key) or default` in transformers, so 0 also means the default.
  auto beta = [&](const char* key, double fallback) {
    const json* b = Entry(obj, key);
    if (!b || (b->is_number() && b->get<double>() == 0)) return fallback;
    return PositiveAt(f, *b, where + "." + key);
  };
  p.beta_fast = beta("beta_fast", 32.0);
  p.beta_slow = beta("beta_slow", 1.0);

  if (const json* a = Entry(obj, "attention_factor")) {
    p.attention_factor = PositiveAt(f, *a, where + ".attention_factor");
    p.attention_factor_given = true;
  } else {
    auto number = [&](const char* key) {
      const json* v = Entry(obj, key);
      if (!v) return 0.0;
      if (!v->is_number() || !std::isfinite(v->get<double>()))
        Fail("{}: field '{}.{}': expected a number, got {}", f.source(), where, key, v->dump());
      return v->get<double>();
    };
    p.attention_factor =
        YarnDefaultAttentionFactor(p.factor, number("mscale"), number("mscale_all_dim"));
    // mscale / mscale_all_dim are not kept: the factor they give is written back explicitly.
    p.attention_factor_given = Entry(obj, "mscale") || Entry(obj, "mscale_all_dim");
  }
  if (const json* t = Entry(obj, "truncate")) {
    if (!t->is_boolean())
      Fail("{}: field '{}.truncate': expected true or false, got {}", f.source(), where, t->dump());
    p.truncate = t->get<bool>();
    p.truncate_given = true;
  }
  if (max_positions > 0 && p.original_max_given) {
    const double implicit = static_cast<double>(max_positions) /
                            static_cast<double>(p.original_max_position_embeddings);
    if (std::abs(implicit - p.factor) > 1e-9 * p.factor)
      REPLICA_LOG_WARN(
          "{}: '{}.factor' = {} differs from max_position_embeddings / "
          "original_max_position_embeddings = {}; using the explicit factor, as transformers does",
          f.source(), where, Num(p.factor), Num(implicit));
  }
  return p;
}

RopeParams PlainRope(double theta) {
  RopeParams p;
  p.theta = theta;
  return p;
}

// RoPE settings from either spelling: top-level rope_theta + rope_scaling (legacy), or
// rope_parameters, flat or keyed by layer type. With one set of settings for all layers the scaling
// goes to the full-attention layers; sliding layers keep plain RoPE with the same theta.
void ParseRope(const Fields& f, int64_t max_positions, ModelConfig& c);
std::string RopeText(const RopeParams& p);

// Both spellings at once: the legacy keys (rope_theta, rope_scaling) and rope_parameters keyed by
// layer type, as ToHfJson writes a legacy config. Accepted when the two give every layer the same
// RoPE; the legacy keys decide how the config is written back.
void ParseLegacyBesidePerLayerType(const Fields& f, int64_t max_positions, ModelConfig& c) {
  json legacy = f.object();
  legacy.erase("rope_parameters");
  json per_type = f.object();
  per_type.erase("rope_scaling");
  ModelConfig from_legacy, from_per_type;
  ParseRope(Fields(legacy, f.source()), max_positions, from_legacy);
  ParseRope(Fields(per_type, f.source()), max_positions, from_per_type);
  if (!from_legacy.rope_full.SameMath(from_per_type.rope_full) ||
      !from_legacy.rope_sliding.SameMath(from_per_type.rope_sliding))
    Fail("{}: fields 'rope_theta'/'rope_scaling' and 'rope_parameters' give different RoPE "
         "settings (full attention {} vs {}, sliding {} vs {}): give them in one spelling, or make "
         "them agree",
         f.source(), RopeText(from_legacy.rope_full), RopeText(from_per_type.rope_full),
         RopeText(from_legacy.rope_sliding), RopeText(from_per_type.rope_sliding));
  c.rope_spelling = RopeSpelling::kLegacy;
  c.rope_full = from_legacy.rope_full;
  c.rope_sliding = from_legacy.rope_sliding;
}

void ParseRope(const Fields& f, int64_t max_positions, ModelConfig& c) {
  std::optional<double> top;
  if (const json* t = f.Find("rope_theta")) top = f.AsPositiveNumber("rope_theta", *t);
  const json* scaling = f.Find("rope_scaling");
  const json* params = f.Find("rope_parameters");
  const bool params_per_layer_type =
      params && params->is_object() && (params->contains(kSliding) || params->contains(kFull));
  // rope_theta with a "rope_scaling" key (null included) is the legacy spelling ToHfJson writes.
  if ((scaling || (top && f.Has("rope_scaling"))) && params_per_layer_type)
    return ParseLegacyBesidePerLayerType(f, max_positions, c);
  if (scaling && params)
    Fail("{}: fields 'rope_scaling' and 'rope_parameters' are both set: give the RoPE settings in "
         "one of them",
         f.source());

  if (!params) {
    c.rope_spelling = RopeSpelling::kLegacy;
    if (!top)
      Fail("{}: missing required field 'rope_theta' (or 'rope_parameters.rope_theta')", f.source());
    c.rope_full = scaling ? ParseRopeObject(f, *scaling, "rope_scaling", top, max_positions, true)
                          : PlainRope(*top);
    c.rope_sliding = PlainRope(c.rope_full.theta);
    return;
  }
  const bool per_layer_type =
      params->is_object() && (params->contains(kSliding) || params->contains(kFull));
  if (!per_layer_type) {
    c.rope_spelling = RopeSpelling::kRopeParameters;
    c.rope_full = ParseRopeObject(f, *params, "rope_parameters", top, max_positions, false);
    c.rope_sliding = PlainRope(c.rope_full.theta);
    return;
  }
  c.rope_spelling = RopeSpelling::kRopeParametersPerLayerType;
  for (auto& [k, v] : params->items())
    if (k != kSliding && k != kFull)
      Fail("{}: field 'rope_parameters.{}': expected the layer types \"{}\" and \"{}\" as keys",
           f.source(), k, kFull, kSliding);
  auto entry = [&](const char* type) -> const json* {
    auto it = params->find(type);
    return (it == params->end() || it->is_null()) ? nullptr : &*it;
  };
  const json* full = entry(kFull);
  const json* sliding = entry(kSliding);
  if (full)
    c.rope_full = ParseRopeObject(f, *full, std::string("rope_parameters.") + kFull, top,
                                  max_positions, false);
  if (sliding)
    c.rope_sliding = ParseRopeObject(f, *sliding, std::string("rope_parameters.") + kSliding, top,
                                     max_positions, false);
  // A layer type without an entry gets plain RoPE with the theta given elsewhere.
  if (!full) c.rope_full = PlainRope(top.value_or(c.rope_sliding.theta));
  if (!sliding) c.rope_sliding = PlainRope(top.value_or(c.rope_full.theta));
}

// The RoPE object of `p` as transformers writes it; `with_theta` adds rope_theta inside.
json RopeObjectJson(const RopeParams& p, bool with_theta) {
  json o = json::object();
  o["rope_type"] = p.type == RopeType::kYarn ? "yarn" : "default";
  if (with_theta) o["rope_theta"] = p.theta;
  if (p.type == RopeType::kYarn) {
    o["factor"] = p.factor;
    if (p.original_max_given) o["original_max_position_embeddings"] = p.original_max_position_embeddings;
    o["beta_fast"] = p.beta_fast;
    o["beta_slow"] = p.beta_slow;
    if (p.attention_factor_given) o["attention_factor"] = p.attention_factor;
    if (p.truncate_given) o["truncate"] = p.truncate;
  }
  return o;
}

std::string RopeText(const RopeParams& p) {
  if (p.type == RopeType::kDefault) return fmt::format("plain (theta {})", Num(p.theta));
  return fmt::format(
      "yarn (theta {}, factor {}, original_max_position_embeddings {}, beta_fast {}, beta_slow {}, "
      "attention_factor {}{})",
      Num(p.theta), Num(p.factor), p.original_max_position_embeddings, Num(p.beta_fast),
      Num(p.beta_slow), Num(p.attention_factor), p.truncate ? "" : ", truncate false");
}

// Bounds on the size fields. Each is far above any real decoder; they exist so that a typo (an
// extra zero, 1e12) is an error naming the field instead of an allocation that grows until
// std::bad_alloc, and so that every product of fields below fits in int64 (checked anyway).
constexpr int64_t kMaxVocab = int64_t{1} << 31;       // token ids are int32
constexpr int64_t kMaxWidth = int64_t{1} << 24;       // hidden, intermediate, head dim, heads
constexpr int64_t kMaxLayers = int64_t{1} << 16;
constexpr int64_t kMaxPositions = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxParameters = int64_t{1} << 40;  // 1.1e12: 4.4 TB of fp32 weights alone

// The parameter count with every product and sum checked, errors naming the fields involved.
int64_t CheckedParamCount(const ModelConfig& c) {
  const int64_t D = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const int64_t q = CheckedMul(c.num_heads, c.head_dim, "'num_attention_heads' * 'head_dim'");
  const int64_t kv = CheckedMul(c.num_kv_heads, c.head_dim, "'num_key_value_heads' * 'head_dim'");
  const int64_t qd = CheckedMul(q, D, "'num_attention_heads' * 'head_dim' * 'hidden_size'");
  const int64_t kvd = CheckedMul(kv, D, "'num_key_value_heads' * 'head_dim' * 'hidden_size'");
  const int64_t id = CheckedMul(CheckedMul(3, I, "3 * 'intermediate_size'"), D,
                                "3 * 'intermediate_size' * 'hidden_size'");
  const char* layer = "parameters of one layer";
  int64_t per_layer = CheckedAdd(CheckedMul(2, qd, layer), CheckedMul(2, kvd, layer), layer);
  per_layer = CheckedAdd(per_layer, id, layer);
  per_layer = CheckedAdd(per_layer, q + kv + 2 * D, layer);
  const int64_t layers =
      CheckedMul(c.num_layers, per_layer, "'num_hidden_layers' * parameters of one layer");
  const int64_t vd = CheckedMul(V, D, "'vocab_size' * 'hidden_size'");
  const char* total = "parameter count";
  int64_t n = CheckedAdd(vd, layers, total);
  n = CheckedAdd(n, D, total);
  if (!c.tie_word_embeddings) n = CheckedAdd(n, vd, total);
  return n;
}

}  // namespace

ModelConfig ModelConfig::FromHfJson(const nlohmann::json& j, const std::string& source) {
  Require(j.is_object(), "{}: config must be a JSON object, got {}", source, j.type_name());
  Fields f(j, source);
  ModelConfig c;

  const json& mt = f.Required("model_type");
  if (!mt.is_string()) f.Bad("model_type", "a string", mt);
  c.model_type = mt.get<std::string>();
  Require(c.model_type == "olmo3" || c.model_type == "olmo2",
          "{}: field 'model_type' is '{}': replica supports 'olmo3' and 'olmo2'", source,
          c.model_type);
  const bool olmo3 = c.model_type == "olmo3";

  c.vocab_size = f.AtMost("vocab_size", f.PositiveInt("vocab_size"), kMaxVocab,
                          "token ids are 32-bit signed integers");
  c.hidden_size = f.AtMost("hidden_size", f.PositiveInt("hidden_size"), kMaxWidth, "the most replica accepts");
  c.intermediate_size = f.AtMost("intermediate_size", f.PositiveInt("intermediate_size"),
                                 kMaxWidth, "the most replica accepts");
  c.num_layers = f.AtMost("num_hidden_layers", f.PositiveInt("num_hidden_layers"), kMaxLayers,
                          "the most replica accepts");
  c.num_heads = f.AtMost("num_attention_heads", f.PositiveInt("num_attention_heads"), kMaxWidth,
                         "the most replica accepts");
  c.num_kv_heads = f.AtMost("num_key_value_heads",
                            f.OptionalPositiveInt("num_key_value_heads").value_or(c.num_heads),
                            kMaxWidth, "the most replica accepts");
  Require(c.num_heads % c.num_kv_heads == 0,
          "{}: field 'num_key_value_heads' = {} must divide num_attention_heads = {}", source,
          c.num_kv_heads, c.num_heads);
  if (auto hd = f.OptionalPositiveInt("head_dim")) {
    f.AtMost("head_dim", *hd, kMaxWidth, "the most replica accepts");
    Require(*hd * c.num_heads == c.hidden_size,
            "{}: field 'head_dim' = {} contradicts hidden_size / num_attention_heads = {} / {} "
            "(Olmo 3 uses head_dim = hidden_size / num_attention_heads)",
            source, *hd, c.hidden_size, c.num_heads);
    c.head_dim = *hd;
  } else {
    Require(c.hidden_size % c.num_heads == 0,
            "{}: field 'hidden_size' = {} is not divisible by num_attention_heads = {} (and no "
            "head_dim is given)",
            source, c.hidden_size, c.num_heads);
    c.head_dim = c.hidden_size / c.num_heads;
  }
  Require(c.head_dim % 2 == 0, "{}: head dimension {} must be even for rotate-half RoPE", source,
          c.head_dim);
  c.rms_norm_eps = f.PositiveNumber("rms_norm_eps");

  if (const json* act = f.Find("hidden_act")) {
    if (!act->is_string()) f.Bad("hidden_act", "a string", *act);
    Require(act->get<std::string>() == "silu",
            "{}: field 'hidden_act' is '{}': Olmo 3 uses 'silu' (SwiGLU)", source,
            act->get<std::string>());
  }
  Require(!f.Bool("attention_bias", false),
          "{}: field 'attention_bias' is true: replica's Olmo 3 has no biases", source);
  if (const json* drop = f.Find("attention_dropout")) {
    if (!drop->is_number()) f.Bad("attention_dropout", "a number", *drop);
    Require(drop->get<double>() == 0.0,
            "{}: field 'attention_dropout' is {}: replica trains without dropout", source,
            drop->dump());
  }
  c.tie_word_embeddings = f.Bool("tie_word_embeddings", false);
  // -1 is "not set": what OLMo-core's get_hf_config / save_hf_model write (transformers loads it).
  const json* max_pos = f.Find("max_position_embeddings");
  const bool max_pos_unset = max_pos && max_pos->is_number_integer() && max_pos->get<int64_t>() == -1;
  c.max_position_embeddings =
      max_pos_unset ? 0
                    : f.AtMost("max_position_embeddings",
                               f.OptionalPositiveInt("max_position_embeddings").value_or(0),
                               kMaxPositions, "positions are 32-bit signed integers");
  ParseRope(f, c.max_position_embeddings, c);
  c.pad_token_id = f.TokenId("pad_token_id", c.vocab_size);
  c.eos_token_id = f.TokenId("eos_token_id", c.vocab_size);
  c.bos_token_id = f.TokenId("bos_token_id", c.vocab_size);
  if (const json* ir = f.Find("initializer_range")) c.initializer_range = f.AsPositiveNumber("initializer_range", *ir);

  // Attention pattern.
  if (const json* lt = f.Find("layer_types")) {
    if (!lt->is_array()) f.Bad("layer_types", "an array of strings", *lt);
    Require(static_cast<int64_t>(lt->size()) == c.num_layers,
            "{}: field 'layer_types' has {} entries but num_hidden_layers is {}", source,
            lt->size(), c.num_layers);
    for (size_t i = 0; i < lt->size(); ++i) {
      const json& v = (*lt)[i];
      if (v == kSliding) {
        c.layer_types.push_back(AttentionType::kSliding);
      } else if (v == kFull) {
        c.layer_types.push_back(AttentionType::kFull);
      } else {
        Fail("{}: field 'layer_types[{}]' is {}: expected \"{}\" or \"{}\"", source, i, v.dump(),
             kSliding, kFull);
      }
    }
  } else {
    for (int64_t i = 0; i < c.num_layers; ++i)
      c.layer_types.push_back(olmo3 && (i + 1) % 4 != 0 ? AttentionType::kSliding
                                                       : AttentionType::kFull);
  }
  const bool any_sliding =
      std::find(c.layer_types.begin(), c.layer_types.end(), AttentionType::kSliding) !=
      c.layer_types.end();
  std::optional<int64_t> window = f.OptionalPositiveInt("sliding_window");
  if (window) f.AtMost("sliding_window", *window, kMaxPositions, "positions are 32-bit signed integers");
  if (olmo3) {
    Require(!any_sliding || window.has_value(),
            "{}: missing field 'sliding_window': needed by the sliding_attention layers", source);
    c.sliding_window = any_sliding ? *window : window.value_or(0);
  } else {
    Require(!any_sliding, "{}: field 'layer_types': olmo2 has only full_attention layers", source);
    Require(!window.has_value(),
            "{}: field 'sliding_window' is set, but olmo2 has no sliding-window attention (use "
            "model_type olmo3)",
            source);
    c.sliding_window = 0;
  }
  try {
    const int64_t params = CheckedParamCount(c);
    Require(params <= kMaxParameters,
            "the model would have {} parameters, more than the {} replica handles (vocab_size {}, "
            "hidden_size {}, intermediate_size {}, num_hidden_layers {})",
            params, kMaxParameters, c.vocab_size, c.hidden_size, c.intermediate_size,
            c.num_layers);
  } catch (const Error& e) {
    Fail("{}: {}", source, e.what());
  }
  return c;
}

ModelConfig ModelConfig::FromHfFile(const std::string& path) {
  // A model directory stands for its config.json.
  std::string file = path;
  if (std::filesystem::is_directory(path)) file = (std::filesystem::path(path) / "config.json").string();
  const std::string text = ReadFile(file);
  return FromHfJson(ParseJson(text, file), file);
}

nlohmann::json ModelConfig::ToHfJson() const {
  const bool olmo3 = model_type == "olmo3";
  auto id = [](int64_t v) { return v < 0 ? json(nullptr) : json(v); };
  json j = json::object();
  j["architectures"] = {olmo3 ? "Olmo3ForCausalLM" : "Olmo2ForCausalLM"};
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_layers;
  j["num_attention_heads"] = num_heads;
  j["num_key_value_heads"] = num_kv_heads;
  j["hidden_act"] = "silu";
  if (max_position_embeddings > 0) j["max_position_embeddings"] = max_position_embeddings;
  j["initializer_range"] = initializer_range;
  j["pad_token_id"] = id(pad_token_id);
  j["bos_token_id"] = id(bos_token_id);
  j["eos_token_id"] = id(eos_token_id);
  j["tie_word_embeddings"] = tie_word_embeddings;
  switch (rope_spelling) {
    case RopeSpelling::kLegacy:
      j["rope_theta"] = rope_full.theta;
      j["rope_scaling"] = rope_full.type == RopeType::kDefault ? json(nullptr)
                                                              : RopeObjectJson(rope_full, false);
      break;
    case RopeSpelling::kRopeParameters:
      j["rope_parameters"] = RopeObjectJson(rope_full, true);
      break;
    case RopeSpelling::kRopeParametersPerLayerType:
      j["rope_parameters"] = {{kFull, RopeObjectJson(rope_full, true)},
                              {kSliding, RopeObjectJson(rope_sliding, true)}};
      break;
  }
  j["attention_bias"] = false;
  j["attention_dropout"] = 0.0;
  j["rms_norm_eps"] = rms_norm_eps;
  if (olmo3) {
    j["sliding_window"] = sliding_window > 0 ? json(sliding_window) : json(nullptr);
    json types = json::array();
    for (AttentionType t : layer_types) types.push_back(t == AttentionType::kSliding ? kSliding : kFull);
    j["layer_types"] = types;
  }
  j["torch_dtype"] = "float32";
  return j;
}

json ModelConfig::ToHfDirectoryJson() const {
  json j = ToHfJson();
  // A legacy spelling gets the per-layer-type form beside it: transformers 5 reads a legacy
  // rope_theta into the full-attention layers only and gives sliding layers its default theta
  // (500000), so without it a model of another theta loads there as a different model. Both
  // forms state the same RoPE, which FromHfJson checks when it reads them together.
  if (model_type == "olmo3" && rope_spelling == RopeSpelling::kLegacy)
    j["rope_parameters"] = {{kFull, RopeObjectJson(rope_full, true)},
                            {kSliding, RopeObjectJson(rope_sliding, true)}};
  return j;
}

int64_t ModelConfig::Window(int64_t layer) const {
  Require(layer >= 0 && layer < static_cast<int64_t>(layer_types.size()),
          "layer {} out of range (model has {} layers)", layer, layer_types.size());
  return layer_types[layer] == AttentionType::kSliding ? sliding_window : 0;
}

const RopeParams& ModelConfig::RopeFor(int64_t layer) const {
  Require(layer >= 0 && layer < static_cast<int64_t>(layer_types.size()),
          "layer {} out of range (model has {} layers)", layer, layer_types.size());
  return layer_types[layer] == AttentionType::kSliding ? rope_sliding : rope_full;
}

void ModelConfig::SetPlainRope(double theta) {
  rope_full = PlainRope(theta);
  rope_sliding = PlainRope(theta);
}

std::string ModelConfig::RopeSummary() const {
  const bool any_sliding = std::find(layer_types.begin(), layer_types.end(),
                                     AttentionType::kSliding) != layer_types.end();
  if (!any_sliding || rope_full.SameMath(rope_sliding)) return "all layers " + RopeText(rope_full);
  return "full layers " + RopeText(rope_full) + "; sliding layers " + RopeText(rope_sliding);
}

std::string ModelConfig::ContextBeyondRope(int64_t seq_len) const {
  if (rope_full.type == RopeType::kYarn) {
    const double context =
        static_cast<double>(rope_full.original_max_position_embeddings) * rope_full.factor;
    if (static_cast<double>(seq_len) <= context) return "";
    return fmt::format("{} positions are beyond the {:.0f} the full-attention layers' YaRN was set "
                       "for (original_max_position_embeddings {} x factor {}); RoPE extrapolates "
                       "past it, as OLMo-core and transformers compute it",
                       seq_len, context, rope_full.original_max_position_embeddings,
                       rope_full.factor);
  }
  if (max_position_embeddings <= 0 || seq_len <= max_position_embeddings) return "";
  return fmt::format("{} positions are beyond max_position_embeddings ({}); RoPE extrapolates past "
                     "it, as OLMo-core and transformers compute it",
                     seq_len, max_position_embeddings);
}

nlohmann::json RopeParamsJson(const RopeParams& p) {
  json o = {{"rope_type", p.type == RopeType::kYarn ? "yarn" : "default"}, {"rope_theta", p.theta}};
  if (p.type == RopeType::kYarn) {
    o["factor"] = p.factor;
    o["original_max_position_embeddings"] = p.original_max_position_embeddings;
    o["beta_fast"] = p.beta_fast;
    o["beta_slow"] = p.beta_slow;
    o["attention_factor"] = p.attention_factor;
    o["truncate"] = p.truncate;
  }
  return o;
}

int64_t ModelConfig::Visible(int64_t layer, int64_t i) const {
  const int64_t w = Window(layer);
  return w > 0 ? std::min(i + 1, w) : i + 1;
}

ParamLayout ModelConfig::BuildLayout() const {
  (void)CheckedParamCount(*this);  // every shape below is a factor of a checked product
  const int64_t D = hidden_size, V = vocab_size;
  ParamLayout layout;
  layout.Add("model.embed_tokens.weight", {V, D});
  for (int64_t l = 0; l < num_layers; ++l)
    for (const LayerTensorInfo& t : LayerTensorTable())
      layout.Add(LayerTensorName(l, t.id), LayerTensorShape(*this, t.id), t.matmul_weight);
  layout.Add("model.norm.weight", {D});
  // The untied head is read only by the LM head's matmuls; the tied one is the embedding.
  if (!tie_word_embeddings) layout.Add("lm_head.weight", {V, D}, /*matmul_weight=*/true);
  return layout;
}

int64_t ModelConfig::SumVisible(int64_t layer, int64_t T) const {
  const int64_t window = Window(layer);  // 0 = unbounded: Σ min(i+1, W) = Σ (i+1)
  if (window <= 0 || T <= window) return T * (T + 1) / 2;
  return window * (window + 1) / 2 + (T - window) * window;
}

int64_t ModelConfig::NumParams() const { return CheckedParamCount(*this); }

double ModelConfig::FlopsPerToken(int64_t seq_len) const {
  Require(seq_len > 0, "FlopsPerToken: sequence length must be positive, got {}", seq_len);
  // The input embedding is a lookup, not a matmul; the LM head matmul counts even when tied.
  const int64_t matmul_params = NumParams() - (tie_word_embeddings ? 0 : vocab_size * hidden_size);
  double visible = 0;
  for (int64_t l = 0; l < num_layers; ++l) visible += static_cast<double>(SumVisible(l, seq_len));
  return 6.0 * static_cast<double>(matmul_params) +
         12.0 * static_cast<double>(num_heads * head_dim) * visible / static_cast<double>(seq_len);
}

double ModelConfig::FlopsPerTokenOfDocuments(const int32_t* cu_doc_lens, int64_t n) const {
  Require(n >= 2 && cu_doc_lens[0] == 0 && cu_doc_lens[n - 1] > 0,
          "FlopsPerTokenOfDocuments: expected cu_doc_lens from 0 to the positions, got {} entries",
          n);
  const int64_t matmul_params = NumParams() - (tie_word_embeddings ? 0 : vocab_size * hidden_size);
  double visible = 0;
  for (int64_t d = 0; d + 1 < n; ++d) {
    const int64_t len = cu_doc_lens[d + 1] - cu_doc_lens[d];
    Require(len >= 0, "FlopsPerTokenOfDocuments: cu_doc_lens decreases at entry {}", d + 1);
    for (int64_t l = 0; l < num_layers; ++l) visible += static_cast<double>(SumVisible(l, len));
  }
  return 6.0 * static_cast<double>(matmul_params) +
         12.0 * static_cast<double>(num_heads * head_dim) * visible /
             static_cast<double>(cu_doc_lens[n - 1]);
}

}  // namespace replica

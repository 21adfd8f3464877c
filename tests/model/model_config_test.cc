// ModelConfig: the fixture and benchmark config.json files load with the values their READMEs list,
// the layout matches the fixture weights tensor for tensor, the 7B counts come out exactly, and
// every bad or contradictory field is an Error naming the file and the field.
#include "testing/util.h"
#include "model/model_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "core/atomic_file.h"
#include "core/error.h"
#include "io/safetensors.h"

namespace replica {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using json = nlohmann::json;
using A = AttentionType;

const std::string kData = REPLICA_TEST_DATA;
constexpr A S = A::kSliding, F = A::kFull;

using replica::test::ErrorOf;

json Load(const std::string& rel) { return json::parse(ReadFile(kData + "/" + rel)); }

// The message FromHfJson gives for the tiny-mha config after `edit`.
std::string EditError(const std::function<void(json&)>& edit) {
  json j = Load("olmo3/tiny-mha/config.json");
  edit(j);
  return ErrorOf([&] { ModelConfig::FromHfJson(j, "edited/config.json"); });
}

ModelConfig FromEdit(const std::function<void(json&)>& edit) {
  json j = Load("olmo3/tiny-mha/config.json");
  edit(j);
  return ModelConfig::FromHfJson(j, "edited/config.json");
}

void ExpectSame(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.model_type, b.model_type);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.num_heads, b.num_heads);
  EXPECT_EQ(a.num_kv_heads, b.num_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.rms_norm_eps, b.rms_norm_eps);
  EXPECT_TRUE(a.rope_full.SameMath(b.rope_full));
  EXPECT_TRUE(a.rope_sliding.SameMath(b.rope_sliding));
  EXPECT_EQ(a.rope_spelling, b.rope_spelling);
  EXPECT_EQ(a.sliding_window, b.sliding_window);
  EXPECT_EQ(a.layer_types, b.layer_types);
  EXPECT_EQ(a.tie_word_embeddings, b.tie_word_embeddings);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_EQ(a.pad_token_id, b.pad_token_id);
  EXPECT_EQ(a.eos_token_id, b.eos_token_id);
  EXPECT_EQ(a.bos_token_id, b.bos_token_id);
  EXPECT_EQ(a.initializer_range, b.initializer_range);
}

// Σ_l Σ_{i<T} Visible(l, i), by brute force.
double BruteVisible(const ModelConfig& c, int64_t T) {
  double s = 0;
  for (int64_t l = 0; l < c.num_layers; ++l)
    for (int64_t i = 0; i < T; ++i) s += static_cast<double>(c.Visible(l, i));
  return s;
}

// ---------------------------------------------------------------------------------------------
// The fixtures (values from tests/data/olmo3/README.md)

TEST(ModelConfig, TinyMhaTable) {
  auto c = ModelConfig::FromHfFile(kData + "/olmo3/tiny-mha/config.json");
  EXPECT_EQ(c.model_type, "olmo3");
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 160);
  EXPECT_EQ(c.num_layers, 4);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.sliding_window, 16);
  EXPECT_EQ(c.layer_types, (std::vector<A>{S, S, S, F}));
  EXPECT_EQ(c.RopeFor(0).theta, 10000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.pad_token_id, 511);
  EXPECT_EQ(c.eos_token_id, 510);
  EXPECT_EQ(c.bos_token_id, -1);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_position_embeddings, 256);
  EXPECT_EQ(c.NumParams(), 255040);
}

TEST(ModelConfig, TinyGqaTable) {
  auto c = ModelConfig::FromHfFile(kData + "/olmo3/tiny-gqa");  // a directory means its config.json
  EXPECT_EQ(c.vocab_size, 384);
  EXPECT_EQ(c.hidden_size, 96);
  EXPECT_EQ(c.intermediate_size, 256);
  EXPECT_EQ(c.num_layers, 8);
  EXPECT_EQ(c.num_heads, 6);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.sliding_window, 7);
  EXPECT_EQ(c.layer_types, (std::vector<A>{S, S, S, F, S, S, S, F}));
  EXPECT_EQ(c.RopeFor(0).theta, 500000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.pad_token_id, 383);
  EXPECT_EQ(c.eos_token_id, 382);
  EXPECT_EQ(c.bos_token_id, -1);
  EXPECT_EQ(c.NumParams(), 862816);
}

TEST(ModelConfig, LayoutMatchesFixtureWeights) {
  for (const char* name : {"tiny-mha", "tiny-gqa"}) {
    auto c = ModelConfig::FromHfFile(kData + "/olmo3/" + name + "/config.json");
    ParamLayout layout = c.BuildLayout();
    auto f = SafetensorsFile::Open(kData + "/olmo3/" + name + "/model.safetensors");
    ASSERT_EQ(layout.views().size(), f.tensors().size()) << name;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
      EXPECT_EQ(layout.views()[i].name, f.tensors()[i].name) << name << " #" << i;
      EXPECT_EQ(layout.views()[i].shape, f.tensors()[i].shape) << f.tensors()[i].name;
    }
    EXPECT_EQ(static_cast<int64_t>(layout.num_elements()), c.NumParams());
  }
}

TEST(ModelConfig, Olmo3_7B) {
  auto c = ModelConfig::FromHfFile(kData + "/bench-shapes/olmo3-7b/config.json");
  EXPECT_EQ(c.num_layers, 32);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.NumParams(), 7298617344);
  EXPECT_EQ(static_cast<int64_t>(c.BuildLayout().num_elements()), 7298617344);
  int full = 0;
  for (int64_t l = 0; l < 32; ++l) {
    EXPECT_EQ(c.layer_types[l], (l + 1) % 4 == 0 ? F : S) << l;
    full += c.layer_types[l] == F;
  }
  EXPECT_EQ(full, 8);
  // docs/design.md §6 / bench README: 6·(params − input embedding) + 12·H·hd·(1/T)·ΣΣ visible.
  // At T = 8192: 6·6,887,575,552 + 6·(24·(4096·4097/2 + 4096·4096) + 8·8192·8193/2).
  EXPECT_EQ(c.FlopsPerToken(8192), 41325453312.0 + 5234982912.0);
  EXPECT_EQ(c.pad_token_id, 100277);
  EXPECT_EQ(c.eos_token_id, 100257);
}

TEST(ModelConfig, BenchShapesLoad) {
  auto s = ModelConfig::FromHfFile(kData + "/bench-shapes/bench-S/config.json");
  EXPECT_EQ(s.num_layers, 8);
  EXPECT_EQ(s.sliding_window, 512);
  EXPECT_EQ(s.pad_token_id, -1);
  auto m = ModelConfig::FromHfFile(kData + "/bench-shapes/bench-124M/config.json");
  EXPECT_EQ(m.hidden_size, 768);
  EXPECT_EQ(m.head_dim, 64);
  for (const ModelConfig* c : {&s, &m})
    for (int64_t T : {1, 511, 512, 513, 1024, 4096})
      EXPECT_DOUBLE_EQ(c->FlopsPerToken(T),
                       6.0 * static_cast<double>(c->NumParams() - c->vocab_size * c->hidden_size) +
                           12.0 * c->num_heads * c->head_dim * BruteVisible(*c, T) / T)
          << T;
}

// Packed documents: the attention term counts each document's own keys (brute force over
// positions within documents); one document of the whole row is FlopsPerToken.
TEST(ModelConfig, FlopsPerTokenOfDocuments) {
  auto s = ModelConfig::FromHfFile(kData + "/bench-shapes/bench-S/config.json");
  const std::vector<int32_t> whole = {0, 1024};
  EXPECT_DOUBLE_EQ(s.FlopsPerTokenOfDocuments(whole.data(), 2), s.FlopsPerToken(1024));
  const std::vector<int32_t> cu = {0, 700, 701, 1024, 1024 + 600, 2048};  // two rows of 1024
  double visible = 0;
  for (size_t d = 0; d + 1 < cu.size(); ++d)
    visible += BruteVisible(s, cu[d + 1] - cu[d]);
  EXPECT_DOUBLE_EQ(s.FlopsPerTokenOfDocuments(cu.data(), static_cast<int64_t>(cu.size())),
                   6.0 * static_cast<double>(s.NumParams() - s.vocab_size * s.hidden_size) +
                       12.0 * s.num_heads * s.head_dim * visible / 2048);
  EXPECT_LT(s.FlopsPerTokenOfDocuments(cu.data(), 6), s.FlopsPerToken(1024));
  EXPECT_THAT(ErrorOf([&] { s.FlopsPerTokenOfDocuments(whole.data(), 1); }),
              HasSubstr("cu_doc_lens"));
}

TEST(ModelConfig, VisibleAndWindow) {
  auto c = ModelConfig::FromHfFile(kData + "/olmo3/tiny-mha/config.json");
  EXPECT_EQ(c.Window(0), 16);
  EXPECT_EQ(c.Window(3), 0);
  EXPECT_EQ(c.Visible(0, 0), 1);
  EXPECT_EQ(c.Visible(0, 14), 15);
  EXPECT_EQ(c.Visible(0, 15), 16);
  EXPECT_EQ(c.Visible(0, 16), 16);  // i − W < j ≤ i: W keys including itself, never W+1
  EXPECT_EQ(c.Visible(2, 47), 16);
  EXPECT_EQ(c.Visible(3, 47), 48);
  EXPECT_THAT(ErrorOf([&] { c.Window(4); }), HasSubstr("layer 4"));
  EXPECT_THAT(ErrorOf([&] { c.FlopsPerToken(0); }), HasSubstr("positive"));
}

TEST(ModelConfig, TiedEmbeddingsDropLmHeadButCountItsFlops) {
  auto c = FromEdit([](json& j) { j["tie_word_embeddings"] = true; });
  auto layout = c.BuildLayout();
  EXPECT_EQ(layout.Find("lm_head.weight"), nullptr);
  EXPECT_EQ(layout.views().back().name, "model.norm.weight");
  EXPECT_EQ(c.NumParams(), 255040 - 512 * 64);
  EXPECT_EQ(static_cast<int64_t>(layout.num_elements()), c.NumParams());
  auto untied = ModelConfig::FromHfFile(kData + "/olmo3/tiny-mha/config.json");
  EXPECT_EQ(c.FlopsPerToken(48), untied.FlopsPerToken(48));  // the LM head matmul still runs
}

// ---------------------------------------------------------------------------------------------
// Defaults and accepted variants

TEST(ModelConfig, DefaultsWhenOptionalFieldsAbsent) {
  auto c = FromEdit([](json& j) {
    j.erase("layer_types");
    j.erase("num_key_value_heads");
    j.erase("pad_token_id");
    j["eos_token_id"] = nullptr;
    j.erase("hidden_act");
    j.erase("attention_bias");
    j.erase("rope_scaling");
    j.erase("max_position_embeddings");
    j["num_hidden_layers"] = 8;
  });
  EXPECT_EQ(c.layer_types, (std::vector<A>{S, S, S, F, S, S, S, F}));  // full iff (i+1) % 4 == 0
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.pad_token_id, -1);
  EXPECT_EQ(c.eos_token_id, -1);
  EXPECT_EQ(c.max_position_embeddings, 0);
}

TEST(ModelConfig, Olmo2IsAllFullAttention) {
  auto c = FromEdit([](json& j) {
    j["model_type"] = "olmo2";
    j.erase("layer_types");
    j.erase("sliding_window");
  });
  EXPECT_EQ(c.layer_types, (std::vector<A>{F, F, F, F}));
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.Visible(0, 100), 101);
  EXPECT_EQ(c.ToHfJson()["architectures"][0], "Olmo2ForCausalLM");
  ExpectSame(ModelConfig::FromHfJson(c.ToHfJson(), "rt"), c);
}

TEST(ModelConfig, AllFullOlmo3NeedsNoWindow) {
  auto c = FromEdit([](json& j) {
    j["layer_types"] = {"full_attention", "full_attention", "full_attention", "full_attention"};
    j["sliding_window"] = nullptr;
  });
  EXPECT_EQ(c.sliding_window, 0);
  ExpectSame(ModelConfig::FromHfJson(c.ToHfJson(), "rt"), c);
}

// A plain-RoPE legacy config (theta other than transformers' default 500000) is written into an HF
// directory with the per-layer-type rope_parameters beside rope_theta, every layer at its theta
// (ToHfJson, which run configs hash, stays as read); both spellings together are read when they
// agree and refused, naming the field, when they do not.
TEST(ModelConfig, LegacyWrittenWithPerLayerTypeParameters) {
  const ModelConfig legacy = FromEdit([](json& j) {
    j.erase("rope_parameters");
    j["rope_theta"] = 10000.0;
    j["rope_scaling"] = nullptr;
  });
  ASSERT_EQ(legacy.rope_spelling, RopeSpelling::kLegacy);
  EXPECT_FALSE(legacy.ToHfJson().contains("rope_parameters"));
  const json out = legacy.ToHfDirectoryJson();
  EXPECT_EQ(out["rope_theta"], 10000.0);
  EXPECT_TRUE(out.contains("rope_scaling") && out["rope_scaling"].is_null());
  const json plain = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  EXPECT_EQ(out["rope_parameters"], json({{"full_attention", plain}, {"sliding_attention", plain}}));
  const ModelConfig back = ModelConfig::FromHfJson(out, "rt");
  ExpectSame(back, legacy);
  EXPECT_EQ(back.rope_spelling, RopeSpelling::kLegacy);
  EXPECT_EQ(back.ToHfDirectoryJson(), out);

  json contradicting = out;
  contradicting["rope_parameters"]["sliding_attention"]["rope_theta"] = 500000.0;
  EXPECT_THAT(ErrorOf([&] { ModelConfig::FromHfJson(contradicting, "cfg.json"); }),
              AllOf(HasSubstr("cfg.json"), HasSubstr("'rope_parameters.sliding_attention.rope_theta'"),
                    HasSubstr("contradicts")));
}

TEST(ModelConfig, RopeParameters) {
  auto flat = FromEdit([](json& j) {
    j.erase("rope_theta");
    j.erase("rope_scaling");
    j["rope_parameters"] = {{"rope_theta", 123456.0}, {"rope_type", "default"}};
  });
  EXPECT_EQ(flat.rope_full.theta, 123456.0);
  EXPECT_EQ(flat.rope_sliding.theta, 123456.0);
  EXPECT_EQ(flat.rope_spelling, RopeSpelling::kRopeParameters);
  auto both = FromEdit([](json& j) { j["rope_parameters"] = {{"rope_theta", 10000}, {"rope_type", "default"}}; });
  EXPECT_EQ(both.rope_full.theta, 10000.0);
  auto per_type = FromEdit([](json& j) {
    j.erase("rope_theta");
    j["rope_parameters"] = {{"full_attention", {{"rope_theta", 5e5}, {"rope_type", "default"}}},
                            {"sliding_attention", {{"rope_theta", 5e5}, {"rope_type", "default"}}}};
  });
  EXPECT_EQ(per_type.rope_full.theta, 5e5);
  EXPECT_EQ(per_type.rope_sliding.theta, 5e5);
  EXPECT_EQ(per_type.rope_spelling, RopeSpelling::kRopeParametersPerLayerType);
}

// ---------------------------------------------------------------------------------------------
// YaRN


// The released Olmo-3-1025-7B rope settings (legacy spelling, attention_factor given).
json Release7bRopeScaling() {
  return {{"rope_type", "yarn"},       {"factor", 8.0},   {"original_max_position_embeddings", 8192},
          {"beta_fast", 32.0},         {"beta_slow", 1.0}, {"attention_factor", 1.2079441541679836}};
}

// tiny-yarn's settings in the rope_parameters spellings.
json TinyYarnFullParameters() {
  return {{"rope_type", "yarn"}, {"rope_theta", 500000.0}, {"factor", 8.0},
          {"original_max_position_embeddings", 32}, {"beta_fast", 32.0}, {"beta_slow", 1.0}};
}

ModelConfig FromYarnEdit(const std::function<void(json&)>& edit) {
  json j = Load("olmo3/tiny-yarn/config.json");
  edit(j);
  return ModelConfig::FromHfJson(j, "edited/config.json");
}

std::string YarnEditError(const std::function<void(json&)>& edit) {
  return ErrorOf([&] { FromYarnEdit(edit); });
}

// OLMo-core's HF export (olmo_core.nn.hf.config.get_hf_config, save_hf_model) writes
// max_position_embeddings -1 for "not set"; transformers loads it, so does replica: no bound, and
// YaRN's original context comes from original_max_position_embeddings. Other non-positive values
// stay refused.
TEST(ModelConfig, MaxPositionEmbeddingsMinusOneIsUnset) {
  EXPECT_EQ(FromEdit([](json& j) { j["max_position_embeddings"] = -1; }).max_position_embeddings, 0);
  const ModelConfig y = FromYarnEdit([](json& j) { j["max_position_embeddings"] = -1; });
  EXPECT_EQ(y.max_position_embeddings, 0);
  EXPECT_EQ(y.rope_full.original_max_position_embeddings, 32);
  EXPECT_EQ(y.rope_full.factor, 8.0);
  EXPECT_EQ(y.ToHfJson().count("max_position_embeddings"), 0u);
  for (int bad : {0, -2}) {
    EXPECT_NE(ErrorOf([&] { FromEdit([&](json& j) { j["max_position_embeddings"] = bad; }); })
                  .find("field 'max_position_embeddings': expected a positive integer"),
              std::string::npos)
        << bad;
  }
}

TEST(ModelConfig, TinyYarnTable) {
  auto c = ModelConfig::FromHfFile(kData + "/olmo3/tiny-yarn/config.json");
  EXPECT_EQ(c.rope_spelling, RopeSpelling::kLegacy);
  const RopeParams& y = c.rope_full;
  EXPECT_EQ(y.type, RopeType::kYarn);
  EXPECT_EQ(y.theta, 500000.0);
  EXPECT_EQ(y.factor, 8.0);
  EXPECT_EQ(y.original_max_position_embeddings, 32);
  EXPECT_EQ(y.beta_fast, 32.0);
  EXPECT_EQ(y.beta_slow, 1.0);
  EXPECT_DOUBLE_EQ(y.attention_factor, 1.2079441541679836);  // 0.1 ln 8 + 1, not given
  EXPECT_FALSE(y.attention_factor_given);
  EXPECT_TRUE(y.truncate);
  EXPECT_EQ(c.rope_sliding.type, RopeType::kDefault);  // sliding layers: plain, same theta
  EXPECT_EQ(c.rope_sliding.theta, 500000.0);
  for (int64_t l = 0; l < 4; ++l)
    EXPECT_EQ(&c.RopeFor(l), l == 3 ? &c.rope_full : &c.rope_sliding) << l;
  EXPECT_THAT(c.RopeSummary(), AllOf(HasSubstr("full layers yarn"), HasSubstr("factor 8"),
                                     HasSubstr("sliding layers plain")));
  EXPECT_THROW(c.RopeFor(4), Error);
}

// YaRN in both spellings: read when rope_scaling and rope_parameters.full_attention agree, refused
// naming both when they give different settings.
TEST(ModelConfig, YarnLegacyBesidePerLayerTypeMustAgree) {
  const ModelConfig legacy = FromYarnEdit([](json&) {});
  const json out = legacy.ToHfDirectoryJson();
  ExpectSame(ModelConfig::FromHfJson(out, "rt"), legacy);
  json contradicting = out;
  contradicting["rope_parameters"]["full_attention"]["factor"] = 4.0;
  EXPECT_THAT(ErrorOf([&] { ModelConfig::FromHfJson(contradicting, "cfg.json"); }),
              AllOf(HasSubstr("cfg.json"), HasSubstr("'rope_theta'/'rope_scaling'"),
                    HasSubstr("'rope_parameters'"), HasSubstr("factor 8"), HasSubstr("factor 4")));
}

// The same settings in all three spellings give the same per-layer RoPE, and each is written back
// in the spelling it was read in.
TEST(ModelConfig, YarnSpellingsAgreeAndRoundTrip) {
  const ModelConfig legacy = FromYarnEdit([](json&) {});
  const ModelConfig flat = FromYarnEdit([](json& j) {
    j.erase("rope_theta");
    j.erase("rope_scaling");
    j["rope_parameters"] = TinyYarnFullParameters();
  });
  const ModelConfig nested = FromYarnEdit([](json& j) {
    j.erase("rope_theta");
    j.erase("rope_scaling");
    j["rope_parameters"] = {{"full_attention", TinyYarnFullParameters()},
                            {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 500000.0}}}};
  });
  EXPECT_EQ(flat.rope_spelling, RopeSpelling::kRopeParameters);
  EXPECT_EQ(nested.rope_spelling, RopeSpelling::kRopeParametersPerLayerType);
  for (const ModelConfig* c : {&flat, &nested})
    for (int64_t l = 0; l < 4; ++l) EXPECT_TRUE(c->RopeFor(l).SameMath(legacy.RopeFor(l))) << l;

  const json in_legacy = Load("olmo3/tiny-yarn/config.json");
  const json out_legacy = legacy.ToHfJson();
  EXPECT_EQ(out_legacy["rope_scaling"], in_legacy["rope_scaling"]);
  EXPECT_EQ(out_legacy["rope_theta"], in_legacy["rope_theta"]);
  EXPECT_FALSE(out_legacy.contains("rope_parameters"));
  // An HF directory's config.json has, beside the legacy keys, the per-layer-type form
  // (transformers 5 misreads a legacy rope_theta for sliding layers), stating the same RoPE.
  const json dir_legacy = legacy.ToHfDirectoryJson();
  EXPECT_EQ(dir_legacy["rope_scaling"], in_legacy["rope_scaling"]);
  EXPECT_EQ(dir_legacy["rope_parameters"]["full_attention"], TinyYarnFullParameters());
  EXPECT_EQ(dir_legacy["rope_parameters"]["sliding_attention"],
            json({{"rope_type", "default"}, {"rope_theta", 500000.0}}));
  ExpectSame(ModelConfig::FromHfJson(dir_legacy, "rt"), legacy);
  EXPECT_EQ(ModelConfig::FromHfJson(dir_legacy, "rt").ToHfDirectoryJson(), dir_legacy);
  const json out_flat = flat.ToHfJson();
  EXPECT_EQ(out_flat["rope_parameters"], TinyYarnFullParameters());
  EXPECT_FALSE(out_flat.contains("rope_scaling"));
  EXPECT_FALSE(out_flat.contains("rope_theta"));
  const json out_nested = nested.ToHfJson();
  EXPECT_EQ(out_nested["rope_parameters"]["full_attention"], TinyYarnFullParameters());
  EXPECT_EQ(out_nested["rope_parameters"]["sliding_attention"],
            json({{"rope_type", "default"}, {"rope_theta", 500000.0}}));
  for (const ModelConfig* c : {&legacy, &flat, &nested})
    ExpectSame(ModelConfig::FromHfJson(c->ToHfJson(), "rt"), *c);

  // The released 7B's rope_scaling comes back exactly (attention_factor included).
  const ModelConfig release = FromYarnEdit([](json& j) {
    j["rope_scaling"] = Release7bRopeScaling();
    j["max_position_embeddings"] = 65536;
  });
  EXPECT_EQ(release.ToHfJson()["rope_scaling"], Release7bRopeScaling());
  EXPECT_TRUE(release.rope_full.attention_factor_given);
}

// Per layer type, each entry is taken as written; a missing entry is plain RoPE.
TEST(ModelConfig, YarnPerLayerTypeAsWritten) {
  const ModelConfig both = FromYarnEdit([](json& j) {
    j.erase("rope_scaling");
    j["rope_parameters"] = {{"full_attention", TinyYarnFullParameters()},
                            {"sliding_attention", TinyYarnFullParameters()}};
  });
  EXPECT_EQ(both.RopeFor(0).type, RopeType::kYarn);
  EXPECT_EQ(both.RopeFor(3).type, RopeType::kYarn);
  const ModelConfig only_full = FromYarnEdit([](json& j) {
    j.erase("rope_scaling");
    j["rope_parameters"] = {{"full_attention", TinyYarnFullParameters()}};
  });
  EXPECT_EQ(only_full.RopeFor(0).type, RopeType::kDefault);
  EXPECT_EQ(only_full.RopeFor(0).theta, 500000.0);
  EXPECT_EQ(only_full.RopeFor(3).type, RopeType::kYarn);
}

// Where transformers falls back to a default, so does replica.
TEST(ModelConfig, YarnDefaultsAndFallbacks) {
  // No original_max_position_embeddings: max_position_embeddings is the original context.
  const ModelConfig no_l = FromYarnEdit([](json& j) { j["rope_scaling"].erase("original_max_position_embeddings"); });
  EXPECT_EQ(no_l.rope_full.original_max_position_embeddings, 256);
  EXPECT_FALSE(no_l.rope_full.original_max_given);
  EXPECT_FALSE(no_l.ToHfJson()["rope_scaling"].contains("original_max_position_embeddings"));
  // No betas, or betas null or 0 (`.get(key) or default`): 32 and 1.
  for (const json& v : {json(nullptr), json(0)}) {
    const ModelConfig c = FromYarnEdit([&](json& j) {
      j["rope_scaling"]["beta_fast"] = v;
      j["rope_scaling"]["beta_slow"] = v;
    });
    EXPECT_EQ(c.rope_full.beta_fast, 32.0);
    EXPECT_EQ(c.rope_full.beta_slow, 1.0);
  }
  // An explicit attention_factor replaces 0.1 ln s + 1; mscale / mscale_all_dim give a ratio.
  EXPECT_EQ(FromYarnEdit([](json& j) { j["rope_scaling"]["attention_factor"] = 1.5; }).rope_full.attention_factor, 1.5);
  const ModelConfig ms = FromYarnEdit([](json& j) {
    j["rope_scaling"]["mscale"] = 1.0;
    j["rope_scaling"]["mscale_all_dim"] = 0.5;
  });
  EXPECT_DOUBLE_EQ(ms.rope_full.attention_factor, (0.1 * std::log(8.0) + 1) / (0.05 * std::log(8.0) + 1));
  EXPECT_FALSE(FromYarnEdit([](json& j) { j["rope_scaling"]["truncate"] = false; }).rope_full.truncate);
  // "type" is the older name of "rope_type".
  EXPECT_EQ(FromYarnEdit([](json& j) {
              j["rope_scaling"].erase("rope_type");
              j["rope_scaling"]["type"] = "yarn";
            }).rope_full.type,
            RopeType::kYarn);
  // factor 1 is allowed (no stretch; m = 1).
  EXPECT_EQ(FromYarnEdit([](json& j) { j["rope_scaling"]["factor"] = 1; }).rope_full.attention_factor, 1.0);
  // rope_scaling {"rope_type": "default"} is plain RoPE.
  EXPECT_EQ(FromYarnEdit([](json& j) { j["rope_scaling"] = {{"rope_type", "default"}}; }).rope_full.type,
            RopeType::kDefault);
}

// Bad YaRN settings: each refused with the JSON path of the field.
TEST(ModelConfig, YarnRefusals) {
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"]["rope_type"] = "yarnn"; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'rope_scaling.rope_type'"), HasSubstr("yarnn")));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"]["rope_type"] = "dynamic"; }),
              AllOf(HasSubstr("'rope_scaling.rope_type'"), HasSubstr("dynamic")));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"]["factor"] = 0.5; }),
              AllOf(HasSubstr("'rope_scaling.factor'"), HasSubstr("0.5"), HasSubstr(">= 1")));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"]["factor"] = "8"; }), HasSubstr("'rope_scaling.factor'"));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"].erase("factor"); }),
              AllOf(HasSubstr("missing"), HasSubstr("'rope_scaling.factor'")));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"].erase("rope_type"); }),
              AllOf(HasSubstr("missing"), HasSubstr("'rope_scaling.rope_type'")));
  EXPECT_THAT(YarnEditError([](json& j) {
                j["rope_scaling"].erase("original_max_position_embeddings");
                j.erase("max_position_embeddings");
              }),
              HasSubstr("'rope_scaling.original_max_position_embeddings'"));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"]["original_max_position_embeddings"] = 31.5; }),
              HasSubstr("'rope_scaling.original_max_position_embeddings'"));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"]["beta_fast"] = -2; }),
              HasSubstr("'rope_scaling.beta_fast'"));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"]["attention_factor"] = 0; }),
              HasSubstr("'rope_scaling.attention_factor'"));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"]["truncate"] = "no"; }),
              HasSubstr("'rope_scaling.truncate'"));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_scaling"] = 8; }), HasSubstr("'rope_scaling'"));
  EXPECT_THAT(YarnEditError([](json& j) { j["rope_parameters"] = TinyYarnFullParameters(); }),
              AllOf(HasSubstr("'rope_scaling'"), HasSubstr("'rope_parameters'")));
  EXPECT_THAT(YarnEditError([](json& j) {
                j.erase("rope_scaling");
                json full = TinyYarnFullParameters();
                full["factor"] = 0.25;
                j["rope_parameters"] = {{"full_attention", full}};
              }),
              HasSubstr("'rope_parameters.full_attention.factor'"));
  EXPECT_THAT(YarnEditError([](json& j) {
                j.erase("rope_scaling");
                j["rope_parameters"] = {{"full_attention", TinyYarnFullParameters()},
                                        {"chunked_attention", TinyYarnFullParameters()}};
              }),
              HasSubstr("'rope_parameters.chunked_attention'"));
  EXPECT_THAT(YarnEditError([](json& j) {
                j.erase("rope_scaling");
                json full = TinyYarnFullParameters();
                full["rope_theta"] = 10000.0;
                j["rope_parameters"] = full;  // top-level rope_theta 500000 is still there
              }),
              AllOf(HasSubstr("'rope_parameters.rope_theta'"), HasSubstr("contradicts")));
}

TEST(ModelConfig, HeadDimConsistentIsAccepted) {
  EXPECT_EQ(FromEdit([](json& j) { j["head_dim"] = 16; }).head_dim, 16);
}

TEST(ModelConfig, ToHfJsonRoundTrips) {
  for (const char* rel : {"olmo3/tiny-mha/config.json", "olmo3/tiny-gqa/config.json",
                          "olmo3/tiny-yarn/config.json", "bench-shapes/olmo3-7b/config.json",
                          "bench-shapes/bench-S/config.json"}) {
    auto c = ModelConfig::FromHfFile(kData + "/" + rel);
    json out = c.ToHfJson();
    ExpectSame(ModelConfig::FromHfJson(out, "rt"), c);
    // The fields transformers reads come out as the original file has them.
    json in = Load(rel);
    for (const char* k : {"model_type", "vocab_size", "hidden_size", "intermediate_size",
                          "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                          "rms_norm_eps", "rope_theta", "sliding_window", "layer_types",
                          "pad_token_id", "eos_token_id", "bos_token_id", "tie_word_embeddings",
                          "max_position_embeddings", "hidden_act", "attention_bias", "rope_scaling",
                          "architectures"})
      EXPECT_EQ(out[k], in[k]) << rel << " " << k;
  }
  auto tied = FromEdit([](json& j) { j["tie_word_embeddings"] = true; j["bos_token_id"] = 3; });
  ExpectSame(ModelConfig::FromHfJson(tied.ToHfJson(), "rt"), tied);
}

// ---------------------------------------------------------------------------------------------
// Refusals: each names the file and the field

TEST(ModelConfig, MissingRequiredFields) {
  for (const char* k : {"model_type", "vocab_size", "hidden_size", "intermediate_size",
                        "num_hidden_layers", "num_attention_heads", "rms_norm_eps"}) {
    EXPECT_THAT(EditError([&](json& j) { j.erase(k); }),
                AllOf(HasSubstr("edited/config.json"), HasSubstr("missing required field"),
                      HasSubstr(std::string("'") + k + "'")))
        << k;
    EXPECT_THAT(EditError([&](json& j) { j[k] = nullptr; }), HasSubstr(std::string("'") + k + "'")) << k;
  }
  EXPECT_THAT(EditError([](json& j) { j.erase("rope_theta"); }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'rope_theta'")));
  EXPECT_THAT(EditError([](json& j) { j.erase("sliding_window"); }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'sliding_window'"), HasSubstr("sliding_attention")));
  EXPECT_THAT(EditError([](json& j) {  // default pattern has sliding layers, so W is needed
                j.erase("sliding_window");
                j.erase("layer_types");
              }),
              HasSubstr("'sliding_window'"));
}

TEST(ModelConfig, WrongTypes) {
  EXPECT_THAT(EditError([](json& j) { j["hidden_size"] = "64"; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'hidden_size'"), HasSubstr("positive integer"),
                    HasSubstr("\"64\"")));
  EXPECT_THAT(EditError([](json& j) { j["hidden_size"] = 64.0; }), HasSubstr("'hidden_size'"));
  EXPECT_THAT(EditError([](json& j) { j["vocab_size"] = -1; }), HasSubstr("'vocab_size'"));
  EXPECT_THAT(EditError([](json& j) { j["num_hidden_layers"] = 0; }), HasSubstr("'num_hidden_layers'"));
  EXPECT_THAT(EditError([](json& j) { j["rms_norm_eps"] = "1e-5"; }), HasSubstr("'rms_norm_eps'"));
  EXPECT_THAT(EditError([](json& j) { j["rms_norm_eps"] = 0; }), HasSubstr("'rms_norm_eps'"));
  EXPECT_THAT(EditError([](json& j) { j["rope_theta"] = -1; }), HasSubstr("'rope_theta'"));
  EXPECT_THAT(EditError([](json& j) { j["sliding_window"] = 0; }), HasSubstr("'sliding_window'"));
  EXPECT_THAT(EditError([](json& j) { j["tie_word_embeddings"] = 0; }), HasSubstr("'tie_word_embeddings'"));
  EXPECT_THAT(EditError([](json& j) { j["eos_token_id"] = {1, 2}; }), HasSubstr("'eos_token_id'"));
  EXPECT_THAT(EditError([](json& j) { j["pad_token_id"] = -5; }), HasSubstr("'pad_token_id'"));
  EXPECT_THAT(EditError([](json& j) { j["model_type"] = 3; }), HasSubstr("'model_type'"));
  EXPECT_THAT(EditError([](json& j) { j["layer_types"] = "sliding_attention"; }), HasSubstr("'layer_types'"));
  EXPECT_THAT(EditError([](json& j) { j["rope_parameters"] = 5; }), HasSubstr("'rope_parameters'"));
  EXPECT_THAT(EditError([](json& j) { j["max_position_embeddings"] = 1.5; }),
              HasSubstr("'max_position_embeddings'"));
  EXPECT_THAT(ErrorOf([] { ModelConfig::FromHfJson(json::array(), "x.json"); }),
              AllOf(HasSubstr("x.json"), HasSubstr("JSON object")));
}

TEST(ModelConfig, UnsupportedFeatures) {
  EXPECT_THAT(EditError([](json& j) { j["model_type"] = "llama"; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'model_type'"), HasSubstr("llama")));
  EXPECT_THAT(EditError([](json& j) { j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}}; }),
              AllOf(HasSubstr("'rope_scaling.rope_type'"), HasSubstr("linear")));
  EXPECT_THAT(EditError([](json& j) { j["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 10000}}; }),
              AllOf(HasSubstr("'rope_parameters.rope_type'"), HasSubstr("longrope")));
  EXPECT_THAT(EditError([](json& j) {
                j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 10000}}},
                                        {"sliding_attention", {{"rope_type", "linear"}, {"rope_theta", 10000}}}};
              }),
              HasSubstr("'rope_parameters.sliding_attention.rope_type'"));
  EXPECT_THAT(EditError([](json& j) { j["attention_bias"] = true; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'attention_bias'")));
  EXPECT_THAT(EditError([](json& j) { j["hidden_act"] = "gelu"; }),
              AllOf(HasSubstr("'hidden_act'"), HasSubstr("gelu")));
  EXPECT_THAT(EditError([](json& j) { j["attention_dropout"] = 0.1; }), HasSubstr("'attention_dropout'"));
  EXPECT_THAT(EditError([](json& j) {
                j["model_type"] = "olmo2";
                j.erase("layer_types");
              }),
              AllOf(HasSubstr("'sliding_window'"), HasSubstr("olmo2")));
  EXPECT_THAT(EditError([](json& j) {
                j["model_type"] = "olmo2";
                j.erase("sliding_window");
              }),
              AllOf(HasSubstr("'layer_types'"), HasSubstr("olmo2")));
}

TEST(ModelConfig, ContradictoryFields) {
  EXPECT_THAT(EditError([](json& j) { j["num_key_value_heads"] = 3; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'num_key_value_heads'"), HasSubstr("divide")));
  EXPECT_THAT(EditError([](json& j) { j["head_dim"] = 32; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'head_dim'"), HasSubstr("contradicts")));
  EXPECT_THAT(EditError([](json& j) { j["hidden_size"] = 66; }),
              AllOf(HasSubstr("'hidden_size'"), HasSubstr("not divisible")));
  EXPECT_THAT(EditError([](json& j) {
                j["hidden_size"] = 12;
                j["num_attention_heads"] = 4;
                j["num_key_value_heads"] = 4;
              }),
              HasSubstr("even"));  // head dim 3 cannot be rotated half-and-half
  EXPECT_THAT(EditError([](json& j) { j["rope_parameters"] = {{"rope_theta", 500000.0}}; }),
              AllOf(HasSubstr("'rope_parameters.rope_theta'"), HasSubstr("contradicts")));
  EXPECT_THAT(EditError([](json& j) { j["layer_types"].push_back("full_attention"); }),
              AllOf(HasSubstr("'layer_types'"), HasSubstr("5 entries"), HasSubstr("num_hidden_layers is 4")));
  EXPECT_THAT(EditError([](json& j) { j["layer_types"][2] = "chunked_attention"; }),
              AllOf(HasSubstr("'layer_types[2]'"), HasSubstr("chunked_attention")));
  EXPECT_THAT(EditError([](json& j) { j["layer_types"][2] = 1; }), HasSubstr("'layer_types[2]'"));
}

TEST(ModelConfig, FileErrorsNameThePath) {
  EXPECT_THAT(ErrorOf([] { ModelConfig::FromHfFile("/nonexistent/config.json"); }),
              HasSubstr("/nonexistent/config.json"));
  const std::string path = ::testing::TempDir() + "/replica_bad_config.json";
  WriteFileAtomic(path, "{\"model_type\": \"olmo3\",");
  EXPECT_THAT(ErrorOf([&] { ModelConfig::FromHfFile(path); }), AllOf(HasSubstr(path), HasSubstr("not valid JSON")));
  json j = Load("olmo3/tiny-mha/config.json");
  j.erase("hidden_size");
  WriteFileAtomic(path, j.dump());
  EXPECT_THAT(ErrorOf([&] { ModelConfig::FromHfFile(path); }), AllOf(HasSubstr(path), HasSubstr("'hidden_size'")));
  std::remove(path.c_str());
}

// Size fields multiply into shapes and parameter counts: every product is overflow-checked and every
// field bounded, and the error names the field instead of overflowing (a negative or wrapped
// shape), growing memory until std::bad_alloc, or crashing later in the RoPE table.
TEST(ModelConfig, HeadDimOverflowIsRefusedByName) {
  // 4611686018427387920 * 4 wraps to 64 in int64 arithmetic.
  EXPECT_THAT(EditError([](json& j) { j["head_dim"] = 4611686018427387920LL; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'head_dim'")));
}

TEST(ModelConfig, SizeFieldsAreBoundedByName) {
  EXPECT_THAT(EditError([](json& j) { j["vocab_size"] = 1000000000000LL; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'vocab_size'")));
  EXPECT_THAT(EditError([](json& j) {
                j.erase("layer_types");
                j["num_hidden_layers"] = 10000000;
              }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'num_hidden_layers'")));
  // Each field alone is plausible; their products are not.
  EXPECT_THAT(EditError([](json& j) {
                j["hidden_size"] = int64_t{1} << 20;
                j["intermediate_size"] = int64_t{1} << 40;
                j["num_attention_heads"] = 1024;
                j["num_key_value_heads"] = 1024;
              }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'intermediate_size'")));
  EXPECT_THAT(EditError([](json& j) {
                j["vocab_size"] = int64_t{1} << 30;
                j["hidden_size"] = int64_t{1} << 20;
                j["num_attention_heads"] = 1024;
                j["num_key_value_heads"] = 1024;
              }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("parameters")));
}

TEST(ModelConfig, TokenIdsMustFitInt32AndTheVocabulary) {
  EXPECT_THAT(EditError([](json& j) { j["eos_token_id"] = (int64_t{1} << 32) + 300; }),
              AllOf(HasSubstr("edited/config.json"), HasSubstr("'eos_token_id'")));
  EXPECT_THAT(EditError([](json& j) { j["pad_token_id"] = 512; }),  // vocab_size is 512
              AllOf(HasSubstr("'pad_token_id'"), HasSubstr("vocab_size")));
  EXPECT_THAT(EditError([](json& j) { j["bos_token_id"] = 4000; }), HasSubstr("'bos_token_id'"));
  EXPECT_EQ(FromEdit([](json& j) { j["eos_token_id"] = 511; }).eos_token_id, 511);
}

}  // namespace
}  // namespace replica

// Readers of the experiment, data loader, train module (optimizer, scheduler, parallelism,
// precision) and trainer (durations, checkpoint loading, callbacks).
#include <cmath>
#include <map>

#include "core/error.h"
#include "run/olmo_core_import.h"

namespace replica::olmo_core {

void Importer::Experiment(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kExperiment);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  auto section = [&](const char* key, void (Importer::*read)(const json&, const std::string&)) {
    if (const json* v = o.Take(key))
      (this->*read)(*v, o.At(key));
    else
      Refuse(o.At(key), fmt::format("missing (a required field of {})", ShortClass(cls->name)));
  };
  section("model", &Importer::Model);
  section("dataset", &Importer::Dataset);
  section("data_loader", &Importer::DataLoader);
  section("train_module", &Importer::TrainModule);
  section("trainer", &Importer::Trainer);
  if (auto v = o.Str("load_path")) experiment_load_path_.Set(*v, o.At("load_path"));
  o.Finish();
  if (experiment_load_path_.set) {
    if (r_.load_path.set) {
      Refuse(experiment_load_path_.path,
             fmt::format("both {} and {} are set; which one OLMo-core loads depends on the save "
                         "folder, so it is refused rather than guessed",
                         experiment_load_path_.path, r_.load_path.path));
    } else {
      // script_utils.main: trainer.load_checkpoint(load_path, load_trainer_state=False) when the
      // save folder has no checkpoint (a new run).
      r_.load_path = experiment_load_path_;
      r_.load_trainer_state.Set(false, experiment_load_path_.path + " (loaded without the "
                                                                    "trainer state)");
      r_.load_never = false;
    }
  }
}

void Importer::DataLoader(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kDataLoader);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  if (auto v = o.Int("global_batch_size")) {
    if (*v < 1)
      Refuse(o.At("global_batch_size"), fmt::format("{}: expected a positive token count", *v));
    else
      r_.global_batch_tokens.Set(*v, o.At("global_batch_size"));
  } else if (!o.Has("global_batch_size")) {
    Refuse(o.At("global_batch_size"), "missing (a required field of NumpyDataLoaderConfig)");
  }
  if (auto v = o.Int("seed")) {
    if (*v < 0)
      Refuse(o.At("seed"), fmt::format("{} is negative; OLMo-core's shuffle (numpy's PCG64 seeded "
                                       "with seed + epoch) refuses negative seeds",
                                       *v));
    else
      r_.data_seed.Set(*v, o.At("seed"));
  } else if (!o.Has("seed")) {
    Refuse(o.At("seed"), "missing (a required field of NumpyDataLoaderConfig)");
  }
  o.Finish();
}

void Importer::ReadSchedule(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kScheduler);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  Schedule s;
  s.cls = cls->name;
  s.path = path;
  const std::string name = ShortClass(cls->name);
  s.type = name == "CosWithWarmup"       ? "cosine"
           : name == "HalfCosWithWarmup" ? "cosine_continuation"
           : name == "LinearWithWarmup"  ? "linear"
           : name == "WSD"               ? "wsd"
                                         : "constant";
  auto non_negative = [&](const char* key, Src<int64_t>& into) {
    if (auto v = o.Int(key)) {
      if (*v < 0)
        Refuse(o.At(key), fmt::format("{}: expected >= 0", *v));
      else
        into.Set(*v, o.At(key));
    }
  };
  auto fraction = [&](const char* key, Src<double>& into) {
    if (auto v = o.Num(key)) {
      if (!(*v >= 0 && *v <= 1))
        Refuse(o.At(key), fmt::format("{}: expected a fraction in [0, 1]", *v));
      else
        into.Set(*v, o.At(key));
    }
  };
  if (name != "ConstantScheduler") {
    Src<int64_t> w, ws;
    non_negative("warmup", w);
    non_negative("warmup_steps", ws);  // the older spelling
    if (w.set && ws.set)
      Refuse(o.At("warmup_steps"), "both 'warmup' and the older 'warmup_steps' are set");
    s.warmup = w.set ? w : ws;
    fraction("warmup_fraction", s.warmup_fraction);
    if (s.warmup.set == s.warmup_fraction.set && !o.Has("warmup") && !o.Has("warmup_steps") &&
        !o.Has("warmup_fraction"))
      Refuse(path, "give exactly one of 'warmup' and 'warmup_fraction' (as OLMo-core requires)");
    else if (s.warmup.set && s.warmup_fraction.set)
      Refuse(path, "give exactly one of 'warmup' and 'warmup_fraction' (as OLMo-core requires)");
    if (auto v = o.Num("warmup_min_lr")) s.warmup_min_lr.Set(*v, o.At("warmup_min_lr"));
  }
  if (name == "CosWithWarmup" || name == "HalfCosWithWarmup" || name == "LinearWithWarmup") {
    if (auto v = o.Num("alpha_f"))
      s.alpha_f.Set(*v, o.At("alpha_f"));
    else
      s.alpha_f.Set(0.1, path + " (alpha_f default 0.1)");
    non_negative("t_max", s.t_max);
  }
  if (name == "WSD") {
    Src<int64_t> d, ds;
    non_negative("decay", d);
    non_negative("decay_steps", ds);
    s.decay = d.set ? d : ds;
    fraction("decay_fraction", s.decay_fraction);
    if (s.decay.set && s.decay_fraction.set)
      Refuse(o.At("decay_fraction"), "give exactly one of 'decay' and 'decay_fraction'");
    if (auto v = o.Num("decay_min_lr")) s.decay_min_lr.Set(*v, o.At("decay_min_lr"));
  }
  o.Finish();
  r_.schedule = s;
}

// OLMo-core names (blocks.N.attention.w_q.weight, ...) -> replica's Hugging Face names.
std::optional<std::vector<std::string>> HfNames(const std::string& name, int64_t n_layers) {
  static const std::map<std::string, std::string> top = {
      {"embeddings.weight", "model.embed_tokens.weight"},
      {"lm_head.w_out.weight", "lm_head.weight"},
      {"lm_head.norm.weight", "model.norm.weight"}};
  if (auto it = top.find(name); it != top.end()) return std::vector<std::string>{it->second};
  static const std::map<std::string, std::string> per_layer = {
      {"attention.w_q.weight", "self_attn.q_proj.weight"},
      {"attention.w_k.weight", "self_attn.k_proj.weight"},
      {"attention.w_v.weight", "self_attn.v_proj.weight"},
      {"attention.w_out.weight", "self_attn.o_proj.weight"},
      {"attention.q_norm.weight", "self_attn.q_norm.weight"},
      {"attention.k_norm.weight", "self_attn.k_norm.weight"},
      {"feed_forward.w1.weight", "mlp.gate_proj.weight"},
      {"feed_forward.w2.weight", "mlp.down_proj.weight"},
      {"feed_forward.w3.weight", "mlp.up_proj.weight"},
      {"attention_norm.weight", "post_attention_layernorm.weight"},
      {"feed_forward_norm.weight", "post_feedforward_layernorm.weight"}};
  if (name.rfind("blocks.", 0) != 0) return std::nullopt;
  const size_t dot = name.find('.', 7);
  if (dot == std::string::npos) return std::nullopt;
  const std::string idx = name.substr(7, dot - 7);
  std::string rest = name.substr(dot + 1);
  if (rest.rfind("sequence_mixer.", 0) == 0) rest = "attention." + rest.substr(15);
  auto it = per_layer.find(rest);
  if (it == per_layer.end()) return std::nullopt;
  std::vector<std::string> out;
  if (idx == "*") {
    for (int64_t l = 0; l < n_layers; ++l)
      out.push_back(fmt::format("model.layers.{}.{}", l, it->second));
    return out;
  }
  if (idx.empty() || idx.size() > 6 || idx.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(idx) >= n_layers)
    return std::nullopt;
  out.push_back(fmt::format("model.layers.{}.{}", idx, it->second));
  return out;
}

void Importer::Optim(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kOptim);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  r_.skip_step = ShortClass(cls->name) == "SkipStepAdamWConfig";
  // These fields are plain floats in OLMo-core (not Optional): a null reaches torch's AdamW as
  // None and fails there, so it is refused rather than read as the default.
  for (const char* key : {"lr", "eps", "weight_decay", "betas"}) {
    if (o.IsNull(key))
      Refuse(o.At(key),
             fmt::format("null: OLMo-core passes None on to torch's AdamW, which needs {}; give "
                         "the value, or leave the field out for OLMo-core's default",
                         std::string(key) == "betas" ? "two numbers [beta1, beta2]" : "a number"));
  }
  auto number = [&](const char* key, double fallback, Src<double>& into, bool positive) {
    const std::optional<double> v = o.Num(key);
    const double x = v.value_or(fallback);
    into.Set(x, o.At(key));
    if (!std::isfinite(x) || x < 0 || (positive && x == 0))
      Refuse(o.At(key), fmt::format("{}: expected a finite number {} 0", x, positive ? ">" : ">="));
  };
  number("lr", 1e-3, r_.lr, false);
  number("eps", 1e-8, r_.eps, true);
  number("weight_decay", 1e-2, r_.weight_decay, false);
  if (const json* b = o.Take("betas")) {
    const bool ok = b->is_array() && b->size() == 2 && (*b)[0].is_number() &&
                    (*b)[1].is_number() && (*b)[0].get<double>() >= 0 &&
                    (*b)[0].get<double>() < 1 && (*b)[1].get<double>() >= 0 &&
                    (*b)[1].get<double>() < 1;
    if (ok)
      r_.betas.Set({(*b)[0].get<double>(), (*b)[1].get<double>()}, o.At("betas"));
    else
      Refuse(o.At("betas"),
             fmt::format("expected [beta1, beta2], two numbers in [0, 1), got {}",
                         b->dump().substr(0, 200)));
  } else {
    r_.betas.Set({0.9, 0.999}, o.At("betas") + " (default)");
  }
  if (r_.skip_step) {
    const std::optional<int64_t> len = o.Int("rolling_interval_length");
    r_.rolling_interval.Set(len.value_or(128), o.At("rolling_interval_length"));
    if (r_.rolling_interval.value < 6 || r_.rolling_interval.value > (int64_t{1} << 31))
      Refuse(o.At("rolling_interval_length"),
             fmt::format("{}: rolling_interval_length // 2 must be at least 3 (replica needs "
                         "two previous values for a std), and at most 2^31",
                         r_.rolling_interval.value));
    r_.sigma.Set(o.Num("sigma_factor").value_or(6), o.At("sigma_factor"));
    if (!std::isfinite(r_.sigma.value) || r_.sigma.value <= 0)
      Refuse(o.At("sigma_factor"), fmt::format("{}: expected > 0", r_.sigma.value));
  }
  std::vector<std::string> no_decay;
  if (const json* g = o.Take("group_overrides")) {
    if (!g->is_array()) {
      Refuse(o.At("group_overrides"), "expected a list");
    } else {
      for (size_t i = 0; i < g->size(); ++i) {
        const std::string gp = fmt::format("{}[{}]", o.At("group_overrides"), i);
        const ClassRule* gcls = Dispatch((*g)[i], gp, Role::kGroupOverride);
        if (!gcls) continue;
        Obj go(*this, (*g)[i], gp, *gcls);
        const json* params = go.Take("params");
        const json* opts = go.Take("opts");
        if (!opts || !opts->is_object() || opts->size() != 1 || !opts->contains("weight_decay") ||
            !(*opts)["weight_decay"].is_number() || (*opts)["weight_decay"].get<double>() != 0.0) {
          Refuse(go.At("opts"), fmt::format("{}: replica's only per-parameter option is weight "
                                            "decay 0 (optim.no_decay)",
                                            opts ? opts->dump().substr(0, 200) : "missing"));
        } else if (!params || !params->is_array()) {
          Refuse(go.At("params"), "expected a list of parameter names");
        } else {
          for (const json& p : *params) {
            auto names =
                p.is_string() ? HfNames(p.get<std::string>(), r_.n_layers.value) : std::nullopt;
            if (!names) {
              Refuse(go.At("params"), fmt::format("{}: not a parameter name replica knows "
                                                  "(embeddings.weight, lm_head.w_out.weight, "
                                                  "blocks.N|*.attention.w_q.weight, ...)",
                                                  p.dump().substr(0, 200)));
              continue;
            }
            no_decay.insert(no_decay.end(), names->begin(), names->end());
          }
        }
        go.Finish();
      }
    }
  }
  r_.no_decay.Set(no_decay, o.At("group_overrides"));
  o.Finish();
}

// FSDP mixed precision: param_dtype bfloat16 casts every parameter to bf16 for the forward and
// backward, so every activation and activation gradient is a bf16 tensor, over fp32 master
// weights and fp32 gradient sums: replica's compute.precision bf16-fsdp (docs/precision.md).
void Importer::DataParallel(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kDataParallel);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  r_.data_parallel_path = path;
  if (auto v = o.Str("name")) {
    if (*v != "fsdp" && *v != "hsdp" && *v != "ddp")
      Refuse(o.At("name"), fmt::format("'{}': expected fsdp, hsdp or ddp", *v));
  }
  if (auto v = o.Str("param_dtype")) {
    if (*v == "bfloat16")
      r_.precision.Set("bf16-fsdp", o.At("param_dtype"));
    else if (*v != "float32")
      Refuse(o.At("param_dtype"),
             fmt::format("'{}': replica computes in fp32, bf16 or bf16-fsdp (compute.precision)",
                         *v));
  }
  o.Finish();
}

void Importer::ContextParallel(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kContextParallel);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  const std::optional<int64_t> v = o.Int("degree");
  if (!v && !o.Has("degree")) {
    Refuse(o.At("degree"), "absent: OLMo-core's ContextParallelConfig requires it");
  } else if (v) {
    if (*v < 1 || *v > (int64_t{1} << 20))
      Refuse(o.At("degree"), fmt::format("{}: expected an integer from 1 to 2^20", *v));
    else
      r_.context_parallel_degree.Set(*v, o.At("degree"));
  }
  o.Finish();
}

void Importer::Float8(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kFloat8);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  const std::optional<bool> enabled = o.Bool("enabled");
  if (enabled.value_or(!o.Has("enabled"))) {  // absent: Float8Config's default, true
    Refuse(o.At("enabled"),
           fmt::format("{}float8 matmuls are not implemented in replica (it computes in fp32, bf16 or "
                       "bf16-fsdp, compute.precision)",
                       enabled ? "" : "absent, so true (Float8Config's default): "),
           "the linear layers compute in compute.precision, without float8's scaled rounding of "
           "their operands");
  } else if (enabled) {
    Ignored(path, "Float8Config with enabled=false: nothing is converted");
  }
  o.Finish();
}

void Importer::TrainModule(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kTrainModule);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  if (auto v = o.Int("rank_microbatch_size")) {
    if (*v < 0)
      Refuse(o.At("rank_microbatch_size"), fmt::format("{}: expected a number of tokens >= 0", *v));
    else
      r_.rank_microbatch_tokens.Set(*v, o.At("rank_microbatch_size"));
  }
  if (auto v = o.Int("max_sequence_length")) {
    if (*v < 1 || *v > (int64_t{1} << 31) - 1)
      Refuse(o.At("max_sequence_length"), fmt::format("{}: expected 1 to 2^31 - 1", *v));
    else
      r_.max_sequence_length.Set(*v, o.At("max_sequence_length"));
  }
  if (const json* v = o.Take("optim"))
    Optim(*v, o.At("optim"));
  else
    Refuse(o.At("optim"), "missing (a required field of TransformerTrainModuleConfig)");
  if (auto v = o.Num("max_grad_norm")) {
    r_.max_grad_norm.Set(*v, o.At("max_grad_norm"));
    if (!std::isfinite(*v) || *v <= 0)
      Refuse(o.At("max_grad_norm"), fmt::format("{}: expected > 0 (absent: no clipping)", *v));
  } else {
    r_.max_grad_norm.Set(0, o.At("max_grad_norm") + " (absent: no clipping)");
  }
  if (const json* v = o.Take("scheduler")) ReadSchedule(*v, o.At("scheduler"));
  if (auto v = o.Num("z_loss_multiplier")) {
    r_.z_loss.Set(*v, o.At("z_loss_multiplier"));
    if (!std::isfinite(*v) || *v < 0)
      Refuse(o.At("z_loss_multiplier"), fmt::format("{}: expected >= 0", *v));
  } else {
    r_.z_loss.Set(0, o.At("z_loss_multiplier") + " (absent: no z-loss)");
  }
  if (const json* v = o.Take("float8_config")) Float8(*v, o.At("float8_config"));
  if (const json* v = o.Take("dp_config")) DataParallel(*v, o.At("dp_config"));
  if (const json* v = o.Take("cp_config")) ContextParallel(*v, o.At("cp_config"));
  for (const char* k : {"tp_config", "pp_config", "ep_config"})
    if (const json* v = o.Take(k)) Dispatch(*v, o.At(k), Role::kOtherParallel);
  if (const json* v = o.Take("ac_config"))
    Dispatch(*v, o.At("ac_config"), Role::kActivationCheckpointing);
  if (auto v = o.Str("autocast_precision")) {
    // torch.autocast: bf16 matmul operands over fp32 norms and activations, replica's bf16 (autocast
    // also rounds the matmul outputs to bf16, which replica keeps in fp32: docs/precision.md).
    if (*v == "bfloat16") {
      if (!r_.precision.set) r_.precision.Set("bf16", o.At("autocast_precision"));
    } else if (*v != "float32") {
      Refuse(o.At("autocast_precision"),
             fmt::format("'{}': replica computes in fp32, bf16 or bf16-fsdp (compute.precision)",
                         *v));
    }
  }
  o.Finish();
}

Duration Importer::ReadDuration(const json& j, const std::string& path) {
  Duration d;
  const ClassRule* cls = Dispatch(j, path, Role::kDuration);
  if (!cls) return d;
  Obj o(*this, j, path, *cls);
  auto v = o.Int("value");
  auto u = o.Str("unit");
  o.Finish();
  if (!v || !u || *v <= 0 || (*u != "steps" && *u != "tokens" && *u != "epochs")) {
    Refuse(path, "expected {value: an integer > 0, unit: steps | tokens | epochs}");
    return d;
  }
  if (*u == "epochs" && *v > 1000000) {
    Refuse(JoinPath(path, "value"), fmt::format("{} epochs: expected at most 1e6", *v));
    return d;
  }
  d.value = *v;
  d.unit = *u;
  d.path = path;
  d.set = true;
  return d;
}

void Importer::Callback(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kCallback);
  if (!cls) return;
  Obj o(*this, j, path, *cls);  // CheckpointerCallback (the one callback read field by field)
  const bool enabled = o.Bool("enabled").value_or(true);
  const std::optional<int64_t> interval = o.Int("save_interval");
  if (enabled) {
    if (interval && *interval < 1)
      Refuse(o.At("save_interval"), fmt::format("{}: expected a positive step count", *interval));
    else if (interval)
      r_.save_interval.Set(*interval, o.At("save_interval"));
  } else {
    Ignored(path, "disabled");
  }
  o.Finish();
}

void Importer::Trainer(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kTrainer);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  if (const json* v = o.Take("checkpointer"))
    Dispatch(*v, o.At("checkpointer"), Role::kCheckpointer);
  if (auto v = o.Str("load_path")) r_.load_path.Set(*v, o.At("load_path"));
  if (auto v = o.Str("load_strategy")) {
    if (*v == "never")
      r_.load_never = true;
    else if (*v != "always" && *v != "if_available")
      Refuse(o.At("load_strategy"),
             fmt::format("'{}': expected always, if_available or never", *v));
  }
  if (auto v = o.Bool("load_trainer_state"))
    r_.load_trainer_state.Set(*v, o.At("load_trainer_state"));
  if (auto v = o.Bool("load_optim_state")) r_.load_optim_state.Set(*v, o.At("load_optim_state"));
  if (const json* v = o.Take("max_duration"))
    r_.max_duration = ReadDuration(*v, o.At("max_duration"));
  else
    Refuse(o.At("max_duration"), "missing");
  if (const json* v = o.Take("hard_stop")) r_.hard_stop = ReadDuration(*v, o.At("hard_stop"));
  if (const json* cbs = o.Take("callbacks")) {
    if (!cbs->is_object()) {
      Refuse(o.At("callbacks"), "expected an object of name -> callback");
    } else {
      for (auto it = cbs->begin(); it != cbs->end(); ++it)
        Callback(*it, o.At("callbacks." + it.key()));
    }
  }
  o.Finish();
}

}  // namespace replica::olmo_core

// The decisions that need more than one field (layer pattern, per-layer overrides, one norm eps,
// YaRN on the full-attention layers, batch and step counts, schedule lengths) and the list of
// replica keys with the JSON path each came from. Every refusal is made here or in the readers;
// RenderYaml (olmo_core_emit.cc) only writes the result.
#include <cfenv>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "run/olmo_core_import.h"

namespace replica::olmo_core {
namespace fs = std::filesystem;

std::string Num(double v) { return fmt::format("{}", v); }

std::string Quote(const std::string& s) { return json(s).dump(); }

// The JSON path a replica key came from: the field's own where the config set it, else `fallback`.
template <typename Field>
std::string SourceOf(const Field& field, const std::string& fallback) {
  return field.set ? field.path : fallback;
}

// Python's round() on a float: round half to even.
int64_t RoundHalfEven(double v) {
  const int old = std::fegetround();
  std::fesetround(FE_TONEAREST);
  const double r = std::nearbyint(v);
  std::fesetround(old);
  return static_cast<int64_t>(r);
}

// YaRN from rope.scaling (OLMo-core's with_rope_scaling: copies of model.block with the scaling,
// as model.block_overrides.<layer> for exactly the full-attention layers) -> model.rope_scaling,
// which replica applies to the full-attention layers (sliding layers keep plain RoPE). Refused,
// naming the JSON path, unless the scaled layers are exactly the full-attention layers, every
// scaled layer has the same settings, and OLMo-core's ramp equals transformers' for this head dim.
void Importer::MapRopeScaling(
    const std::vector<int64_t>& windows, const Block& base, int64_t head_dim,
    const std::function<void(std::string, std::string, std::string)>& add) {
  const int64_t L = static_cast<int64_t>(windows.size());
  auto block_of = [&](int64_t l) -> const Block& {
    auto it = r_.overrides.find(l);
    return it == r_.overrides.end() ? base : it->second;
  };
  std::vector<int64_t> scaled;
  for (int64_t l = 0; l < L; ++l) {
    const Block& lb = block_of(l);
    if (lb.scaling_present && !lb.yarn) return;  // refused where it was read
    if (lb.yarn) scaled.push_back(l);
  }
  if (scaled.empty()) return;
  const Block& first = block_of(scaled.front());
  for (int64_t l : scaled) {
    const Block& lb = block_of(l);
    if (*lb.yarn != *first.yarn) {
      Refuse(lb.yarn_path,
             fmt::format("differs from {} (factor {} vs {}, beta_fast {} vs {}, beta_slow {} vs "
                         "{}, old_context_len {} vs {}): replica's full-attention layers share "
                         "one RoPE",
                         first.yarn_path, lb.yarn->factor, first.yarn->factor, lb.yarn->beta_fast,
                         first.yarn->beta_fast, lb.yarn->beta_slow, first.yarn->beta_slow,
                         lb.yarn->old_context_len, first.yarn->old_context_len));
      return;
    }
  }
  std::string full_layers;
  for (int64_t l = 0; l < L; ++l)
    if (windows[l] < 0) full_layers += (full_layers.empty() ? "" : ", ") + std::to_string(l);
  for (int64_t l = 0; l < L; ++l) {
    const Block& lb = block_of(l);
    if (lb.yarn && windows[l] >= 0) {
      Refuse(lb.yarn_path,
             fmt::format("YaRN on layer {}, a sliding-window layer ({} tokens): replica maps "
                         "OLMo-core's YaRN onto the full-attention layers only ({}), as "
                         "with_rope_scaling(full_attn_layers_only=True) puts it",
                         l, windows[l], full_layers));
      return;
    }
    if (!lb.yarn && windows[l] < 0) {
      Refuse(fmt::format("model.block_overrides.{}", l),
             fmt::format("layer {} is a full-attention layer without the YaRN scaling of {}: "
                         "replica's full-attention layers share one RoPE",
                         l, first.yarn_path));
      return;
    }
  }
  const OlmoCoreYarn& y = *first.yarn;
  const double theta = base.rope_theta.set ? base.rope_theta.value : 500000.0;
  if (const std::string why = OlmoCoreYarnDiffers(y, theta, head_dim); !why.empty()) {
    Refuse(first.yarn_path, why);
    return;
  }

  // The JSON path of the scaling, e.g. model.block_overrides.{3,7,...}.sequence_mixer.rope.scaling.
  std::string at = first.yarn_path;
  const std::string prefix = "model.block_overrides.";
  if (scaled.size() > 1 && at.rfind(prefix, 0) == 0) {
    const std::string suffix = at.substr(at.find('.', prefix.size()));
    std::string layers;
    bool same_form = true;
    for (int64_t l : scaled) {
      layers += (layers.empty() ? "" : ",") + std::to_string(l);
      same_form = same_form && block_of(l).yarn_path == prefix + std::to_string(l) + suffix;
    }
    if (same_form) at = prefix + "{" + layers + "}" + suffix;
  }
  auto from = [&](const std::string& field) {
    return at + "." + field +
           (first.yarn_defaults.count(field) ? " (absent: YaRNRoPEScalingConfig default)" : "");
  };
  const RopeParams p = OlmoCoreYarnRope(y, theta);
  add("model.rope_scaling.rope_type", "yarn",
      at + "._CLASS_ (YaRNRoPEScalingConfig; replica scales the full-attention layers)");
  add("model.rope_scaling.factor", Num(p.factor), from("factor"));
  add("model.rope_scaling.original_max_position_embeddings",
      std::to_string(p.original_max_position_embeddings), from("old_context_len"));
  add("model.rope_scaling.beta_fast", Num(p.beta_fast), from("beta_fast"));
  add("model.rope_scaling.beta_slow", Num(p.beta_slow), from("beta_slow"));
  add("model.rope_scaling.attention_factor", Num(p.attention_factor),
      "0.1 * ln(" + from("factor") + ") + 1 (get_attention_rescale_factor)");
}

std::vector<Line> Importer::Decide() {
  Decided d;
  DecideModel(d);
  DecideInit(d);
  DecideData(d);
  DecideTrain(d);
  DecideOptim(d);
  DecideRest(d);
  return d.lines;
}

// The model: per-layer windows, overrides that may differ only in RoPE scaling, one norm eps, YaRN.
void Importer::DecideModel(Decided& d) {
  auto add = [&](std::string key, std::string value, std::string from) {
    d.lines.push_back({std::move(key), std::move(value), std::move(from)});
  };

  // model
  const bool have_model = r_.block && r_.d_model.set && r_.vocab_size.set && r_.n_layers.set &&
                          r_.block->n_heads.set && r_.block->ffn_hidden.set;
  std::vector<int64_t> windows;  // per layer, -1 = full
  if (have_model) {
    const Block& b = *r_.block;
    const int64_t L = r_.n_layers.value;
    for (int64_t l = 0; l < L; ++l) {
      const Block& lb = r_.overrides.count(l) ? r_.overrides.at(l) : b;
      windows.push_back(lb.window ? lb.window->At(l, L) : -1);
    }
    for (const auto& [l, ob] : r_.overrides) {
      if (ob.canonical != b.canonical)
        Refuse(ob.path,
               "differs from model.block in more than RoPE scaling; replica's layers "
               "share one shape");
    }
    int64_t window = 0;
    std::string window_from;
    for (int64_t l = 0; l < L; ++l) {
      if (windows[l] < 0) continue;
      if (window == 0) {
        window = windows[l];
        window_from = (r_.overrides.count(l) ? r_.overrides.at(l) : b).window->path;
      } else if (windows[l] != window) {
        Refuse(window_from, fmt::format("sliding windows of {} and {} tokens: replica's model has "
                                        "one window size for all sliding layers",
                                        window, windows[l]));
      }
    }
    add("model.model_type", window > 0 ? "olmo3" : "olmo2",
        window > 0 ? window_from + " (sliding layers)" : "no sliding window: the Olmo 2 shape");
    add("model.vocab_size", std::to_string(r_.vocab_size.value), r_.vocab_size.path);
    add("model.hidden_size", std::to_string(r_.d_model.value), r_.d_model.path);
    add("model.intermediate_size", std::to_string(b.ffn_hidden.value), b.ffn_hidden.path);
    add("model.num_hidden_layers", std::to_string(L), r_.n_layers.path);
    add("model.num_attention_heads", std::to_string(b.n_heads.value), b.n_heads.path);
    add("model.num_key_value_heads",
        std::to_string(b.n_kv_heads.set ? b.n_kv_heads.value : b.n_heads.value),
        b.n_kv_heads.set ? b.n_kv_heads.path : b.n_heads.path + " (n_kv_heads absent: MHA)");
    const int64_t head_dim =
        b.head_dim.set ? b.head_dim.value : r_.d_model.value / std::max<int64_t>(1, b.n_heads.value);
    add("model.head_dim", std::to_string(head_dim),
        b.head_dim.set ? b.head_dim.path : "d_model / n_heads (head_dim absent)");
    const double eps = b.norm_eps.set ? b.norm_eps.value : 1e-5;
    for (const Src<double>* other :
         {&b.qk_norm_eps, static_cast<const Src<double>*>(&r_.final_norm_eps)})
      if (other->set && other->value != eps)
        Refuse(other->path, fmt::format("{} differs from the block norm eps {}: replica has one "
                                        "rms_norm_eps",
                                        other->value, eps));
    add("model.rms_norm_eps", Num(eps), b.norm_eps.path);
    add("model.rope_theta", Num(b.rope_theta.set ? b.rope_theta.value : 500000.0),
        b.rope_theta.set ? b.rope_theta.path : "RoPEConfig default 500000");
    MapRopeScaling(windows, b, head_dim, add);
    add("model.sliding_window", window > 0 ? std::to_string(window) : "null", window_from);
    std::string types = "[";
    for (int64_t l = 0; l < L; ++l)
      types +=
          std::string(l ? ", " : "") + (windows[l] < 0 ? "full_attention" : "sliding_attention");
    add("model.layer_types", types + "]",
        window > 0 ? window_from + " (pattern, force_full_attention_on_first/last_layer)"
                   : "no sliding window");
    const int64_t max_pos = std::max(r_.seq_len.value, r_.max_sequence_length.value);
    add("model.max_position_embeddings", std::to_string(max_pos),
        "max(dataset.sequence_length, train_module.max_sequence_length)");
    add("model.initializer_range", Num(r_.init_std.set ? r_.init_std.value : 0.02),
        SourceOf(r_.init_std, "TransformerConfig default init_std 0.02"));
    add("model.tie_word_embeddings", "false", "model.lm_head (a separate w_out)");
    add("model.pad_token_id", r_.pad_id.set ? std::to_string(r_.pad_id.value) : "null",
        SourceOf(r_.pad_id, "dataset.tokenizer"));
    add("model.eos_token_id", r_.eos_id.set ? std::to_string(r_.eos_id.value) : "null",
        SourceOf(r_.eos_id, "dataset.tokenizer"));
    add("model.bos_token_id", r_.bos_id.set ? std::to_string(r_.bos_id.value) : "null",
        SourceOf(r_.bos_id, "dataset.tokenizer (bos_token_id absent)"));
  }
}

// Initialisation and the checkpoint to start from.
void Importer::DecideInit(Decided& d) {
  auto add = [&](std::string key, std::string value, std::string from) {
    d.lines.push_back({std::move(key), std::move(value), std::move(from)});
  };

  // init
  add("init.seed", std::to_string(r_.init_seed.set ? r_.init_seed.value : 0),
      SourceOf(r_.init_seed, "model.init_seed (absent: TransformerConfig default 0)"));
  if (r_.load_path.set && !r_.load_never) {
    const std::string local = MapPath(r_.load_path.value);
    if (local.find("://") != std::string::npos) {
      Unresolved(r_.load_path.path,
                 fmt::format("'{}' is not local: download it and map it with "
                             "--path-map PREFIX=DIR (or --set "
                             "init.from_checkpoint=DIR)",
                             r_.load_path.value),
                 "init.from_checkpoint");
      add("init.from_checkpoint", "\"\"", r_.load_path.path + " (not local)");
    } else {
      add("init.from_checkpoint", Quote(local), r_.load_path.path);
    }
    add("init.reset_step", r_.load_trainer_state.value ? "false" : "true",
        SourceOf(r_.load_trainer_state, "trainer.load_trainer_state (absent: true)"));
    add("init.load_optimizer",
        r_.load_optim_state.set && !r_.load_optim_state.value ? "false" : "true",
        SourceOf(r_.load_optim_state, "trainer.load_optim_state (absent: true)"));
  }
}

// The token files, sequence length, seed and dtype (checked against the vocabulary).
void Importer::DecideData(Decided& d) {
  auto add = [&](std::string key, std::string value, std::string from) {
    d.lines.push_back({std::move(key), std::move(value), std::move(from)});
  };

  // data
  {
    std::string list = "[";
    for (size_t i = 0; i < r_.data_paths.size(); ++i)
      list += (i ? ", " : "") + Quote(r_.data_paths[i]);
    add("data.paths", list + "]",
        r_.data_paths.empty() ? "not resolved (see the header)" : r_.data_paths_from);
  }
  if (r_.seq_len.set) add("data.seq_len", std::to_string(r_.seq_len.value), r_.seq_len.path);
  if (r_.data_seed.set) add("data.seed", std::to_string(r_.data_seed.value), r_.data_seed.path);
  if (r_.source_permutation_seed.set)
    add("data.source_permutation_seed", Quote(r_.source_permutation_seed.value),
        r_.source_permutation_seed.path);
  if (r_.packing.set) {
    add("data.packing", r_.packing.value, r_.packing.path + " (NumpyPackedFSLDatasetConfig)");
    add("data.long_doc_strategy", r_.long_doc_strategy.set ? r_.long_doc_strategy.value : "truncate",
        SourceOf(r_.long_doc_strategy, "dataset.long_doc_strategy (absent: truncate)"));
    add("data.source_group_size",
        std::to_string(r_.source_group_size.set ? r_.source_group_size.value : 1),
        SourceOf(r_.source_group_size, "dataset.source_group_size (absent: 1)"));
  }
  if (r_.packing.set || (r_.generate_doc_lengths.set && r_.generate_doc_lengths.value))
    add("data.generate_doc_lengths",
        r_.generate_doc_lengths.set && r_.generate_doc_lengths.value ? "true" : "false",
        SourceOf(r_.generate_doc_lengths, "dataset.generate_doc_lengths (absent: false)"));
  d.dtype =
      r_.dtype.set ? r_.dtype.value
                   : (r_.tok_vocab.set && r_.tok_vocab.value > 65536 ? "uint32" : "uint16");
  const std::string& dtype = d.dtype;
  add("data.dtype", dtype,
      r_.dtype.set ? r_.dtype.path : "smallest dtype for dataset.tokenizer.vocab_size");
  // Without a dtype OLMo-core's NumpyDatasetConfig.get_dtype picks the smallest unsigned type
  // that holds vocab_size - 1, uint8 for at most 256 ids, which replica cannot read.
  if (!r_.dtype.set && r_.tok_vocab.set && r_.tok_vocab.value <= 256)
    Refuse(r_.tok_vocab.path,
           fmt::format("{} ids and no dataset.dtype: OLMo-core reads such token files as uint8 "
                       "(NumpyDatasetConfig.get_dtype); replica reads uint16 or uint32 only",
                       r_.tok_vocab.value));
  else if (r_.vocab_size.set && r_.tok_vocab.set && r_.tok_vocab.value > r_.vocab_size.value)
    Refuse(r_.tok_vocab.path, fmt::format("{} is above {} {}: the tokenizer's ids would not all "
                                          "have an embedding row",
                                          r_.tok_vocab.value, r_.vocab_size.path,
                                          r_.vocab_size.value));
  else if (dtype == "uint16" && r_.vocab_size.set && r_.vocab_size.value > 65536)
    Refuse(r_.dtype.set ? r_.dtype.path : r_.tok_vocab.path,
           r_.dtype.set
               ? fmt::format("uint16 token files with {} = {}: replica reads uint16 files only "
                             "for vocabularies of at most 65,536 rows",
                             r_.vocab_size.path, r_.vocab_size.value)
               : fmt::format("{} makes the token files uint16 (OLMo-core's smallest dtype for it), "
                             "but {} is {}: replica reads uint16 files only for vocabularies of "
                             "at most 65,536 rows (set dataset.dtype if the files are uint32)",
                             r_.tok_vocab.value, r_.vocab_size.path, r_.vocab_size.value));
}

// Batch, step counts (steps, tokens or epochs of the files), micro-batches, z-loss, skip-step.
void Importer::DecideTrain(Decided& d) {
  auto add = [&](std::string key, std::string value, std::string from) {
    d.lines.push_back({std::move(key), std::move(value), std::move(from)});
  };

  // train
  int64_t& instances = d.instances;
  const std::string& dtype = d.dtype;
  if (r_.global_batch_tokens.set && r_.seq_len.set && r_.seq_len.value > 0) {
    if (r_.global_batch_tokens.value % r_.seq_len.value != 0) {
      Refuse(r_.global_batch_tokens.path,
             fmt::format("{} tokens is not a whole number of {}-token instances",
                         r_.global_batch_tokens.value, r_.seq_len.value));
    } else {
      instances = r_.global_batch_tokens.value / r_.seq_len.value;
    }
  }
  d.tokens_per_step = instances * r_.seq_len.value;
  const int64_t tokens_per_step = d.tokens_per_step;
  int64_t& t_max = d.t_max;
  std::string& t_max_from = d.t_max_from;
  auto steps_of = [&](const Duration& d, std::string* from) -> int64_t {
    if (d.unit == "steps") {
      *from = d.path + ".value (steps)";
      return d.value;
    }
    if (d.unit == "tokens") {
      if (tokens_per_step <= 0) return 0;
      *from = fmt::format("ceil({}.value / data_loader.global_batch_size) = ceil({} / {})", d.path,
                          d.value, tokens_per_step);
      return d.value / tokens_per_step + (d.value % tokens_per_step != 0 ? 1 : 0);
    }
    // epochs: the dataset's whole batches, from the file sizes
    if (!r_.data_resolved || instances <= 0) return -1;
    uint64_t n = 0;
    const uint64_t item = dtype == "uint32" ? 4 : 2;
    for (const std::string& p : r_.data_paths) {
      std::error_code ec;
      const uint64_t size = fs::file_size(p, ec);
      if (ec) return -1;
      n += size / (item * static_cast<uint64_t>(r_.seq_len.value));
    }
    *from = fmt::format("{}.value epoch(s) x {} whole batches (from the data files' sizes)", d.path,
                        n / static_cast<uint64_t>(instances));
    return d.value * static_cast<int64_t>(n / static_cast<uint64_t>(instances));
  };
  if (r_.max_duration.set) t_max = steps_of(r_.max_duration, &t_max_from);
  int64_t max_steps = t_max;
  std::string max_steps_from = t_max_from;
  if (r_.hard_stop.set) {
    std::string from;
    const int64_t h = steps_of(r_.hard_stop, &from);
    if (h > 0 && (t_max <= 0 || h < t_max)) {
      max_steps = h;
      max_steps_from = from;
    } else if (h < 0 && t_max >= 0) {
      max_steps = -1;
    }
  }
  if ((max_steps < 0 || t_max < 0) && opt_.max_steps > 0) {
    add("train.max_steps", std::to_string(opt_.max_steps),
        "--max-steps (the config stops after epochs of data that is not available here)");
  } else if (max_steps < 0 || t_max < 0) {
    out_.needs_max_steps = true;
    Unresolved(r_.hard_stop.unit == "epochs" ? r_.hard_stop.path : r_.max_duration.path,
               "a duration in epochs needs the dataset's size: map the data (--mix-dir, "
               "--data-paths, --path-map) or give --set train.max_steps=N",
               "train.max_steps");
    add("train.max_steps", "0", "epochs, but the data is not available (set train.max_steps)");
  } else {
    add("train.max_steps", std::to_string(max_steps), max_steps_from);
  }
  add("train.global_batch_instances", std::to_string(instances),
      fmt::format("{} / {}", r_.global_batch_tokens.path, r_.seq_len.path));
  int64_t micro = 1;
  std::string micro_from = "train_module.rank_microbatch_size absent";
  if (r_.rank_microbatch_tokens.set && r_.seq_len.value > 0) {
    const int64_t m = r_.rank_microbatch_tokens.value / r_.seq_len.value;
    if (m >= 1 && instances % m == 0) {
      micro = m;
      micro_from = fmt::format("{} / {} (micro-batching does not change the math)",
                               r_.rank_microbatch_tokens.path, r_.seq_len.path);
    } else if (m < 1) {
      micro_from = fmt::format(
          "{} = {} tokens is less than one instance of {} ({} tokens); 1 instance instead "
          "(micro-batching does not change the math)",
          r_.rank_microbatch_tokens.path, r_.rank_microbatch_tokens.value, r_.seq_len.path,
          r_.seq_len.value);
    } else {
      micro_from = fmt::format(
          "{} / {} = {} does not divide the global batch; 1 instead "
          "(micro-batching does not change the math)",
          r_.rank_microbatch_tokens.path, r_.seq_len.path, m);
    }
  }
  add("train.micro_batch_instances", std::to_string(micro), micro_from);
  add("train.grad_accumulation", "sequential",
      "OLMo-core adds each micro-batch's gradient into the accumulated one in order");
  add("train.micro_batch_layout", "contiguous",
      "OLMo-core splits a rank's batch into micro-batches of consecutive instances");
  add("train.z_loss_multiplier", Num(r_.z_loss.value), r_.z_loss.path);
  add("train.skip_step.enabled", r_.skip_step ? "true" : "false",
      r_.skip_step ? "train_module.optim._CLASS_ (SkipStepAdamWConfig)"
                   : "train_module.optim._CLASS_ (AdamWConfig: no skipping)");
  if (r_.skip_step) {
    add("train.skip_step.window", std::to_string(r_.rolling_interval.value),
        r_.rolling_interval.path);
    const int64_t min_history = r_.rolling_interval.value / 2;
    if (min_history < 3)
      Refuse(r_.rolling_interval.path,
             "rolling_interval_length // 2 must be at least 3 "
             "(replica needs two previous values for a std)");
    add("train.skip_step.min_history", std::to_string(min_history),
        r_.rolling_interval.path + " // 2");
    add("train.skip_step.sigma", Num(r_.sigma.value), r_.sigma.path);
  }
}

// AdamW and the schedule (t_max from the trainer unless the scheduler sets it).
void Importer::DecideOptim(Decided& d) {
  auto add = [&](std::string key, std::string value, std::string from) {
    d.lines.push_back({std::move(key), std::move(value), std::move(from)});
  };

  // optim
  const int64_t t_max = d.t_max;
  const std::string& t_max_from = d.t_max_from;
  if (r_.lr.set) {
    add("optim.lr", Num(r_.lr.value), r_.lr.path);
    if (r_.betas.set)  // refused otherwise (the refusal is the answer; nothing to emit)
      add("optim.betas", fmt::format("[{}, {}]", Num(r_.betas.value[0]), Num(r_.betas.value[1])),
          r_.betas.path);
    add("optim.eps", Num(r_.eps.value), r_.eps.path);
    add("optim.weight_decay", Num(r_.weight_decay.value), r_.weight_decay.path);
    std::string nd = "[";
    for (size_t i = 0; i < r_.no_decay.value.size(); ++i)
      nd += (i ? ", " : "") + Quote(r_.no_decay.value[i]);
    add("optim.no_decay", nd + "]", r_.no_decay.path + " (weight_decay 0)");
  }
  add("optim.max_grad_norm", Num(r_.max_grad_norm.value), r_.max_grad_norm.path);
  if (r_.schedule) {
    const Schedule& s = *r_.schedule;
    add("optim.schedule.type", s.type, s.path + "._CLASS_ (" + ShortClass(s.cls) + ")");
    int64_t st_max = t_max;
    std::string st_from = t_max_from + " (trainer max steps)";
    if (s.t_max.set) {
      st_max = s.t_max.value;
      st_from = s.t_max.path;
    }
    if (s.type != "constant") {
      if (st_max <= 0) {
        Unresolved(s.path, "the schedule's t_max comes from a duration that needs the data",
                   "optim.schedule.t_max");
      } else {
        add("optim.schedule.t_max", std::to_string(st_max), st_from);
      }
    }
    if (s.warmup.set) {
      add("optim.schedule.warmup", std::to_string(s.warmup.value), s.warmup.path);
    } else if (s.warmup_fraction.set && st_max > 0) {
      add("optim.schedule.warmup",
          std::to_string(RoundHalfEven(static_cast<double>(st_max) * s.warmup_fraction.value)),
          fmt::format("round(t_max * {})", s.warmup_fraction.path));
    } else if (s.type == "constant") {
      add("optim.schedule.warmup", "0", s.path + " (ConstantScheduler: no warmup)");
    }
    if (s.type != "constant" && s.type != "wsd")
      add("optim.schedule.alpha_f", Num(s.alpha_f.value), s.alpha_f.path);
    if (s.warmup_min_lr.set)
      add("optim.schedule.warmup_min_lr", Num(s.warmup_min_lr.value), s.warmup_min_lr.path);
    if (s.type == "wsd") {
      if (s.decay.set) {
        add("optim.schedule.decay_steps", std::to_string(s.decay.value), s.decay.path);
      } else if (st_max > 0) {
        const double f = s.decay_fraction.set ? s.decay_fraction.value : 0.1;
        add("optim.schedule.decay_steps",
            std::to_string(RoundHalfEven(static_cast<double>(st_max) * f)),
            fmt::format("round(t_max * {})", s.decay_fraction.set ? s.decay_fraction.path
                                                                  : "decay_fraction default 0.1"));
      }
      add("optim.schedule.decay_min_lr", Num(s.decay_min_lr.value),
          SourceOf(s.decay_min_lr, "WSD default decay_min_lr 0"));
    }
  } else {
    add("optim.schedule.type", "constant", "train_module.scheduler absent: constant LR");
    add("optim.schedule.warmup", "0", "train_module.scheduler absent");
  }
}

// Checkpoint interval, compute precision and sharding.
void Importer::DecideRest(Decided& d) {
  auto add = [&](std::string key, std::string value, std::string from) {
    d.lines.push_back({std::move(key), std::move(value), std::move(from)});
  };

  // checkpoint
  if (r_.save_interval.set)
    add("checkpoint.interval", std::to_string(r_.save_interval.value), r_.save_interval.path);

  // compute: FSDP's param_dtype bfloat16 is bf16-fsdp (every tensor bf16 as torch rounds it);
  // autocast's bfloat16 is bf16 (matmul operands)
  if (r_.precision.set)
    add("compute.precision", r_.precision.value,
        r_.precision.path + (r_.precision.value == "bf16-fsdp"
                                 ? " (FSDP mixed precision: every parameter, activation and "
                                   "activation gradient bf16, fp32 master weights)"
                                 : " (bf16 matmul operands from fp32 master weights)"));

  // context parallelism: the same attention, each sequence whole on one rank; plan shows the degree
  if (r_.context_parallel_degree.set)
    add("parallel.context_parallel_degree", std::to_string(r_.context_parallel_degree.value),
        r_.context_parallel_degree.path + " (planned; replica computes each sequence on one rank)");

  // parallel: FSDP is ZeRO-3 (and the sequential order above is the one zero3 runs on many ranks)
  if (!r_.data_parallel_path.empty())
    add("parallel.sharding", "zero3",
        r_.data_parallel_path + " (parameters, gradients and optimizer state sharded over ranks)");
}

}  // namespace replica::olmo_core

#include "run/olmo_core_fields.h"

#include <map>

namespace replica::olmo_core {
namespace {

using json = nlohmann::json;

FieldRule Mapped(const char* field, const char* keys) {
  return {field, Use::kMapped, keys, {}, "", nullptr};
}
FieldRule Accepted(const char* field, const char* reason) {
  return {field, Use::kAccepted, reason, {}, "", nullptr};
}
// Accepted at `at` (values at which it changes nothing), refused at any other value.
FieldRule AcceptedAt(const char* field, std::vector<json> at, const char* otherwise) {
  return {field, Use::kAccepted, "changes nothing at this value", std::move(at), otherwise,
          nullptr};
}
// The same, for a field whose value when absent (`absent`) is not one of `at`.
FieldRule AcceptedAtOr(const char* field, std::vector<json> at, const char* otherwise,
                       json absent) {
  FieldRule f = AcceptedAt(field, std::move(at), otherwise);
  f.absent = std::move(absent);
  return f;
}
FieldRule Refused(const char* field, const char* reason) {
  return {field, Use::kRefused, reason, {}, "", nullptr};
}

std::vector<FieldRule> Join(std::initializer_list<std::vector<FieldRule>> parts) {
  std::vector<FieldRule> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const char* kKernel = "kernel or compiler choice; the same math";
const char* kLayout = "parallel layout; replica's data-parallel reduction is exact and fixed-order";
const char* kContextLayout =
    "how the context-parallel ranks split attention (ring or Ulysses, load balancer, head stride); "
    "replica computes each sequence's attention whole on one rank, the same math";
const char* kFp32Params = "replica keeps fp32 parameters";
const char* kNoDropout = "replica trains without dropout";
const char* kDataCache = "OLMo-core's cache directory";
const char* kFingerprint = "replica always checks its dataset fingerprint";

ClassRule Fields(const char* name, Role role, std::vector<FieldRule> fields, const char* type = "") {
  return {name, role, type, Whole::kFields, "", std::move(fields)};
}
ClassRule AcceptWhole(const char* name, Role role, const char* reason, const char* type = "") {
  return {name, role, type, Whole::kAccepted, reason, {}};
}
ClassRule RefuseWhole(const char* name, Role role, const char* reason, const char* type = "") {
  return {name, role, type, Whole::kRefused, reason, {}};
}

std::vector<ClassRule> Build() {
  const std::vector<FieldRule> experiment = {
      Mapped("model", "model.*"),
      Mapped("dataset", "data.*"),
      Mapped("data_loader", "data.seed, train.global_batch_instances"),
      Mapped("train_module", "optim.*, train.*"),
      Mapped("trainer", "train.max_steps, optim.schedule.t_max, init.*, checkpoint.*"),
      Accepted("init_seed",
               "seeds Python/NumPy/torch global RNGs; parameter init is keyed by model.init_seed "
               "and nothing else in replica's training is random"),
      Mapped("load_path",
             "init.from_checkpoint (main() loads it without the trainer state when the save "
             "folder has no checkpoint)"),
      Accepted("run_name", "the run's name; replica names runs by --run-dir"),
      Accepted("launch", "cluster launch settings"),
      Accepted("backend", "torch.distributed backends"),
  };
  const std::vector<FieldRule> layer_norm = {
      Mapped("eps", "model.rms_norm_eps"),
      AcceptedAtOr("name", {"rms", "fused_rms"},
                   "replica's norms are RMSNorm (fused_rms is the same math in one kernel)",
                   "default"),
      AcceptedAt("elementwise_affine", {true}, "replica's RMSNorm has a learned weight"),
      AcceptedAtOr("bias", {false}, "replica's RMSNorm has no bias", true),
      Accepted("full_precision", "replica computes norms in fp32"),
      AcceptedAt("dtype", {"float32"}, kFp32Params),
  };
  const char* mxfp8 = "MXFP8 matmuls are not implemented in replica (fp32 or bf16 operands)";
  const std::vector<FieldRule> attention = {
      Mapped("n_heads", "model.num_attention_heads"),
      Mapped("n_kv_heads", "model.num_key_value_heads"),
      Mapped("head_dim", "model.head_dim"),
      Mapped("qk_norm", "model.rms_norm_eps (checked equal)"),
      Mapped("rope", "model.rope_theta, model.rope_scaling"),
      Mapped("sliding_window", "model.layer_types, model.sliding_window"),
      AcceptedAt("name", {"default"}, "replica implements OLMo-core's default Attention module"),
      AcceptedAtOr("bias", {false}, "replica's attention projections have no bias", true),
      Refused("gate", "replica has no attention output gate"),
      Refused("clip_qkv", "replica does not clip q, k, v"),
      AcceptedAt("dropout", {0, 0.0}, kNoDropout),
      Accepted("use_flash", kKernel),
      Accepted("backend", kKernel),
      AcceptedAt("dtype", {"float32"}, kFp32Params),
      AcceptedAt("use_head_qk_norm", {false},
                 "replica applies QK-norm over the whole projection (Olmo 2/3), not per head"),
      AcceptedAt("scalable_softmax", {false}, "replica's softmax is not length-scaled"),
      AcceptedAt("qk_norm_per_head_gains", {false}, "replica's QK-norm has one gain vector"),
      AcceptedAt("attention_sinks", {false}, "replica has no attention sinks"),
      AcceptedAt("mxfp8_projections", {false}, mxfp8),
      AcceptedAt("mxfp8_qkv_projection", {false}, mxfp8),
      AcceptedAt("mxfp8_out_projection", {false}, mxfp8),
      AcceptedAt("mxfp8_save_qkv_for_backward", {false}, mxfp8),
      AcceptedAt("use_recompute_qkv_prep", {false},
                 "recomputing the QKV preparation in the backward is not implemented in replica"),
      Refused("layer_types", "replica's attention types are full or sliding window only"),
  };
  const std::vector<FieldRule> dataset_base = {
      Mapped("tokenizer", "model.*_token_id, data.dtype"),
      Mapped("paths", "data.paths"),
      Mapped("mix", "data.paths (from the mix file)"),
      Mapped("mix_base_dir", "data.paths (prefix)"),
      Mapped("expand_glob", "data.paths (globs refused unless expanded)"),
      Mapped("dtype", "data.dtype"),
      Accepted("metadata", "per-file metadata attached to instances; not used in training"),
      Accepted("include_instance_metadata", "instance metadata is not used in training"),
      Refused("instance_filter_config", "replica does not mask repetitive instances"),
      Mapped("source_permutation_seed", "data.source_permutation_seed"),
      Accepted("work_dir", kDataCache),
      Accepted("ignore_fingerprint_mismatch", kFingerprint),
  };
  const std::vector<FieldRule> fsl = {
      Mapped("sequence_length", "data.seq_len"),
      Mapped("max_target_sequence_length", "(checked equal to sequence_length)"),
      Mapped("generate_doc_lengths", "data.generate_doc_lengths"),
      Refused("label_mask_paths", "replica has no per-token label masks"),
      Refused("source_mixture_config",
              "OLMo-core's source mixtures are not mapped; give the run's data_paths.txt "
              "(--data-paths) instead"),
  };
  const std::vector<FieldRule> packed = {
      Mapped("sequence_length", "data.seq_len"),
      Mapped("generate_doc_lengths", "data.generate_doc_lengths"),
      Refused("label_mask_paths", "replica has no per-token label masks"),
      Mapped("long_doc_strategy", "data.long_doc_strategy"),
      Mapped("source_group_size", "data.source_group_size"),
      AcceptedAt("use_array_if_local", {true},
                 "replica finds document boundaries by the EOS token in the token files, not in "
                 "the metadata .csv.gz files"),
  };
  const std::vector<FieldRule> sched_base = {
      AcceptedAt("lr_field", {"lr"}, "replica schedules the learning rate"),
      AcceptedAt("initial_lr_field", {"initial_lr"}, "replica schedules from optim.lr"),
      AcceptedAt("units", {"steps"}, "replica's schedules count optimizer steps, not tokens"),
  };
  const std::vector<FieldRule> warmup = {
      Mapped("warmup", "optim.schedule.warmup"),
      Mapped("warmup_steps", "optim.schedule.warmup (the older spelling)"),
      Mapped("warmup_fraction", "optim.schedule.warmup = round(t_max * warmup_fraction)"),
      Mapped("warmup_min_lr", "optim.schedule.warmup_min_lr"),
  };
  const std::vector<FieldRule> decay_to = {
      Mapped("alpha_f", "optim.schedule.alpha_f"),
      Mapped("t_max", "optim.schedule.t_max"),
  };
  const std::vector<FieldRule> adam_common = {
      Mapped("lr", "optim.lr"),
      Mapped("betas", "optim.betas"),
      Mapped("eps", "optim.eps"),
      Mapped("weight_decay", "optim.weight_decay"),
      Mapped("group_overrides", "optim.no_decay"),
      Accepted("compile", kKernel),
      Accepted("foreach", kKernel),
      Accepted("fixed_fields",
               "which fields a checkpoint may not override; replica's optim.lr always comes "
               "from the config"),
      AcceptedAt("dtype", {"float32"}, "replica keeps Adam's moments in fp32"),
  };
  const char* parallel_layout = "a layout of the same math; replica runs data parallel only";
  const char* logging = "does not change training";

  std::vector<ClassRule> t = {
      Fields("olmo_core.script_utils.ExperimentConfig", Role::kExperiment, experiment),
      Fields("olmo_core.internal.experiment.ExperimentConfig", Role::kExperiment, experiment),
      Fields("olmo_core.nn.transformer.config.TransformerConfig", Role::kModel,
             {
                 Mapped("d_model", "model.hidden_size"),
                 Mapped("vocab_size", "model.vocab_size"),
                 Mapped("n_layers", "model.num_hidden_layers"),
                 Mapped("block", "model.* (the layer shape)"),
                 Mapped("block_overrides", "model.rope_scaling (per-layer RoPE scaling only)"),
                 Mapped("lm_head", "model.rms_norm_eps (checked equal)"),
                 Mapped("init_seed", "init.seed"),
                 Mapped("init_std", "model.initializer_range"),
                 Mapped("embedding_init_std", "(checked equal to init_std)"),
                 AcceptedAt("name", {"default"},
                            "replica implements OLMo-core's default Transformer"),
                 AcceptedAt("dtype", {"float32"}, kFp32Params),
                 AcceptedAt("init_method", {"normal"},
                            "replica initialises as InitMethod.normal (N(0, init_std) truncated "
                            "at ±3σ)"),
                 Refused("embedding_norm", "replica has no norm after the embedding"),
                 Refused("freeze_params", "replica trains every parameter"),
                 Refused("embed_scale", "replica does not scale the embedding"),
                 Refused("block_pattern",
                         "replica's layers are one block type (named block patterns are not "
                         "supported)"),
                 AcceptedAt("tie_word_embeddings", {false},
                            "tied input and output embeddings are not mapped by the importer"),
             }),
      RefuseWhole("olmo_core.nn.transformer.config.OLMoDDPModelConfig", Role::kModel,
                  "a model class replica does not implement"),
      Fields("olmo_core.nn.transformer.config.TransformerBlockConfig", Role::kBlock,
             {
                 Mapped("sequence_mixer", "model.* (attention)"),
                 Mapped("attention", "model.* (attention; the older spelling)"),
                 Mapped("layer_norm", "model.rms_norm_eps"),
                 Mapped("feed_forward", "model.intermediate_size"),
                 AcceptedAtOr("name", {"reordered_norm"},
                              "replica implements the Olmo 2/3 block (RMSNorm after attention "
                              "and after the feed-forward, TransformerBlockType.reordered_norm)",
                              "default"),
                 AcceptedAt("dropout", {0, 0.0}, kNoDropout),
                 Refused("attention_residual_alpha", "replica adds the attention output unscaled"),
                 Refused("feed_forward_residual_alpha",
                         "replica adds the feed-forward output unscaled"),
                 Refused("feed_forward_moe", "replica has no mixture-of-experts layers"),
             }),
      RefuseWhole("olmo_core.nn.ddp.block.OLMoDDPTransformerBlockConfig", Role::kBlock,
                  "a block class replica does not implement"),
      RefuseWhole("olmo_core.nn.moe.v2.nemotron.NemotronBlockConfig", Role::kBlock,
                  "a block class replica does not implement (Nemotron)"),
      Fields("olmo_core.nn.attention.AttentionConfig", Role::kAttention, attention, "attention"),
      RefuseWhole("olmo_core.nn.attention.base.SequenceMixerConfig", Role::kAttention,
                  "the abstract base class; OLMo-core never saves it"),
      RefuseWhole("olmo_core.nn.attention.recurrent.GatedDeltaNetConfig", Role::kAttention,
                  "replica's sequence mixer is softmax attention (no Gated DeltaNet)",
                  "gated_delta_net"),
      RefuseWhole("olmo_core.nn.attention.recurrent.NemotronMamba2Config", Role::kAttention,
                  "replica's sequence mixer is softmax attention (no Mamba 2)", "nemotron_mamba2"),
      RefuseWhole("olmo_core.nn.attention.kda.KimiDeltaAttentionConfig", Role::kAttention,
                  "replica's sequence mixer is softmax attention (no Kimi delta attention)",
                  "kimi_delta_attention"),
      RefuseWhole("olmo_core.nn.attention.GateConfig", Role::kGate,
                  "replica has no attention output gate"),
      Fields("olmo_core.nn.attention.SlidingWindowAttentionConfig", Role::kSlidingWindow,
             {
                 Mapped("pattern", "model.layer_types, model.sliding_window"),
                 Mapped("force_full_attention_on_first_layer", "model.layer_types"),
                 Mapped("force_full_attention_on_last_layer", "model.layer_types"),
             }),
      Fields("olmo_core.nn.rope.RoPEConfig", Role::kRope,
             {
                 Mapped("theta", "model.rope_theta"),
                 Mapped("scaling", "model.rope_scaling"),
                 AcceptedAt("name", {"default"},
                            "replica implements the default (rotate-half) RoPE"),
                 AcceptedAt("no_global_rope", {false}, "replica applies RoPE on every layer"),
                 Accepted("full_precision",
                          "replica computes RoPE tables in double and applies them in fp32"),
                 AcceptedAt("partial_rotary_factor", {1, 1.0},
                            "replica rotates the whole head dimension"),
             }),
      Fields("olmo_core.nn.rope.YaRNRoPEScalingConfig", Role::kRopeScaling,
             {
                 Mapped("factor", "model.rope_scaling.factor, attention_factor"),
                 Mapped("beta_fast", "model.rope_scaling.beta_fast"),
                 Mapped("beta_slow", "model.rope_scaling.beta_slow"),
                 Mapped("old_context_len", "model.rope_scaling.original_max_position_embeddings"),
                 Mapped("attention_rescale_factor",
                        "(older versions; checked equal to 0.1 * ln(factor) + 1)"),
             }),
      RefuseWhole("olmo_core.nn.rope.RoPEScalingConfig", Role::kRopeScaling,
                  "the abstract base class; OLMo-core never saves it"),
      RefuseWhole("olmo_core.nn.rope.RoPELlamaScalingConfig", Role::kRopeScaling,
                  "replica's RoPE is plain or YaRN (no Llama 3.1 scaling)"),
      RefuseWhole("olmo_core.nn.rope.StepwiseRoPEScalingConfig", Role::kRopeScaling,
                  "replica's RoPE is plain or YaRN (no Llama 3.1 stepwise scaling)"),
      RefuseWhole("olmo_core.nn.rope.ABFRoPEScalingConfig", Role::kRopeScaling,
                  "replica's RoPE is plain or YaRN (absolute base frequency scaling: set "
                  "rope.theta instead)"),
      RefuseWhole("olmo_core.nn.rope.PIRoPEScalingConfig", Role::kRopeScaling,
                  "replica's RoPE is plain or YaRN (no position interpolation)"),
      Fields("olmo_core.nn.layer_norm.LayerNormConfig", Role::kLayerNorm, layer_norm),
      Fields("olmo_core.nn.feed_forward.FeedForwardConfig", Role::kFeedForward,
             {
                 Mapped("hidden_size", "model.intermediate_size"),
                 AcceptedAt("name", {"default"}, "replica's feed-forward is the SwiGLU MLP"),
                 AcceptedAtOr("bias", {false}, "replica's MLP has no bias", true),
                 AcceptedAt("activation", {"silu"}, "replica's MLP is SwiGLU (silu)"),
                 AcceptedAt("dtype", {"float32"}, kFp32Params),
             }),
      RefuseWhole("olmo_core.nn.moe.v2.nemotron.NemotronMoEConfig", Role::kFeedForward,
                  "replica's feed-forward is the SwiGLU MLP (no Nemotron mixture of experts)"),
      Fields("olmo_core.nn.lm_head.LMHeadConfig", Role::kLmHead,
             {
                 Mapped("layer_norm", "model.rms_norm_eps (checked equal)"),
                 AcceptedAt("name", {"default"},
                            "replica's LM head is a plain linear layer after the final norm"),
                 AcceptedAtOr("bias", {false}, "replica's LM head has no bias", true),
                 AcceptedAt("dtype", {"float32"}, kFp32Params),
                 Accepted("loss_implementation", kKernel),
             }),
      RefuseWhole("olmo_core.nn.moe.MoEConfig", Role::kMoe, "replica has no mixture-of-experts layers"),
      RefuseWhole("olmo_core.nn.moe.moe.MoEConfig", Role::kMoe,
                  "replica has no mixture-of-experts layers"),
      // datasets
      Fields("olmo_core.data.numpy_dataset.NumpyFSLDatasetConfig", Role::kDataset,
             Join({dataset_base, fsl})),
      Fields("olmo_core.data.numpy_dataset.NumpyDatasetConfig", Role::kDataset,
             Join({dataset_base, fsl,
                   {AcceptedAt("name", {"fsl"},
                               "replica reads concatenate-and-chunk (fsl) datasets only")}})),
      Fields("olmo_core.data.numpy_dataset.NumpyPackedFSLDatasetConfig", Role::kDataset,
             Join({dataset_base, packed})),
      RefuseWhole("olmo_core.data.numpy_dataset.NumpyPaddedFSLDatasetConfig", Role::kDataset,
                  "one padded instance per document (NumpyPaddedFSLDataset) is not implemented "
                  "in replica"),
      RefuseWhole("olmo_core.data.numpy_dataset.NumpyVSLDatasetConfig", Role::kDataset,
                  "variable sequence lengths (NumpyVSLDataset) are not implemented in replica"),
      RefuseWhole("olmo_core.data.numpy_dataset.NumpyInterleavedFSLDatasetConfig", Role::kDataset,
                  "interleaved document chunks (NumpyInterleavedFSLDataset) are not implemented "
                  "in replica"),
      RefuseWhole("olmo_core.data.numpy_dataset.InstanceFilterConfig", Role::kDatasetPart,
                  "replica does not mask repetitive instances"),
      RefuseWhole("olmo_core.data.source_mixture.SourceMixtureDatasetConfig", Role::kDatasetPart,
                  "OLMo-core's source mixtures are not mapped; give the run's data_paths.txt "
                  "(--data-paths) instead"),
      Fields("olmo_core.data.tokenizer.TokenizerConfig", Role::kTokenizer,
             {
                 Mapped("vocab_size", "data.dtype (absent dataset.dtype)"),
                 Mapped("eos_token_id", "model.eos_token_id"),
                 Mapped("pad_token_id", "model.pad_token_id"),
                 Mapped("bos_token_id", "model.bos_token_id"),
                 Mapped("identifier", "data.paths ({TOKENIZER} of the mix)"),
             }),
      Fields("olmo_core.data.data_loader.NumpyDataLoaderConfig", Role::kDataLoader,
             {
                 Mapped("global_batch_size", "train.global_batch_instances"),
                 Mapped("seed", "data.seed"),
                 Accepted("num_workers",
                          "loader workers take whole batches round-robin; the order does not "
                          "depend on them"),
                 Accepted("num_threads", "loader threads; the order does not depend on them"),
                 Accepted("prefetch_factor", "loader prefetching; the order does not depend on it"),
                 Accepted("work_dir", "OLMo-core's cache of the global order; replica recomputes it"),
                 Accepted("target_device_type", "where batches are sent; the same tokens"),
                 Accepted("ignore_fingerprint_mismatch", kFingerprint),
             },
             "numpy"),
      // train module
      Fields("olmo_core.train.train_module.transformer.config.TransformerTrainModuleConfig",
             Role::kTrainModule,
             {
                 Mapped("rank_microbatch_size", "train.micro_batch_instances"),
                 Mapped("max_sequence_length", "model.max_position_embeddings"),
                 Mapped("optim", "optim.*, train.skip_step.*"),
                 Mapped("max_grad_norm", "optim.max_grad_norm"),
                 Mapped("scheduler", "optim.schedule.*"),
                 Mapped("z_loss_multiplier", "train.z_loss_multiplier"),
                 Mapped("float8_config", "(refused when enabled)"),
                 Mapped("dp_config", "parallel.sharding, compute.precision"),
                 Mapped("autocast_precision", "compute.precision"),
                 Mapped("tp_config", "(class checked)"),
                 Mapped("cp_config", "(class checked)"),
                 Mapped("pp_config", "(class checked)"),
                 Mapped("ep_config", "(class checked)"),
                 Mapped("ac_config", "(class checked)"),
                 Accepted("compile_model", kKernel),
                 Accepted("fused_loss", kKernel),
                 Accepted("compile_loss", kKernel),
                 Accepted("state_dict_save_opts", "checkpoint format options"),
                 Accepted("state_dict_load_opts", "checkpoint format options"),
                 Accepted("load_key_mapping", "checkpoint key renaming"),
                 Accepted("eval_rank_microbatch_size", "evaluation batch size"),
                 AcceptedAt("label_ignore_index", {-100}, "replica masks labels with -100"),
             }),
      RefuseWhole("olmo_core.train.train_module.transformer.config."
                  "TransformerPipelineTrainModuleConfig",
                  Role::kTrainModule, "the pipeline-parallel train module is not mapped"),
      Fields("olmo_core.optim.adamw.AdamWConfig", Role::kOptim,
             Join({adam_common, {Accepted("fused", kKernel)}}), "adamw"),
      Fields("olmo_core.optim.adamw.SkipStepAdamWConfig", Role::kOptim,
             Join({adam_common,
                   {Mapped("rolling_interval_length",
                           "train.skip_step.window, min_history (= length // 2)"),
                    Mapped("sigma_factor", "train.skip_step.sigma"),
                    AcceptedAt("step_increment_bugfix", {true},
                               "replica increments Adam's step on every applied update (the "
                               "fixed behaviour)"),
                    Accepted("fused", kKernel)}}),
             "skip_step_adamw"),
      RefuseWhole("olmo_core.optim.adam.AdamConfig", Role::kOptim,
                  "replica's optimizer is AdamW (decoupled weight decay), not Adam", "adam"),
      RefuseWhole("olmo_core.optim.lion.LionConfig", Role::kOptim, "replica has no Lion optimizer",
                  "lion"),
      RefuseWhole("olmo_core.optim.lion.SkipStepLionConfig", Role::kOptim,
                  "replica has no Lion optimizer", "skip_step_lion"),
      RefuseWhole("olmo_core.optim.muon.MuonConfig", Role::kOptim, "replica has no Muon optimizer",
                  "muon"),
      RefuseWhole("olmo_core.optim.muon.NorMuonConfig", Role::kOptim,
                  "replica has no NorMuon optimizer", "nor_muon"),
      RefuseWhole("olmo_core.optim.dion.DionConfig", Role::kOptim, "replica has no Dion optimizer",
                  "dion"),
      RefuseWhole("olmo_core.optim.noop.NoOpConfig", Role::kOptim,
                  "replica always applies its optimizer's updates", "noop"),
      RefuseWhole("olmo_core.optim.config.OptimConfig", Role::kOptim,
                  "the abstract base class; OLMo-core never saves it"),
      RefuseWhole("olmo_core.optim.config.MatrixAwareOptimConfig", Role::kOptim,
                  "the abstract base class; OLMo-core never saves it"),
      Fields("olmo_core.optim.config.OptimGroupOverride", Role::kGroupOverride,
             {Mapped("params", "optim.no_decay (OLMo-core names -> HF names)"),
              Mapped("opts", "optim.no_decay (weight_decay 0 only)")}),
      // schedulers
      Fields("olmo_core.optim.scheduler.CosWithWarmup", Role::kScheduler,
             Join({sched_base, warmup, decay_to}), "cos_with_warmup"),
      Fields("olmo_core.optim.scheduler.HalfCosWithWarmup", Role::kScheduler,
             Join({sched_base, warmup, decay_to}), "half_cos_with_warmup"),
      Fields("olmo_core.optim.scheduler.LinearWithWarmup", Role::kScheduler,
             Join({sched_base, warmup, decay_to}), "linear_with_warmup"),
      Fields("olmo_core.optim.scheduler.ConstantWithWarmup", Role::kScheduler,
             Join({sched_base, warmup}), "constant_with_warmup"),
      Fields("olmo_core.optim.scheduler.ConstantScheduler", Role::kScheduler, sched_base,
             "constant"),
      Fields("olmo_core.optim.scheduler.WSD", Role::kScheduler,
             Join({sched_base, warmup,
                   {Mapped("decay", "optim.schedule.decay_steps"),
                    Mapped("decay_steps", "optim.schedule.decay_steps (the older spelling)"),
                    Mapped("decay_fraction", "optim.schedule.decay_steps = round(t_max * f)"),
                    Mapped("decay_min_lr", "optim.schedule.decay_min_lr")}}),
             "wsd"),
      RefuseWhole("olmo_core.optim.scheduler.Scheduler", Role::kScheduler,
                  "the abstract base class; OLMo-core never saves it"),
      RefuseWhole("olmo_core.optim.scheduler.InvSqrtWithWarmup", Role::kScheduler,
                  "replica has no inverse-square-root schedule", "inv_sqrt_with_warmup"),
      RefuseWhole("olmo_core.optim.scheduler.SequentialScheduler", Role::kScheduler,
                  "replica has no sequence of schedulers", "sequential"),
      RefuseWhole("olmo_core.optim.scheduler.CosWithWarmupAndLinearDecay", Role::kScheduler,
                  "replica has no cosine-then-linear-decay schedule",
                  "cos_with_warmup_and_linear_decay"),
      RefuseWhole("olmo_core.optim.scheduler.PowerLR", Role::kScheduler,
                  "replica has no power-law schedule", "power_lr"),
      RefuseWhole("olmo_core.optim.scheduler.ComposableScheduler", Role::kScheduler,
                  "replica has no composable schedule", "composable"),
      RefuseWhole("olmo_core.optim.scheduler.WSDS", Role::kScheduler,
                  "replica has no repeated warmup-stable-decay schedule", "wsds"),
      RefuseWhole("olmo_core.optim.scheduler.ExponentialScheduler", Role::kScheduler,
                  "replica has no exponential schedule", "exponential"),
      // trainer
      Fields("olmo_core.train.config.TrainerConfig", Role::kTrainer,
             {
                 Mapped("load_path", "init.from_checkpoint"),
                 Mapped("load_strategy", "init.from_checkpoint (never: none)"),
                 Mapped("load_trainer_state", "init.reset_step"),
                 Mapped("load_optim_state", "init.load_optimizer"),
                 Mapped("max_duration", "optim.schedule.t_max, train.max_steps"),
                 Mapped("hard_stop", "train.max_steps"),
                 Mapped("callbacks", "checkpoint.interval (and the callbacks' classes)"),
                 Mapped("checkpointer", "(class checked)"),
                 Accepted("save_folder", "replica writes to --run-dir"),
                 Accepted("work_dir", "OLMo-core's scratch directory"),
                 Accepted("save_overwrite", "replica never overwrites a checkpoint in place"),
                 Accepted("device", "replica trains on the CPU"),
                 Accepted("metrics_collect_interval", "replica records metrics every step"),
                 Accepted("cancel_check_interval", "job cancellation polling"),
                 Accepted("async_bookkeeping", "logging thread"),
                 Accepted("bookkeeping_soft_timeout", "logging thread"),
                 Accepted("no_checkpoints", "checkpoints do not change training"),
                 Accepted("no_evals", "evaluation does not change training"),
                 Accepted("checkpoints_to_eval", "evaluation does not change training"),
                 Refused("steps_to_skip",
                         "OLMo-core skips the batches of these step ranges; replica trains on "
                         "every batch"),
             }),
      Fields("olmo_core.train.common.Duration", Role::kDuration,
             {Mapped("value", "train.max_steps, optim.schedule.t_max"),
              Mapped("unit", "train.max_steps, optim.schedule.t_max")}),
      Fields("olmo_core.train.callbacks.checkpointer.CheckpointerCallback", Role::kCallback,
             {
                 Mapped("save_interval", "checkpoint.interval"),
                 Mapped("enabled", "checkpoint.interval"),
                 Accepted("ephemeral_save_interval",
                          "replica keeps checkpoint.keep newest checkpoints"),
                 Accepted("ephemeral_cooldown", "when ephemeral checkpoints are written"),
                 Accepted("save_async", "replica writes checkpoints in the background already"),
                 Accepted("pre_train_checkpoint", "step-0 checkpoint"),
                 Accepted("remove", "checkpoint retention policy (see checkpoint.keep)"),
                 Accepted("max_checkpoints", "checkpoint retention (see checkpoint.keep)"),
                 Accepted("fixed_steps", "extra checkpoint steps"),
             }),
      AcceptWhole("olmo_core.train.callbacks.list_checkpointer.ListCheckpointerCallback",
                  Role::kCallback, "checkpoints at listed steps; checkpoints do not change training"),
      AcceptWhole("olmo_core.train.callbacks.config_saver.ConfigSaverCallback", Role::kCallback,
                  "replica writes config.yaml into every run directory itself"),
      AcceptWhole("olmo_core.train.callbacks.wandb.WandBCallback", Role::kCallback,
                  "experiment logging (Weights & Biases); replica writes metrics.jsonl"),
      AcceptWhole("olmo_core.train.callbacks.comet.CometCallback", Role::kCallback,
                  "experiment logging (Comet); replica writes metrics.jsonl"),
      AcceptWhole("olmo_core.train.callbacks.monkey_patcher.MonkeyPatcherCallback",
                  Role::kCallback, "patches PyTorch internals; nothing to patch in replica"),
      AcceptWhole("olmo_core.train.callbacks.evaluator_callback.LMEvaluatorCallbackConfig",
                  Role::kCallback,
                  "in-loop perplexity evaluation does not change training; replica evaluates the "
                  "sets named in eval.sets"),
      AcceptWhole("olmo_core.train.callbacks.evaluator_callback.DownstreamEvaluatorCallbackConfig",
                  Role::kCallback, "downstream evaluation does not change training (replica eval)"),
      AcceptWhole("olmo_core.train.callbacks.evaluator_callback.EvaluatorCallback",
                  Role::kCallback, "evaluation does not change training"),
      AcceptWhole("olmo_core.train.callbacks.gpu_memory_monitor.GPUMemoryMonitorCallback",
                  Role::kCallback, "GPU memory logging"),
      AcceptWhole("olmo_core.train.callbacks.garbage_collector.GarbageCollectorCallback",
                  Role::kCallback, "Python garbage collection schedule"),
      AcceptWhole("olmo_core.train.callbacks.speed_monitor.SpeedMonitorCallback", Role::kCallback,
                  "throughput logging; replica logs step time and MFU"),
      AcceptWhole("olmo_core.train.callbacks.profiler.ProfilerCallback", Role::kCallback,
                  "PyTorch profiler"),
      AcceptWhole("olmo_core.train.callbacks.profiler.NvidiaProfilerCallback", Role::kCallback,
                  "NVIDIA profiler ranges"),
      AcceptWhole("olmo_core.train.callbacks.profiler.TorchMemoryHistoryCallback",
                  Role::kCallback, "CUDA memory history recording"),
      AcceptWhole("olmo_core.train.callbacks.beaker.BeakerCallback", Role::kCallback,
                  "Beaker bookkeeping"),
      AcceptWhole("olmo_core.train.callbacks.slack_notifier.SlackNotifierCallback",
                  Role::kCallback, "Slack notifications"),
      AcceptWhole("olmo_core.train.callbacks.console_logger.ConsoleLoggerCallback",
                  Role::kCallback, "console logging"),
      AcceptWhole("olmo_core.train.callbacks.stability_monitor.StabilityMonitorCallback",
                  Role::kCallback, "records loss and grad-norm spike metrics; changes nothing"),
      AcceptWhole("olmo_core.train.callbacks.gap_monitor.GAPMonitorCallback", Role::kCallback,
                  "activation and gradient monitoring"),
      AcceptWhole("olmo_core.train.callbacks.metric_saver.MetricSaverCallback", Role::kCallback,
                  "saves metrics to files; replica writes metrics.jsonl"),
      AcceptWhole("olmo_core.train.callbacks.hf_converter.HFConverterCallback", Role::kCallback,
                  "converts checkpoints to Hugging Face format (replica convert)"),
      AcceptWhole("olmo_core.train.callbacks.model_merger.ModelMergeCallback", Role::kCallback,
                  "writes averaged weights as extra checkpoints; the trained model is unchanged"),
      AcceptWhole(
          "olmo_core.train.callbacks.checkpoint_ready_notifier.CheckpointReadyNotifierCallback",
          Role::kCallback, "notifies other jobs of new checkpoints"),
      RefuseWhole("olmo_core.train.callbacks.batch_size_scheduler.BatchSizeSchedulerCallback",
                  Role::kCallback,
                  "changes the global batch size during training; replica's batch size is fixed"),
      RefuseWhole(
          "olmo_core.train.callbacks.sequence_length_scheduler.SequenceLengthSchedulerCallback",
          Role::kCallback,
          "changes the sequence length during training; replica's sequence length is fixed"),
      RefuseWhole("olmo_core.train.callbacks.callback.Callback", Role::kCallback,
                  "the base class; it does nothing, but replica does not guess a subclass"),
      RefuseWhole("olmo_core.train.callbacks.callback.CallbackConfig", Role::kCallback,
                  "the abstract base class; OLMo-core never saves it"),
      AcceptWhole("olmo_core.train.checkpoint.CheckpointerConfig", Role::kCheckpointer,
                  "checkpoint writer settings (threads, format); replica writes its own "
                  "checkpoints"),
      // parallelism and precision
      Fields("olmo_core.train.train_module.transformer.config.TransformerDataParallelConfig",
             Role::kDataParallel,
             {
                 Mapped("param_dtype", "compute.precision"),
                 Mapped("name", "parallel.sharding (zero3)"),
                 AcceptedAt("reduce_dtype", {"float32"},
                            "replica reduces gradients over ranks in fp32"),
                 AcceptedAt("reduce_grads_in_fp32", {true},
                            "replica reduces gradients over ranks in fp32"),
                 AcceptedAt("accumulate_grads_in_fp32", {true},
                            "replica accumulates micro-batch gradients in fp32"),
                 Accepted("num_replicas", kLayout),
                 Accepted("shard_degree", kLayout),
                 Accepted("wrapping_strategy", kLayout),
                 Accepted("prefetch_factor", kLayout),
                 Accepted("bucket_cap_mb", kLayout),
                 Accepted("use_reduce_scatter", kLayout),
                 Accepted("only_allreduce_last_microbatch",
                          "when gradients are reduced over ranks; the sum is the same"),
             }),
      Fields("olmo_core.train.train_module.transformer.config.TransformerContextParallelConfig",
             Role::kContextParallel,
             {
                 Mapped("degree", "parallel.context_parallel_degree"),
                 Accepted("ring", kContextLayout),
                 Accepted("uly", kContextLayout),
                 // the same settings as fields of the class itself, as older OLMo-core wrote them
                 Accepted("load_balancer", kContextLayout),
                 Accepted("head_stride", kContextLayout),
             }),
      AcceptWhole("olmo_core.train.train_module.transformer.config.TransformerTensorParallelConfig",
                  Role::kOtherParallel, parallel_layout),
      AcceptWhole(
          "olmo_core.train.train_module.transformer.config.TransformerPipelineParallelConfig",
          Role::kOtherParallel, parallel_layout),
      AcceptWhole("olmo_core.train.train_module.transformer.config.TransformerExpertParallelConfig",
                  Role::kOtherParallel, "expert parallelism (MoE layout); no experts in replica's model"),
      AcceptWhole(
          "olmo_core.train.train_module.transformer.config.TransformerActivationCheckpointingConfig",
          Role::kActivationCheckpointing,
          "activation checkpointing recomputes activations in backward; the math is unchanged"),
      Fields("olmo_core.float8.Float8Config", Role::kFloat8,
             {
                 Mapped("enabled", "(refused when true, OLMo-core's default)"),
                 Accepted("ao", "float8 settings, used only when enabled (refused then)"),
                 Accepted("ao_recipe", "float8 settings, used only when enabled (refused then)"),
                 Accepted("ao_mx", "float8 settings, used only when enabled (refused then)"),
                 Accepted("modules_to_ignore",
                          "float8 settings, used only when enabled (refused then)"),
             }),
      AcceptWhole("olmo_core.launch.beaker.BeakerLaunchConfig", Role::kLaunch,
                  "cluster launch settings (Beaker)"),
  };
  (void)logging;
  return t;
}

const char* UseName(Use u) {
  switch (u) {
    case Use::kMapped: return "mapped";
    case Use::kAccepted: return "accepted";
    case Use::kRefused: return "refused";
  }
  return "?";
}

const char* WholeName(Whole w) {
  switch (w) {
    case Whole::kFields: return "fields";
    case Whole::kAccepted: return "accepted";
    case Whole::kRefused: return "refused";
    case Whole::kRefusedButRead: return "refused (fields read for plans)";
  }
  return "?";
}

}  // namespace

const char* RoleName(Role r) {
  switch (r) {
    case Role::kExperiment: return "an experiment config";
    case Role::kModel: return "a model config";
    case Role::kBlock: return "a transformer block config";
    case Role::kAttention: return "an attention (sequence mixer) config";
    case Role::kSlidingWindow: return "a sliding-window config";
    case Role::kRope: return "a RoPE config";
    case Role::kRopeScaling: return "a RoPE scaling config";
    case Role::kLayerNorm: return "a layer norm config";
    case Role::kFeedForward: return "a feed-forward config";
    case Role::kLmHead: return "an LM head config";
    case Role::kMoe: return "a mixture-of-experts config";
    case Role::kGate: return "an attention gate config";
    case Role::kDataset: return "a dataset config";
    case Role::kTokenizer: return "a tokenizer config";
    case Role::kDataLoader: return "a data loader config";
    case Role::kTrainModule: return "a train module config";
    case Role::kOptim: return "an optimizer config";
    case Role::kGroupOverride: return "an optimizer group override";
    case Role::kScheduler: return "a scheduler";
    case Role::kTrainer: return "a trainer config";
    case Role::kDuration: return "a duration";
    case Role::kCallback: return "a trainer callback";
    case Role::kDataParallel: return "a data-parallel config";
    case Role::kOtherParallel: return "a parallelism config";
    case Role::kContextParallel: return "a context-parallel config";
    case Role::kFloat8: return "a float8 config";
    case Role::kActivationCheckpointing: return "an activation-checkpointing config";
    case Role::kLaunch: return "a launch config";
    case Role::kCheckpointer: return "a checkpointer config";
    case Role::kDatasetPart: return "a dataset option";
  }
  return "?";
}

const FieldRule* ClassRule::Field(const std::string& field) const {
  for (const FieldRule& f : fields)
    if (f.name == field) return &f;
  return nullptr;
}

const std::vector<ClassRule>& ClassTable() {
  static const std::vector<ClassRule> t = Build();
  return t;
}

const ClassRule* FindClass(const std::string& name) {
  static const std::map<std::string, const ClassRule*> index = [] {
    std::map<std::string, const ClassRule*> m;
    for (const ClassRule& c : ClassTable()) m[c.name] = &c;
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

json FieldTableJson() {
  json classes = json::object();
  for (const ClassRule& c : ClassTable()) {
    json fields = json::object();
    for (const FieldRule& f : c.fields) {
      json e = {{"use", UseName(f.use)}, {"text", f.text}};
      if (!f.at.empty()) {
        e["at"] = f.at;
        e["otherwise"] = f.otherwise;
        if (!f.absent.is_null()) e["absent"] = f.absent;
      }
      fields[f.name] = e;
    }
    classes[c.name] = {{"role", RoleName(c.role)},
                       {"type", c.type},
                       {"whole", WholeName(c.whole)},
                       {"reason", c.reason},
                       {"fields", fields}};
  }
  return {{"classes", classes}};
}

}  // namespace replica::olmo_core

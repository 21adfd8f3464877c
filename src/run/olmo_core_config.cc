#include "run/olmo_core_config.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "run/olmo_core_yarn.h"

namespace replica {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kClassKey = "_CLASS_";

// --- the class registry -------------------------------------------------------------------------

// Where in the config a class may appear; a known class in the wrong place is refused.
enum class Role {
  kExperiment,
  kModel,
  kBlock,
  kAttention,
  kSlidingWindow,
  kRope,
  kRopeScaling,
  kLayerNorm,
  kFeedForward,
  kLmHead,
  kDataset,
  kTokenizer,
  kDataLoader,
  kTrainModule,
  kOptim,
  kGroupOverride,
  kScheduler,
  kTrainer,
  kDuration,
  kCallback,
  kDataParallel,
  kOtherParallel,
  kFloat8,
  kActivationCheckpointing,
  kLaunch,
  kCheckpointer
};

const char* RoleName(Role r) {
  switch (r) {
    case Role::kExperiment:
      return "an experiment config";
    case Role::kModel:
      return "a model config";
    case Role::kBlock:
      return "a transformer block config";
    case Role::kAttention:
      return "an attention (sequence mixer) config";
    case Role::kSlidingWindow:
      return "a sliding-window config";
    case Role::kRope:
      return "a RoPE config";
    case Role::kRopeScaling:
      return "a RoPE scaling config";
    case Role::kLayerNorm:
      return "a layer norm config";
    case Role::kFeedForward:
      return "a feed-forward config";
    case Role::kLmHead:
      return "an LM head config";
    case Role::kDataset:
      return "a dataset config";
    case Role::kTokenizer:
      return "a tokenizer config";
    case Role::kDataLoader:
      return "a data loader config";
    case Role::kTrainModule:
      return "a train module config";
    case Role::kOptim:
      return "an optimizer config";
    case Role::kGroupOverride:
      return "an optimizer group override";
    case Role::kScheduler:
      return "a scheduler";
    case Role::kTrainer:
      return "a trainer config";
    case Role::kDuration:
      return "a duration";
    case Role::kCallback:
      return "a trainer callback";
    case Role::kDataParallel:
      return "a data-parallel config";
    case Role::kOtherParallel:
      return "a parallelism config";
    case Role::kFloat8:
      return "a float8 config";
    case Role::kActivationCheckpointing:
      return "an activation-checkpointing config";
    case Role::kLaunch:
      return "a launch config";
    case Role::kCheckpointer:
      return "a checkpointer config";
  }
  return "?";
}

struct ClassEntry {
  Role role;
  // For classes taken as a whole: a non-empty reason ignores (or refuses) the object and
  // everything inside it; empty means a handler reads it field by field.
  const char* ignore_reason = "";
  const char* refuse_reason = "";
};

const std::map<std::string, ClassEntry>& Registry() {
  static const std::map<std::string, ClassEntry> r = {
      {"olmo_core.script_utils.ExperimentConfig", {Role::kExperiment}},
      {"olmo_core.internal.experiment.ExperimentConfig", {Role::kExperiment}},
      {"olmo_core.nn.transformer.config.TransformerConfig", {Role::kModel}},
      {"olmo_core.nn.transformer.config.TransformerBlockConfig", {Role::kBlock}},
      {"olmo_core.nn.attention.AttentionConfig", {Role::kAttention}},
      {"olmo_core.nn.attention.SlidingWindowAttentionConfig", {Role::kSlidingWindow}},
      {"olmo_core.nn.rope.RoPEConfig", {Role::kRope}},
      {"olmo_core.nn.rope.YaRNRoPEScalingConfig", {Role::kRopeScaling}},
      {"olmo_core.nn.rope.RoPELlamaScalingConfig",
       {Role::kRopeScaling, "", "replica's RoPE is plain or YaRN (no Llama 3.1 scaling)"}},
      {"olmo_core.nn.rope.StepwiseRoPEScalingConfig",
       {Role::kRopeScaling, "", "replica's RoPE is plain or YaRN (no Llama 3.1 stepwise scaling)"}},
      {"olmo_core.nn.rope.ABFRoPEScalingConfig",
       {Role::kRopeScaling, "",
        "replica's RoPE is plain or YaRN (absolute base frequency scaling: set rope.theta instead)"}},
      {"olmo_core.nn.rope.PIRoPEScalingConfig",
       {Role::kRopeScaling, "", "replica's RoPE is plain or YaRN (no position interpolation)"}},
      {"olmo_core.nn.layer_norm.LayerNormConfig", {Role::kLayerNorm}},
      {"olmo_core.nn.feed_forward.FeedForwardConfig", {Role::kFeedForward}},
      {"olmo_core.nn.lm_head.LMHeadConfig", {Role::kLmHead}},
      {"olmo_core.data.numpy_dataset.NumpyFSLDatasetConfig", {Role::kDataset}},
      {"olmo_core.data.numpy_dataset.NumpyDatasetConfig", {Role::kDataset}},
      {"olmo_core.data.numpy_dataset.NumpyPackedFSLDatasetConfig", {Role::kDataset}},
      {"olmo_core.data.numpy_dataset.NumpyPaddedFSLDatasetConfig",
       {Role::kDataset, "",
        "one padded instance per document (NumpyPaddedFSLDataset) is not "
        "implemented in replica"}},
      {"olmo_core.data.numpy_dataset.NumpyVSLDatasetConfig",
       {Role::kDataset, "",
        "variable sequence lengths (NumpyVSLDataset) are not implemented in "
        "replica"}},
      {"olmo_core.data.tokenizer.TokenizerConfig", {Role::kTokenizer}},
      {"olmo_core.data.data_loader.NumpyDataLoaderConfig", {Role::kDataLoader}},
      {"olmo_core.train.train_module.transformer.config.TransformerTrainModuleConfig",
       {Role::kTrainModule}},
      {"olmo_core.optim.adamw.SkipStepAdamWConfig", {Role::kOptim}},
      {"olmo_core.optim.adamw.AdamWConfig", {Role::kOptim}},
      {"olmo_core.optim.config.OptimGroupOverride", {Role::kGroupOverride}},
      {"olmo_core.optim.scheduler.CosWithWarmup", {Role::kScheduler}},
      {"olmo_core.optim.scheduler.HalfCosWithWarmup", {Role::kScheduler}},
      {"olmo_core.optim.scheduler.LinearWithWarmup", {Role::kScheduler}},
      {"olmo_core.optim.scheduler.ConstantWithWarmup", {Role::kScheduler}},
      {"olmo_core.optim.scheduler.ConstantScheduler", {Role::kScheduler}},
      {"olmo_core.optim.scheduler.WSD", {Role::kScheduler}},
      {"olmo_core.optim.scheduler.InvSqrtWithWarmup",
       {Role::kScheduler, "", "replica has no inverse-square-root schedule"}},
      {"olmo_core.optim.scheduler.SequentialScheduler",
       {Role::kScheduler, "", "replica has no sequence of schedulers"}},
      {"olmo_core.optim.scheduler.CosWithWarmupAndLinearDecay",
       {Role::kScheduler, "", "replica has no cosine-then-linear-decay schedule"}},
      {"olmo_core.train.config.TrainerConfig", {Role::kTrainer}},
      {"olmo_core.train.common.Duration", {Role::kDuration}},
      {"olmo_core.train.callbacks.checkpointer.CheckpointerCallback", {Role::kCallback}},
      {"olmo_core.train.callbacks.config_saver.ConfigSaverCallback",
       {Role::kCallback, "replica writes config.yaml into every run directory itself"}},
      {"olmo_core.train.callbacks.wandb.WandBCallback",
       {Role::kCallback, "experiment logging (Weights & Biases); replica writes metrics.jsonl"}},
      {"olmo_core.train.callbacks.comet.CometCallback",
       {Role::kCallback, "experiment logging (Comet); replica writes metrics.jsonl"}},
      {"olmo_core.train.callbacks.monkey_patcher.MonkeyPatcherCallback",
       {Role::kCallback, "patches PyTorch internals; nothing to patch in replica"}},
      {"olmo_core.train.callbacks.evaluator_callback.LMEvaluatorCallbackConfig",
       {Role::kCallback,
        "in-loop perplexity evaluation does not change training; replica "
        "evaluates the sets named in eval.sets"}},
      {"olmo_core.train.callbacks.evaluator_callback.DownstreamEvaluatorCallbackConfig",
       {Role::kCallback, "downstream evaluation does not change training (replica eval)"}},
      {"olmo_core.train.callbacks.gpu_memory_monitor.GPUMemoryMonitorCallback",
       {Role::kCallback, "GPU memory logging"}},
      {"olmo_core.train.callbacks.garbage_collector.GarbageCollectorCallback",
       {Role::kCallback, "Python garbage collection schedule"}},
      {"olmo_core.train.callbacks.speed_monitor.SpeedMonitorCallback",
       {Role::kCallback, "throughput logging; replica logs step time and MFU"}},
      {"olmo_core.train.callbacks.profiler.ProfilerCallback",
       {Role::kCallback, "PyTorch profiler"}},
      {"olmo_core.train.callbacks.beaker.BeakerCallback", {Role::kCallback, "Beaker bookkeeping"}},
      {"olmo_core.train.callbacks.slack_notifier.SlackNotifierCallback",
       {Role::kCallback, "Slack notifications"}},
      {"olmo_core.train.callbacks.console_logger.ConsoleLoggerCallback",
       {Role::kCallback, "console logging"}},
      {"olmo_core.train.checkpoint.CheckpointerConfig",
       {Role::kCheckpointer,
        "checkpoint writer settings (threads, format); replica writes its "
        "own checkpoints"}},
      {"olmo_core.train.train_module.transformer.config.TransformerDataParallelConfig",
       {Role::kDataParallel}},
      {"olmo_core.train.train_module.transformer.config.TransformerContextParallelConfig",
       {Role::kOtherParallel,
        "context parallelism splits each sequence over ranks; replica "
        "computes the same attention over the whole sequence on one rank"}},
      {"olmo_core.train.train_module.transformer.config.TransformerTensorParallelConfig",
       {Role::kOtherParallel,
        "tensor parallelism is a layout of the same math; replica runs "
        "data parallel only"}},
      {"olmo_core.train.train_module.transformer.config.TransformerPipelineParallelConfig",
       {Role::kOtherParallel,
        "pipeline parallelism is a layout of the same math; replica runs "
        "data parallel only"}},
      {"olmo_core.train.train_module.transformer.config.TransformerExpertParallelConfig",
       {Role::kOtherParallel, "expert parallelism (MoE layout); no experts in replica's model"}},
      {"olmo_core.train.train_module.transformer.config.TransformerActivationCheckpointingConfig",
       {Role::kActivationCheckpointing,
        "activation checkpointing recomputes activations in backward; the math is unchanged"}},
      {"olmo_core.float8.Float8Config", {Role::kFloat8}},
      {"olmo_core.launch.beaker.BeakerLaunchConfig",
       {Role::kLaunch, "cluster launch settings (Beaker)"}},
  };
  return r;
}

// --- the import state ---------------------------------------------------------------------------

template <typename T>
struct Src {
  T value{};
  std::string path;  // JSON path it came from ("" = replica's default)
  bool set = false;
  void Set(T v, std::string p) {
    value = std::move(v);
    path = std::move(p);
    set = true;
  }
};

struct Window {  // OLMo-core SlidingWindowAttentionConfig
  std::vector<int64_t> pattern;
  bool first_full = false, last_full = false;
  std::string path;
  // OLMo-core _get_window_size: -1 = full attention.
  int64_t At(int64_t layer, int64_t n_layers) const {
    if (first_full && layer == 0) return -1;
    if (last_full && layer == n_layers - 1) return -1;
    int64_t i = first_full ? layer - 1 : layer;
    const int64_t n = static_cast<int64_t>(pattern.size());
    return pattern[static_cast<size_t>(((i % n) + n) % n)];
  }
};

struct Block {  // one TransformerBlockConfig, as far as replica's model can express it
  std::string path;
  Src<int64_t> n_heads, n_kv_heads, head_dim, ffn_hidden;
  Src<double> norm_eps, qk_norm_eps, rope_theta;
  std::optional<Window> window;
  bool scaling_present = false;        // rope.scaling given (YaRN or not, accepted or refused)
  std::optional<OlmoCoreYarn> yarn;    // rope.scaling, when it is an accepted YaRN config
  std::string yarn_path;               // its JSON path
  std::set<std::string> yarn_defaults;  // its fields that were absent (dataclass defaults)
  json canonical;  // the block without the RoPE scaling, for comparing overrides
};

struct Schedule {
  std::string cls, path;
  std::string type;  // replica schedule type
  Src<int64_t> warmup, t_max, decay;
  Src<double> warmup_fraction, alpha_f, warmup_min_lr, decay_fraction, decay_min_lr;
};

struct Duration {
  int64_t value = 0;
  std::string unit, path;
  bool set = false;
};

struct Recipe {
  // model
  Src<int64_t> d_model, vocab_size, n_layers, init_seed;
  Src<double> init_std, final_norm_eps;
  std::optional<Block> block;
  std::map<int64_t, Block> overrides;
  // dataset
  Src<int64_t> seq_len, max_target_seq_len;
  Src<std::string> dtype;
  Src<int64_t> tok_vocab, eos_id, pad_id, bos_id;
  Src<std::string> tok_identifier;
  std::vector<std::string> data_paths;
  std::string data_paths_from;  // JSON path or file the list came from
  bool data_resolved = false;
  // data loader
  Src<int64_t> global_batch_tokens, data_seed;
  // train module
  Src<int64_t> rank_microbatch_tokens, max_sequence_length;
  Src<double> lr, eps, weight_decay, max_grad_norm, z_loss;
  Src<std::vector<double>> betas;
  Src<std::vector<std::string>> no_decay;
  bool skip_step = false;
  std::string data_parallel_path;  // train_module.dp_config, when the recipe shards over ranks
  Src<int64_t> rolling_interval;
  Src<double> sigma;
  std::optional<Schedule> schedule;
  // trainer
  Duration max_duration, hard_stop;
  Src<std::string> load_path;
  Src<bool> load_trainer_state, load_optim_state;
  bool load_never = false;
  Src<int64_t> save_interval;
};

std::string JoinPath(const std::string& a, const std::string& b) {
  return a.empty() ? b : a + "." + b;
}

class Importer;

// One JSON object being read: every key must be taken (mapped or ignored) before Finish(), or it
// is refused as an unknown field of its class.
class Obj {
 public:
  Obj(Importer& im, const json& j, std::string path, std::string cls)
      : im_(im), j_(j), path_(std::move(path)), cls_(std::move(cls)) {}
  const std::string& path() const { return path_; }
  const std::string& cls() const { return cls_; }
  std::string At(const std::string& key) const { return JoinPath(path_, key); }

  // The value of `key` (marked read), or nullptr when absent or null.
  const json* Take(const std::string& key) {
    taken_.insert(key);
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool Has(const std::string& key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  std::optional<int64_t> Int(const std::string& key);
  std::optional<double> Num(const std::string& key);
  std::optional<bool> Bool(const std::string& key);
  std::optional<std::string> Str(const std::string& key);
  // Present and non-null: recorded as ignored with `reason`.
  void Ignore(const std::string& key, const std::string& reason);
  // Present and not one of `allowed` (compared as JSON): refused with `reason`.
  void Allow(const std::string& key, std::initializer_list<json> allowed,
             const std::string& reason);
  void Finish();

 private:
  Importer& im_;
  const json& j_;
  std::string path_, cls_;
  std::set<std::string> taken_{kClassKey, "type"};
};

class Importer {
 public:
  Importer(const OlmoCoreImportOptions& o, std::string source)
      : opt_(o), source_(std::move(source)) {}

  OlmoCoreImport Run(const json& root);

  void Refuse(const std::string& path, const std::string& reason) {
    out_.refused.push_back({path, reason, ""});
  }
  void Ignored(const std::string& path, const std::string& reason) {
    out_.ignored.push_back({path, reason, ""});
  }
  void Unresolved(const std::string& path, const std::string& reason, const std::string& key) {
    out_.unresolved.push_back({path, reason, key});
  }

 private:
  // The class of `j` at `path` if it is a known class of `role`; "" (after a refusal or an
  // ignore) when the caller has nothing to read.
  std::string Dispatch(const json& j, const std::string& path, Role role);

  void Experiment(const json& j, const std::string& path);
  void Model(const json& j, const std::string& path);
  std::optional<Block> ReadBlock(const json& j, const std::string& path);
  void ReadAttention(const json& j, const std::string& path, Block& b);
  void ReadYarn(const json& j, const std::string& path, Block& b);
  void MapRopeScaling(const std::vector<int64_t>& windows, const Block& base, int64_t head_dim,
                      const std::function<void(std::string, std::string, std::string)>& add);
  std::optional<double> ReadLayerNorm(const json& j, const std::string& path);
  void Dataset(const json& j, const std::string& path);
  void Tokenizer(const json& j, const std::string& path);
  void DataLoader(const json& j, const std::string& path);
  void TrainModule(const json& j, const std::string& path);
  void Optim(const json& j, const std::string& path);
  void ReadSchedule(const json& j, const std::string& path);
  void Trainer(const json& j, const std::string& path);
  Duration ReadDuration(const json& j, const std::string& path);
  void Callback(const json& j, const std::string& path);
  void DataParallel(const json& j, const std::string& path);
  void Float8(const json& j, const std::string& path);

  std::vector<std::string> ResolveMix(const std::string& mix, const std::string& mix_path,
                                      const std::string& base_dir);
  std::string MapPath(const std::string& p) const;
  std::string EmitYaml();

  const OlmoCoreImportOptions& opt_;
  std::string source_;
  Recipe r_;
  OlmoCoreImport out_;
  std::string mix_label_;
};

std::optional<int64_t> Obj::Int(const std::string& key) {
  const json* v = Take(key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.2e18)
      return static_cast<int64_t>(d);
  }
  im_.Refuse(At(key), fmt::format("expected an integer, got {}", v->dump()));
  return std::nullopt;
}

std::optional<double> Obj::Num(const std::string& key) {
  const json* v = Take(key);
  if (!v) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  im_.Refuse(At(key), fmt::format("expected a number, got {}", v->dump()));
  return std::nullopt;
}

std::optional<bool> Obj::Bool(const std::string& key) {
  const json* v = Take(key);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  im_.Refuse(At(key), fmt::format("expected true or false, got {}", v->dump()));
  return std::nullopt;
}

std::optional<std::string> Obj::Str(const std::string& key) {
  const json* v = Take(key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  im_.Refuse(At(key), fmt::format("expected a string, got {}", v->dump()));
  return std::nullopt;
}

void Obj::Ignore(const std::string& key, const std::string& reason) {
  if (Take(key)) im_.Ignored(At(key), reason);
}

void Obj::Allow(const std::string& key, std::initializer_list<json> allowed,
                const std::string& reason) {
  const json* v = Take(key);
  if (!v) return;
  for (const json& a : allowed)
    if (*v == a) return;
  im_.Refuse(At(key), fmt::format("{} is not supported: {}", v->dump(), reason));
}

void Obj::Finish() {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (taken_.count(it.key())) continue;
    im_.Refuse(At(it.key()), fmt::format("unknown field of {}; replica does not know what it "
                                         "changes, so it is refused rather than guessed",
                                         cls_));
  }
}

std::string ShortClass(const std::string& cls) {
  return cls.substr(cls.rfind('.') + 1);
}

std::string Importer::Dispatch(const json& j, const std::string& path, Role role) {
  if (!j.is_object() || !j.contains(kClassKey) || !j[kClassKey].is_string()) {
    Refuse(path, fmt::format("expected {} (a JSON object with \"_CLASS_\"), got {}", RoleName(role),
                             j.is_object() ? "an object without \"_CLASS_\"" : j.dump()));
    return "";
  }
  const std::string cls = j[kClassKey].get<std::string>();
  auto it = Registry().find(cls);
  if (it == Registry().end()) {
    Refuse(JoinPath(path, kClassKey),
           fmt::format("unknown class '{}' where {} is expected; replica maps only the OLMo-core "
                       "classes it knows (docs/olmo-core.md) and does not guess",
                       cls, RoleName(role)));
    return "";
  }
  if (it->second.role != role) {
    Refuse(JoinPath(path, kClassKey),
           fmt::format("'{}' is {}, not {}", cls, RoleName(it->second.role), RoleName(role)));
    return "";
  }
  if (*it->second.refuse_reason) {
    Refuse(path, fmt::format("{}: {}", ShortClass(cls), it->second.refuse_reason));
    return "";
  }
  if (*it->second.ignore_reason) {
    Ignored(path, fmt::format("{}: {}", ShortClass(cls), it->second.ignore_reason));
    return "";
  }
  return cls;
}

// --- sections -----------------------------------------------------------------------------------

const char* kKernel = "kernel or compiler choice; the same math";
const char* kLayout = "parallel layout; replica's data-parallel reduction is exact and fixed-order";
const char* kPrecision =
    "replica trains fp32 master weights with fp32 compute; OLMo-core with bfloat16 computes the "
    "forward and backward in bf16 from fp32 master weights: the same recipe, different rounding";

void Importer::Experiment(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kExperiment);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  o.Ignore("run_name", "the run's name; replica names runs by --run-dir");
  if (const json* v = o.Take("launch")) Dispatch(*v, o.At("launch"), Role::kLaunch);
  o.Ignore("backend", "torch.distributed backends");
  o.Ignore("init_seed",
           "seeds Python/NumPy/torch global RNGs; parameter init is keyed by model.init_seed and "
           "nothing else in replica's training is random");
  if (const json* v = o.Take("model"))
    Model(*v, o.At("model"));
  else
    Refuse(o.At("model"), "missing");
  if (const json* v = o.Take("dataset"))
    Dataset(*v, o.At("dataset"));
  else
    Refuse(o.At("dataset"), "missing");
  if (const json* v = o.Take("data_loader"))
    DataLoader(*v, o.At("data_loader"));
  else
    Refuse(o.At("data_loader"), "missing");
  if (const json* v = o.Take("train_module"))
    TrainModule(*v, o.At("train_module"));
  else
    Refuse(o.At("train_module"), "missing");
  if (const json* v = o.Take("trainer"))
    Trainer(*v, o.At("trainer"));
  else
    Refuse(o.At("trainer"), "missing");
  o.Finish();
}

std::optional<double> Importer::ReadLayerNorm(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kLayerNorm);
  if (cls.empty()) return std::nullopt;
  Obj o(*this, j, path, cls);
  o.Allow("name", {"rms", "fused_rms"},
          "replica's norms are RMSNorm (fused_rms is the same math in one kernel)");
  o.Allow("elementwise_affine", {true}, "replica's RMSNorm has a learned weight");
  o.Allow("bias", {false}, "replica's RMSNorm has no bias");
  o.Ignore("full_precision", "replica computes norms in fp32");
  o.Allow("dtype", {"float32"}, "replica keeps fp32 parameters");
  std::optional<double> eps = o.Num("eps");
  if (!eps) eps = 1e-5;  // LayerNormConfig's default (as_config_dict writes it, so rarely used)
  o.Finish();
  return eps;
}

void Importer::ReadAttention(const json& j, const std::string& path, Block& b) {
  const std::string cls = Dispatch(j, path, Role::kAttention);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  o.Allow("name", {"default"}, "replica implements OLMo-core's default Attention module");
  if (auto v = o.Int("n_heads")) b.n_heads.Set(*v, o.At("n_heads"));
  if (auto v = o.Int("n_kv_heads")) b.n_kv_heads.Set(*v, o.At("n_kv_heads"));
  if (auto v = o.Int("head_dim")) b.head_dim.Set(*v, o.At("head_dim"));
  o.Allow("bias", {false}, "replica's attention projections have no bias");
  o.Allow("clip_qkv", {}, "replica does not clip q, k, v");
  o.Allow("gate", {}, "replica has no attention output gate");
  o.Allow("use_head_qk_norm", {false},
          "replica applies QK-norm over the whole projection (Olmo 2/3), not per head");
  o.Allow("attention_sinks", {false}, "replica has no attention sinks");
  o.Allow("layer_types", {}, "replica's attention types are full or sliding window only");
  o.Allow("dropout", {0, 0.0}, "replica trains without dropout");
  o.Allow("dtype", {"float32"}, "replica keeps fp32 parameters");
  o.Ignore("use_flash", kKernel);
  o.Ignore("backend", kKernel);
  if (const json* v = o.Take("qk_norm")) {
    if (auto eps = ReadLayerNorm(*v, o.At("qk_norm"))) b.qk_norm_eps.Set(*eps, o.At("qk_norm.eps"));
  } else {
    Refuse(o.At("qk_norm"), "absent: replica's model always applies QK-norm (Olmo 2/3)");
  }
  if (const json* v = o.Take("rope")) {
    const std::string rp = o.At("rope");
    const std::string rcls = Dispatch(*v, rp, Role::kRope);
    if (!rcls.empty()) {
      Obj r(*this, *v, rp, rcls);
      r.Allow("name", {"default"}, "replica implements the default (rotate-half) RoPE");
      r.Allow("no_global_rope", {false}, "replica applies RoPE on every layer");
      r.Ignore("full_precision", "replica computes RoPE tables in double and applies them in fp32");
      if (auto t = r.Num("theta")) b.rope_theta.Set(*t, r.At("theta"));
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
    const std::string wcls = Dispatch(*v, wp, Role::kSlidingWindow);
    if (!wcls.empty()) {
      Obj w(*this, *v, wp, wcls);
      Window win;
      win.path = wp;
      if (const json* p = w.Take("pattern")) {
        bool ok = p->is_array() && !p->empty();
        if (ok)
          for (const json& e : *p)
            ok = ok && e.is_number_integer() && (e.get<int64_t>() > 0 || e.get<int64_t>() == -1);
        if (ok) {
          for (const json& e : *p) win.pattern.push_back(e.get<int64_t>());
        } else {
          Refuse(w.At("pattern"), fmt::format("expected a non-empty list of window sizes (> 0, or "
                                              "-1 for full attention), got {}",
                                              p->dump()));
        }
      } else {
        Refuse(w.At("pattern"), "missing");
      }
      win.first_full = w.Bool("force_full_attention_on_first_layer").value_or(false);
      win.last_full = w.Bool("force_full_attention_on_last_layer").value_or(false);
      w.Finish();
      if (!win.pattern.empty()) b.window = win;
    }
  }
  o.Finish();
}

// rope.scaling: YaRN is read field by field (docs/olmo-core.md); the other scaling classes are
// refused through the registry.
void Importer::ReadYarn(const json& j, const std::string& path, Block& b) {
  const std::string cls = Dispatch(j, path, Role::kRopeScaling);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  OlmoCoreYarn y;  // the dataclass defaults for absent fields
  const size_t refused_before = out_.refused.size();
  for (const char* key : {"factor", "beta_fast", "beta_slow", "old_context_len"})
    if (!o.Has(key)) b.yarn_defaults.insert(key);
  if (auto v = o.Num("factor")) {
    y.factor = *v;
    if (!std::isfinite(*v) || *v < 1.0) {
      Refuse(o.At("factor"),
             fmt::format("{}: replica's YaRN needs a factor >= 1 (it stretches the context)", *v));
    }
  }
  for (auto [key, field] : {std::pair{"beta_fast", &y.beta_fast}, {"beta_slow", &y.beta_slow},
                            {"old_context_len", &y.old_context_len}}) {
    if (auto v = o.Int(key)) {
      *field = *v;
      if (*v <= 0) {
        Refuse(o.At(key), fmt::format("{}: expected a positive integer (OLMo-core divides by it "
                                      "or takes its logarithm)",
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
  const std::string cls = Dispatch(j, path, Role::kBlock);
  if (cls.empty()) return std::nullopt;
  Obj o(*this, j, path, cls);
  Block b;
  b.path = path;
  o.Allow("name", {"reordered_norm"},
          "replica implements the Olmo 2/3 block (RMSNorm after attention and after the "
          "feed-forward, TransformerBlockType.reordered_norm)");
  o.Allow("dropout", {0, 0.0}, "replica trains without dropout");
  o.Allow("attention_residual_alpha", {}, "replica adds the attention output unscaled");
  o.Allow("feed_forward_residual_alpha", {}, "replica adds the feed-forward output unscaled");
  o.Allow("feed_forward_moe", {}, "replica has no mixture-of-experts layers");
  const json* mixer = o.Take("sequence_mixer");
  const json* attention = o.Take("attention");
  if (mixer && attention) {
    Refuse(o.At("attention"),
           "both 'sequence_mixer' and the older 'attention' are set; OLMo-core "
           "refuses that too");
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
    const std::string fcls = Dispatch(*v, fp, Role::kFeedForward);
    if (!fcls.empty()) {
      Obj f(*this, *v, fp, fcls);
      if (auto h = f.Int("hidden_size")) b.ffn_hidden.Set(*h, f.At("hidden_size"));
      f.Allow("name", {"default"}, "replica's feed-forward is the SwiGLU MLP");
      f.Allow("bias", {false}, "replica's MLP has no bias");
      f.Allow("activation", {"silu"}, "replica's MLP is SwiGLU (silu)");
      f.Allow("dtype", {"float32"}, "replica keeps fp32 parameters");
      f.Finish();
    }
  } else {
    Refuse(o.At("feed_forward"), "absent: replica's block has a SwiGLU MLP");
  }
  o.Finish();
  // Canonical form for comparing per-layer overrides: the JSON without class tags' spelling of the
  // mixer key and without the RoPE scaling.
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
  const std::string cls = Dispatch(j, path, Role::kModel);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  if (auto v = o.Int("d_model"))
    r_.d_model.Set(*v, o.At("d_model"));
  else
    Refuse(o.At("d_model"), "missing");
  if (auto v = o.Int("vocab_size"))
    r_.vocab_size.Set(*v, o.At("vocab_size"));
  else
    Refuse(o.At("vocab_size"), "missing");
  if (auto v = o.Int("n_layers"))
    r_.n_layers.Set(*v, o.At("n_layers"));
  else
    Refuse(o.At("n_layers"), "missing");
  o.Allow("name", {"default"}, "replica implements OLMo-core's default Transformer");
  o.Allow("dtype", {"float32"}, "replica keeps fp32 parameters");
  o.Allow("init_method", {"normal"},
          "replica initialises as InitMethod.normal (N(0, init_std) truncated at ±3σ)");
  o.Allow("embedding_norm", {}, "replica has no norm after the embedding");
  o.Allow("freeze_params", {}, "replica trains every parameter");
  o.Allow("embed_scale", {}, "replica does not scale the embedding");
  o.Allow("block_pattern", {},
          "replica's layers are one block type (named block patterns are "
          "not supported)");
  if (auto v = o.Int("init_seed")) r_.init_seed.Set(*v, o.At("init_seed"));
  if (auto v = o.Num("init_std")) r_.init_std.Set(*v, o.At("init_std"));
  if (const json* v = o.Take("embedding_init_std")) {
    if (!v->is_number() || (r_.init_std.set && v->get<double>() != r_.init_std.value))
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
      Refuse(o.At("block_overrides"),
             fmt::format("expected an object of layer -> block, got {}", v->dump()));
    } else {
      for (auto it = v->begin(); it != v->end(); ++it) {
        const std::string lp = o.At("block_overrides." + it.key());
        int64_t layer = -1;
        try {
          size_t used = 0;
          layer = std::stoll(it.key(), &used);
          if (used != it.key().size()) layer = -1;
        } catch (const std::exception&) {
          layer = -1;
        }
        if (layer < 0 || (r_.n_layers.set && layer >= r_.n_layers.value)) {
          Refuse(lp, "expected a layer index in [0, n_layers)");
          continue;
        }
        if (auto b = ReadBlock(*it, lp)) r_.overrides[layer] = *b;
      }
    }
  }
  if (const json* v = o.Take("lm_head")) {
    const std::string hp = o.At("lm_head");
    const std::string hcls = Dispatch(*v, hp, Role::kLmHead);
    if (!hcls.empty()) {
      Obj h(*this, *v, hp, hcls);
      h.Allow("name", {"default"},
              "replica's LM head is a plain linear layer after the final norm");
      h.Allow("bias", {false}, "replica's LM head has no bias");
      h.Allow("dtype", {"float32"}, "replica keeps fp32 parameters");
      h.Ignore("loss_implementation", kKernel);
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

// DataMix.build's tokenizer directory: the Olmo 3 mixes are stored under "allenai/dolma3-tokenizer"
// (the same tokenizer as dolma2 under another name); v3-small-ppl-validation under
// "dolma2-tokenizer"; every other mix under the tokenizer's identifier.
std::string MixTokenizerDir(const std::string& mix, const std::string& identifier) {
  static const std::set<std::string> dolma3 = {"OLMo-mix-0625-official",
                                               "OLMo-mix-0925-official",
                                               "OLMo-midtraining-mix-0725-100B",
                                               "OLMo-midtraining-mix-0925-ingredient1-100B",
                                               "OLMo-midtraining-mix-0925-ingredient2-100B",
                                               "OLMo-midtraining-mix-1025-100B",
                                               "OLMo-longmino-mix-0625",
                                               "OLMo-longmino-mix-0925",
                                               "OLMo-longcontext-mix-1025-100B"};
  if (identifier == "allenai/dolma2-tokenizer") {
    if (dolma3.count(mix)) return "allenai/dolma3-tokenizer";
    if (mix == "v3-small-ppl-validation") return "dolma2-tokenizer";
  }
  return identifier;
}

std::string Importer::MapPath(const std::string& p) const {
  size_t best = 0;
  std::string to;
  for (const std::string& m : opt_.path_map) {
    const size_t eq = m.find('=');
    const std::string from = m.substr(0, eq);
    if (p.rfind(from, 0) == 0 && from.size() > best) {
      best = from.size();
      to = m.substr(eq + 1);
    }
  }
  std::string mapped = best ? to + p.substr(best) : p;
  if (mapped.empty() || mapped.find("://") != std::string::npos) return mapped;
  return fs::absolute(fs::path(mapped)).lexically_normal().string();  // YAML may live elsewhere
}

std::vector<std::string> Importer::ResolveMix(const std::string& mix, const std::string& mix_path,
                                              const std::string& base_dir) {
  std::string file = opt_.mix_file;
  if (file.empty() && !opt_.mix_dir.empty())
    file = (fs::path(opt_.mix_dir) / (mix + ".txt")).string();
  if (file.empty()) {
    Unresolved(mix_path,
               fmt::format("the file list of mix '{}' is in OLMo-core's "
                           "src/olmo_core/data/mixes/{}.txt: give --mix-dir or "
                           "--mix-file (or --data-paths data_paths.txt)",
                           mix, mix),
               "data.paths");
    return {};
  }
  Require(fs::exists(file), "--mix-dir/--mix-file: {} does not exist (mix '{}' from {})", file, mix,
          mix_path);
  const std::string text = ReadFile(file);
  std::string base = base_dir;
  if (!base.empty() && base.back() != '/') base += '/';
  const std::string tok = MixTokenizerDir(mix, r_.tok_identifier.value);
  std::vector<std::string> paths;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    line = line.substr(a, line.find_last_not_of(" \t\r") - a + 1);
    const size_t comma = line.find(',');
    Require(comma != std::string::npos && line.find(',', comma + 1) == std::string::npos,
            "{}:{}: expected 'label,path'", file, n);
    std::string p = line.substr(comma + 1);
    const size_t t = p.find("{TOKENIZER}");
    Require(t != std::string::npos, "{}:{}: the path has no {{TOKENIZER}} placeholder", file, n);
    p.replace(t, 11, tok);
    paths.push_back(MapPath(base + p));
  }
  Require(!paths.empty(), "{}: no paths in mix file", file);
  mix_label_ =
      fmt::format("mix {} ({} files, {} with {{TOKENIZER}} = {})", mix, paths.size(), file, tok);
  return paths;
}

void Importer::Tokenizer(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kTokenizer);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  if (auto v = o.Int("vocab_size")) r_.tok_vocab.Set(*v, o.At("vocab_size"));
  if (auto v = o.Int("eos_token_id")) r_.eos_id.Set(*v, o.At("eos_token_id"));
  if (auto v = o.Int("pad_token_id")) r_.pad_id.Set(*v, o.At("pad_token_id"));
  if (auto v = o.Int("bos_token_id")) r_.bos_id.Set(*v, o.At("bos_token_id"));
  if (auto v = o.Str("identifier")) r_.tok_identifier.Set(*v, o.At("identifier"));
  o.Finish();
}

void Importer::Dataset(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kDataset);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  if (cls == "olmo_core.data.numpy_dataset.NumpyDatasetConfig")
    o.Allow("name", {"fsl"}, "replica reads concatenate-and-chunk (fsl) datasets only");
  if (ShortClass(cls) == "NumpyPackedFSLDatasetConfig") {
    // Refused as a whole; its other fields are still read so that a plan can show the rest.
    Refuse(path,
           "NumpyPackedFSLDatasetConfig: packing documents into instances is not "
           "implemented in replica (its instances are the concatenate-and-chunk "
           "NumpyFSLDataset's)");
    for (const char* k : {"source_group_size", "source_permutation_seed", "long_doc_strategy"})
      o.Ignore(k, "part of the document packing refused above");
  }
  if (const json* v = o.Take("tokenizer"))
    Tokenizer(*v, o.At("tokenizer"));
  else
    Refuse(o.At("tokenizer"), "missing");
  if (auto v = o.Int("sequence_length"))
    r_.seq_len.Set(*v, o.At("sequence_length"));
  else
    Refuse(o.At("sequence_length"), "missing");
  if (auto v = o.Int("max_target_sequence_length")) {
    r_.max_target_seq_len.Set(*v, o.At("max_target_sequence_length"));
    if (r_.seq_len.set && *v != r_.seq_len.value)
      Refuse(o.At("max_target_sequence_length"),
             fmt::format("{} != sequence_length {}: OLMo-core then counts instances per file in "
                         "units of the target length, which replica's dataset does not",
                         *v, r_.seq_len.value));
  }
  if (auto v = o.Str("dtype")) {
    if (*v == "uint32" || *v == "uint16")
      r_.dtype.Set(*v, o.At("dtype"));
    else
      Refuse(o.At("dtype"), fmt::format("'{}': replica reads uint16 or uint32 token files", *v));
  }
  // Without a dtype OLMo-core's NumpyDatasetConfig.get_dtype picks the smallest unsigned type
  // that holds vocab_size - 1, uint8 for at most 256 ids, which replica cannot read.
  if (!r_.dtype.set && r_.tok_vocab.set && r_.tok_vocab.value <= 256)
    Refuse(r_.tok_vocab.path,
           fmt::format("{} ids and no dataset.dtype: OLMo-core reads such token files as uint8 "
                       "(NumpyDatasetConfig.get_dtype); replica reads uint16 or uint32 only",
                       r_.tok_vocab.value));
  o.Allow("generate_doc_lengths", {false},
          "intra-document masking (attention limited to each document) is not implemented in "
          "replica");
  o.Allow("instance_filter_config", {}, "replica does not mask repetitive instances");
  o.Allow("label_mask_paths", {}, "replica has no per-token label masks");
  o.Allow("source_mixture_config", {},
          "OLMo-core's source mixtures are not mapped; give the "
          "run's data_paths.txt (--data-paths) instead");
  o.Ignore("metadata", "per-file metadata attached to instances; not used in training");
  o.Ignore("include_instance_metadata", "instance metadata is not used in training");
  o.Ignore("work_dir", "OLMo-core's cache directory");
  o.Ignore("ignore_fingerprint_mismatch", "replica always checks its dataset fingerprint");
  const bool expand_glob = o.Bool("expand_glob").value_or(false);
  std::optional<std::string> mix = o.Str("mix");
  std::optional<std::string> base = o.Str("mix_base_dir");
  const json* paths = o.Take("paths");
  if (!opt_.data_paths_file.empty()) {
    const std::string text = ReadFile(opt_.data_paths_file);
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      const size_t a = line.find_first_not_of(" \t\r");
      if (a == std::string::npos) continue;
      r_.data_paths.push_back(MapPath(line.substr(a, line.find_last_not_of(" \t\r") - a + 1)));
    }
    Require(!r_.data_paths.empty(), "--data-paths {}: no paths", opt_.data_paths_file);
    r_.data_paths_from = fmt::format("{} ({} files, in order; replaces {})", opt_.data_paths_file,
                                     r_.data_paths.size(), mix ? o.At("mix") : o.At("paths"));
  } else if (mix) {
    r_.data_paths = ResolveMix(*mix, o.At("mix"), MapPath(base.value_or("")));
    if (!r_.data_paths.empty())
      r_.data_paths_from = o.At("mix") + ", " + o.At("mix_base_dir") + ": " + mix_label_;
  } else if (paths) {
    if (!paths->is_array()) {
      Refuse(o.At("paths"), fmt::format("expected a list of paths, got {}", paths->dump()));
    } else {
      for (const json& p : *paths) {
        if (p.is_string())
          r_.data_paths.push_back(MapPath(p.get<std::string>()));
        else
          Refuse(o.At("paths"), fmt::format("expected strings, got {}", p.dump()));
      }
      r_.data_paths_from = o.At("paths");
      if (!expand_glob) {
        for (const std::string& p : r_.data_paths)
          if (p.find_first_of("*?[") != std::string::npos)
            Refuse(o.At("paths"), fmt::format("'{}' contains glob characters but expand_glob is "
                                              "false; replica would expand it",
                                              p));
      }
    }
  } else {
    Refuse(o.At("paths"), "the dataset names neither 'paths' nor 'mix'");
  }
  if (base && !mix) Ignored(o.At("mix_base_dir"), "no mix is named");
  bool local = !r_.data_paths.empty();
  for (const std::string& p : r_.data_paths) {
    if (p.find("://") != std::string::npos) {
      Unresolved(r_.data_paths_from,
                 fmt::format("'{}' is not a local path: map its prefix with "
                             "--path-map PREFIX=DIR",
                             p),
                 "data.paths");
      local = false;
      break;
    }
  }
  r_.data_resolved = local;
  o.Finish();
}

void Importer::DataLoader(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kDataLoader);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  if (auto v = o.Int("global_batch_size"))
    r_.global_batch_tokens.Set(*v, o.At("global_batch_size"));
  else
    Refuse(o.At("global_batch_size"), "missing");
  if (auto v = o.Int("seed")) {
    r_.data_seed.Set(*v, o.At("seed"));
    if (*v < 0)
      Refuse(o.At("seed"), fmt::format("{} is negative; OLMo-core's shuffle (numpy's PCG64 seeded "
                                       "with seed + epoch) refuses negative seeds",
                                       *v));
  } else {
    Refuse(o.At("seed"), "missing");
  }
  const char* workers =
      "loader workers take whole batches round-robin; the order does not depend "
      "on them";
  o.Ignore("num_workers", workers);
  o.Ignore("num_threads", workers);
  o.Ignore("prefetch_factor", workers);
  o.Ignore("work_dir", "OLMo-core's cache of the global order; replica recomputes it");
  o.Ignore("target_device_type", "replica trains on the CPU");
  o.Ignore("ignore_fingerprint_mismatch", "replica always checks its dataset fingerprint");
  o.Finish();
}

void Importer::ReadSchedule(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kScheduler);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  Schedule s;
  s.cls = cls;
  s.path = path;
  const std::string name = ShortClass(cls);
  s.type = name == "CosWithWarmup"       ? "cosine"
           : name == "HalfCosWithWarmup" ? "cosine_continuation"
           : name == "LinearWithWarmup"  ? "linear"
           : name == "WSD"               ? "wsd"
                                         : "constant";
  o.Allow("lr_field", {"lr"}, "replica schedules the learning rate");
  o.Allow("initial_lr_field", {"initial_lr"}, "replica schedules from optim.lr");
  o.Allow("units", {"steps"}, "replica's schedules count optimizer steps, not tokens");
  if (name != "ConstantScheduler") {
    std::optional<int64_t> w = o.Int("warmup");
    std::optional<int64_t> ws = o.Int("warmup_steps");  // the older spelling
    if (w && ws) Refuse(o.At("warmup_steps"), "both 'warmup' and the older 'warmup_steps' are set");
    if (w)
      s.warmup.Set(*w, o.At("warmup"));
    else if (ws)
      s.warmup.Set(*ws, o.At("warmup_steps"));
    if (auto f = o.Num("warmup_fraction")) s.warmup_fraction.Set(*f, o.At("warmup_fraction"));
    if (s.warmup.set == s.warmup_fraction.set)
      Refuse(path, "give exactly one of 'warmup' and 'warmup_fraction' (as OLMo-core requires)");
    if (auto v = o.Num("warmup_min_lr")) s.warmup_min_lr.Set(*v, o.At("warmup_min_lr"));
  }
  if (name == "CosWithWarmup" || name == "HalfCosWithWarmup" || name == "LinearWithWarmup") {
    if (auto v = o.Num("alpha_f"))
      s.alpha_f.Set(*v, o.At("alpha_f"));
    else
      s.alpha_f.Set(0.1, path + " (alpha_f default 0.1)");
    if (auto v = o.Int("t_max")) s.t_max.Set(*v, o.At("t_max"));
  }
  if (name == "WSD") {
    std::optional<int64_t> d = o.Int("decay");
    std::optional<int64_t> ds = o.Int("decay_steps");
    if (d)
      s.decay.Set(*d, o.At("decay"));
    else if (ds)
      s.decay.Set(*ds, o.At("decay_steps"));
    if (auto f = o.Num("decay_fraction")) s.decay_fraction.Set(*f, o.At("decay_fraction"));
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
  if (idx.empty() || idx.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  out.push_back(fmt::format("model.layers.{}.{}", idx, it->second));
  return out;
}

void Importer::Optim(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kOptim);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  r_.skip_step = ShortClass(cls) == "SkipStepAdamWConfig";
  r_.lr.Set(o.Num("lr").value_or(1e-3), o.At("lr"));
  r_.eps.Set(o.Num("eps").value_or(1e-8), o.At("eps"));
  r_.weight_decay.Set(o.Num("weight_decay").value_or(1e-2), o.At("weight_decay"));
  if (const json* b = o.Take("betas")) {
    if (b->is_array() && b->size() == 2 && (*b)[0].is_number() && (*b)[1].is_number())
      r_.betas.Set({(*b)[0].get<double>(), (*b)[1].get<double>()}, o.At("betas"));
    else
      Refuse(o.At("betas"), fmt::format("expected [beta1, beta2], got {}", b->dump()));
  } else {
    r_.betas.Set({0.9, 0.999}, o.At("betas") + " (default)");
  }
  if (r_.skip_step) {
    r_.rolling_interval.Set(o.Int("rolling_interval_length").value_or(128),
                            o.At("rolling_interval_length"));
    r_.sigma.Set(o.Num("sigma_factor").value_or(6), o.At("sigma_factor"));
    o.Allow("step_increment_bugfix", {true},
            "replica increments Adam's step on every applied update (the fixed behaviour)");
  }
  o.Allow("dtype", {"float32"}, "replica keeps Adam's moments in fp32");
  o.Ignore("foreach", kKernel);
  o.Ignore("fused", kKernel);
  o.Ignore("compile", kKernel);
  o.Ignore("fixed_fields",
           "which fields a checkpoint may not override; replica's optim.lr always "
           "comes from the config");
  std::vector<std::string> no_decay;
  if (const json* g = o.Take("group_overrides")) {
    if (!g->is_array()) {
      Refuse(o.At("group_overrides"), fmt::format("expected a list, got {}", g->dump()));
    } else {
      for (size_t i = 0; i < g->size(); ++i) {
        const std::string gp = fmt::format("{}[{}]", o.At("group_overrides"), i);
        const std::string gcls = Dispatch((*g)[i], gp, Role::kGroupOverride);
        if (gcls.empty()) continue;
        Obj go(*this, (*g)[i], gp, gcls);
        const json* params = go.Take("params");
        const json* opts = go.Take("opts");
        const json zero_wd = {{"weight_decay", 0.0}};
        if (!opts || !opts->is_object() || opts->size() != 1 || !opts->contains("weight_decay") ||
            !(*opts)["weight_decay"].is_number() || (*opts)["weight_decay"].get<double>() != 0.0) {
          Refuse(go.At("opts"), fmt::format("{}: replica's only per-parameter option is weight "
                                            "decay 0 (optim.no_decay)",
                                            opts ? opts->dump() : "missing"));
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
                                                  p.dump()));
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

void Importer::DataParallel(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kDataParallel);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  r_.data_parallel_path = path;
  o.Ignore("name", kLayout);
  if (const json* v = o.Take("param_dtype")) {
    if (*v != "float32") Ignored(o.At("param_dtype"), kPrecision);
  }
  if (const json* v = o.Take("reduce_dtype")) {
    if (*v != "float32")
      Ignored(o.At("reduce_dtype"), "replica reduces gradients in fp32 in a fixed order");
  }
  for (const char* k : {"num_replicas", "shard_degree", "wrapping_strategy", "prefetch_factor"})
    o.Ignore(k, kLayout);
  o.Finish();
}

void Importer::Float8(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kFloat8);
  if (cls.empty()) return;
  if (j.value("enabled", false)) {
    Refuse(path + ".enabled", "float8 matmuls change the math; replica computes in fp32");
  } else {
    Ignored(path, "Float8Config with enabled=false: nothing is converted");
  }
}

void Importer::TrainModule(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kTrainModule);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  if (auto v = o.Int("rank_microbatch_size"))
    r_.rank_microbatch_tokens.Set(*v, o.At("rank_microbatch_size"));
  if (auto v = o.Int("max_sequence_length"))
    r_.max_sequence_length.Set(*v, o.At("max_sequence_length"));
  if (const json* v = o.Take("optim"))
    Optim(*v, o.At("optim"));
  else
    Refuse(o.At("optim"), "missing");
  if (auto v = o.Num("max_grad_norm"))
    r_.max_grad_norm.Set(*v, o.At("max_grad_norm"));
  else
    r_.max_grad_norm.Set(0, o.At("max_grad_norm") + " (absent: no clipping)");
  if (const json* v = o.Take("scheduler")) ReadSchedule(*v, o.At("scheduler"));
  if (auto v = o.Num("z_loss_multiplier"))
    r_.z_loss.Set(*v, o.At("z_loss_multiplier"));
  else
    r_.z_loss.Set(0, o.At("z_loss_multiplier") + " (absent: no z-loss)");
  o.Ignore("compile_model", kKernel);
  o.Ignore("fused_loss", kKernel);
  o.Ignore("compile_loss", kKernel);
  if (const json* v = o.Take("float8_config")) Float8(*v, o.At("float8_config"));
  if (const json* v = o.Take("dp_config")) DataParallel(*v, o.At("dp_config"));
  for (const char* k : {"tp_config", "cp_config", "pp_config", "ep_config"})
    if (const json* v = o.Take(k)) Dispatch(*v, o.At(k), Role::kOtherParallel);
  if (const json* v = o.Take("ac_config"))
    Dispatch(*v, o.At("ac_config"), Role::kActivationCheckpointing);
  if (const json* v = o.Take("autocast_precision")) {
    if (*v != "float32") Ignored(o.At("autocast_precision"), kPrecision);
  }
  o.Ignore("state_dict_save_opts", "checkpoint format options");
  o.Ignore("state_dict_load_opts", "checkpoint format options");
  o.Ignore("load_key_mapping", "checkpoint key renaming");
  o.Ignore("eval_rank_microbatch_size", "evaluation batch size");
  o.Allow("label_ignore_index", {-100}, "replica masks labels with -100");
  o.Finish();
}

Duration Importer::ReadDuration(const json& j, const std::string& path) {
  Duration d;
  const std::string cls = Dispatch(j, path, Role::kDuration);
  if (cls.empty()) return d;
  Obj o(*this, j, path, cls);
  auto v = o.Int("value");
  auto u = o.Str("unit");
  o.Finish();
  if (!v || !u || *v <= 0 || (*u != "steps" && *u != "tokens" && *u != "epochs")) {
    Refuse(path, "expected {value > 0, unit: steps | tokens | epochs}");
    return d;
  }
  d.value = *v;
  d.unit = *u;
  d.path = path;
  d.set = true;
  return d;
}

void Importer::Callback(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kCallback);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);  // CheckpointerCallback (the one callback read field by field)
  if (o.Bool("enabled").value_or(true)) {
    if (auto v = o.Int("save_interval")) r_.save_interval.Set(*v, o.At("save_interval"));
  } else {
    o.Take("save_interval");
    Ignored(path, "disabled");
  }
  o.Ignore("ephemeral_save_interval", "replica keeps checkpoint.keep newest checkpoints");
  o.Ignore("save_async", "replica writes checkpoints in the background already");
  o.Ignore("pre_train_checkpoint", "step-0 checkpoint");
  o.Ignore("remove", "checkpoint retention policy (see checkpoint.keep)");
  o.Ignore("fixed_steps", "extra checkpoint steps");
  o.Finish();
}

void Importer::Trainer(const json& j, const std::string& path) {
  const std::string cls = Dispatch(j, path, Role::kTrainer);
  if (cls.empty()) return;
  Obj o(*this, j, path, cls);
  o.Ignore("save_folder", "replica writes to --run-dir");
  o.Ignore("work_dir", "OLMo-core's scratch directory");
  o.Ignore("save_overwrite", "replica never overwrites a checkpoint in place");
  o.Ignore("device", "replica trains on the CPU");
  o.Ignore("metrics_collect_interval", "replica records metrics every step");
  o.Ignore("cancel_check_interval", "job cancellation polling");
  o.Ignore("async_bookkeeping", "logging thread");
  o.Ignore("bookkeeping_soft_timeout", "logging thread");
  o.Ignore("no_checkpoints", "replica always checkpoints at the end");
  o.Ignore("no_evals", "evaluation does not change training");
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
      Refuse(o.At("callbacks"),
             fmt::format("expected an object of name -> callback, got {}", cbs->dump()));
    } else {
      for (auto it = cbs->begin(); it != cbs->end(); ++it)
        Callback(*it, o.At("callbacks." + it.key()));
    }
  }
  o.Finish();
}

// --- assembling the replica config --------------------------------------------------------------

std::string Num(double v) {
  std::string s = fmt::format("{}", v);
  return s;
}

std::string Quote(const std::string& s) {
  return json(s).dump();
}

struct Line {
  std::string key, value, from;
};

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

std::string Importer::EmitYaml() {
  std::vector<Line> lines;
  auto add = [&](std::string key, std::string value, std::string from) {
    lines.push_back({std::move(key), std::move(value), std::move(from)});
  };
  auto src = [](const auto& s, const std::string& fallback) { return s.set ? s.path : fallback; };

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
        src(r_.init_std, "TransformerConfig default init_std 0.02"));
    add("model.tie_word_embeddings", "false", "model.lm_head (a separate w_out)");
    add("model.pad_token_id", r_.pad_id.set ? std::to_string(r_.pad_id.value) : "null",
        src(r_.pad_id, "dataset.tokenizer"));
    add("model.eos_token_id", r_.eos_id.set ? std::to_string(r_.eos_id.value) : "null",
        src(r_.eos_id, "dataset.tokenizer"));
    add("model.bos_token_id", r_.bos_id.set ? std::to_string(r_.bos_id.value) : "null",
        src(r_.bos_id, "dataset.tokenizer (bos_token_id absent)"));
  }

  // init
  add("init.seed", std::to_string(r_.init_seed.set ? r_.init_seed.value : 0),
      src(r_.init_seed, "model.init_seed (absent: TransformerConfig default 0)"));
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
        src(r_.load_trainer_state, "trainer.load_trainer_state (absent: true)"));
    add("init.load_optimizer",
        r_.load_optim_state.set && !r_.load_optim_state.value ? "false" : "true",
        src(r_.load_optim_state, "trainer.load_optim_state (absent: true)"));
  }

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
  const std::string dtype =
      r_.dtype.set ? r_.dtype.value
                   : (r_.tok_vocab.set && r_.tok_vocab.value > 65536 ? "uint32" : "uint16");
  add("data.dtype", dtype,
      r_.dtype.set ? r_.dtype.path : "smallest dtype for dataset.tokenizer.vocab_size");

  // train
  int64_t instances = 0;
  if (r_.global_batch_tokens.set && r_.seq_len.set && r_.seq_len.value > 0) {
    if (r_.global_batch_tokens.value % r_.seq_len.value != 0) {
      Refuse(r_.global_batch_tokens.path,
             fmt::format("{} tokens is not a whole number of {}-token instances",
                         r_.global_batch_tokens.value, r_.seq_len.value));
    } else {
      instances = r_.global_batch_tokens.value / r_.seq_len.value;
    }
  }
  const int64_t tokens_per_step = instances * r_.seq_len.value;
  int64_t t_max = 0;
  std::string t_max_from;
  auto steps_of = [&](const Duration& d, std::string* from) -> int64_t {
    if (d.unit == "steps") {
      *from = d.path + ".value (steps)";
      return d.value;
    }
    if (d.unit == "tokens") {
      if (tokens_per_step <= 0) return 0;
      *from = fmt::format("ceil({}.value / data_loader.global_batch_size) = ceil({} / {})", d.path,
                          d.value, tokens_per_step);
      return (d.value + tokens_per_step - 1) / tokens_per_step;
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

  // optim
  if (r_.lr.set) {
    add("optim.lr", Num(r_.lr.value), r_.lr.path);
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
          src(s.decay_min_lr, "WSD default decay_min_lr 0"));
    }
  } else {
    add("optim.schedule.type", "constant", "train_module.scheduler absent: constant LR");
    add("optim.schedule.warmup", "0", "train_module.scheduler absent");
  }

  // checkpoint
  if (r_.save_interval.set)
    add("checkpoint.interval", std::to_string(r_.save_interval.value), r_.save_interval.path);

  // parallel: FSDP is ZeRO-3 (and the sequential order above is the one zero3 runs on many ranks)
  if (!r_.data_parallel_path.empty())
    add("parallel.sharding", "zero3",
        r_.data_parallel_path + " (parameters, gradients and optimizer state sharded over ranks)");

  // Render: nested sections, the JSON path as a comment beside each key.
  std::string yaml;
  yaml += fmt::format("# replica run config imported from the OLMo-core config {}\n", source_);
  yaml +=
      "# (`replica import-config`; docs/olmo-core.md). Beside each key: the JSON path it came "
      "from.\n";
  if (!out_.ignored.empty()) {
    yaml += "#\n# Ignored (no effect on replica's training math):\n";
    for (const ImportNote& n : out_.ignored)
      yaml += fmt::format("#   {}: {}\n", n.json_path, n.reason);
  }
  if (!out_.unresolved.empty()) {
    yaml += "#\n# Needed before training:\n";
    for (const ImportNote& n : out_.unresolved)
      yaml += fmt::format("#   {}: {}\n", n.json_path, n.reason);
  }
  if (!out_.refused.empty()) {
    yaml += "#\n# NOT REPRODUCED (refused; replica would train something else):\n";
    for (const ImportNote& n : out_.refused)
      yaml += fmt::format("#   {}: {}\n", n.json_path, n.reason);
  }
  std::vector<std::string> open;
  for (const Line& l : lines) {
    std::vector<std::string> parts;
    std::string k = l.key;
    for (size_t pos; (pos = k.find('.')) != std::string::npos; k = k.substr(pos + 1))
      parts.push_back(k.substr(0, pos));
    size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) ++common;
    open.resize(common);
    for (size_t i = common; i < parts.size(); ++i) {
      yaml += std::string(2 * i, ' ') + parts[i] + ":\n";
      open.push_back(parts[i]);
    }
    std::string text = std::string(2 * parts.size(), ' ') + k + ": " + l.value;
    if (!l.from.empty()) {
      if (text.size() < 44) text += std::string(44 - text.size(), ' ');
      text += "  # " + l.from;
    }
    yaml += text + "\n";
  }
  return yaml;
}

OlmoCoreImport Importer::Run(const json& root) {
  for (const std::string& m : opt_.path_map)
    Require(m.find('=') != std::string::npos && m.find('=') > 0,
            "--path-map '{}': expected PREFIX=LOCAL_DIR", m);
  Experiment(root, "");
  out_.yaml = EmitYaml();
  out_.data_paths = r_.data_resolved ? r_.data_paths : std::vector<std::string>{};
  out_.seq_len = r_.seq_len.value;
  out_.dtype = r_.dtype.set
                   ? r_.dtype.value
                   : (r_.tok_vocab.set && r_.tok_vocab.value > 65536 ? "uint32" : "uint16");
  out_.seed = static_cast<uint64_t>(std::max<int64_t>(0, r_.data_seed.value));
  if (r_.seq_len.value > 0 && r_.global_batch_tokens.value % r_.seq_len.value == 0)
    out_.global_batch_instances =
        static_cast<uint64_t>(r_.global_batch_tokens.value / r_.seq_len.value);
  out_.tokenizer_vocab_size = static_cast<uint64_t>(std::max<int64_t>(0, r_.tok_vocab.value));
  out_.eos_token_id = r_.eos_id.set ? r_.eos_id.value : -1;
  out_.pad_token_id = r_.pad_id.set ? r_.pad_id.value : -1;
  out_.bos_token_id = r_.bos_id.set ? r_.bos_id.value : -1;
  out_.max_target_sequence_length = r_.max_target_seq_len.set ? r_.max_target_seq_len.value : -1;
  return out_;
}

std::string NotesText(const std::vector<ImportNote>& notes) {
  std::string s;
  for (const ImportNote& n : notes) s += fmt::format("\n  {}: {}", n.json_path, n.reason);
  return s;
}

}  // namespace

bool IsOlmoCoreConfig(const json& j) {
  return j.is_object() && j.contains(kClassKey);
}

OlmoCoreImport ImportOlmoCoreConfig(const json& j, const std::string& source,
                                    const OlmoCoreImportOptions& options) {
  Importer im(options, source);
  return im.Run(j);
}

void RequireNoRefusals(const OlmoCoreImport& imported, const std::string& source) {
  Require(imported.refused.empty(),
          "{}: {} OLMo-core setting(s) replica cannot reproduce (JSON path: reason):{}", source,
          imported.refused.size(), NotesText(imported.refused));
}

json ReadOlmoCoreConfig(const std::string& path) {
  const std::string text = ReadFile(path);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return nullptr;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& ex) {
    Fail("{}: not valid JSON: {}", path, ex.what());
  }
  return IsOlmoCoreConfig(j) ? j : json(nullptr);
}

RunConfig LoadRunConfig(const std::string& path, const std::vector<std::string>& overrides,
                        const OlmoCoreImportOptions& options) {
  const json j = ReadOlmoCoreConfig(path);
  if (j.is_null()) return RunConfig::Load(path, overrides);
  const OlmoCoreImport im = ImportOlmoCoreConfig(j, path, options);
  if (options.allow_unsupported) {
    for (const ImportNote& n : im.refused)
      std::fprintf(stderr, "replica: warning: %s: %s: NOT reproduced: %s\n", path.c_str(),
                   n.json_path.c_str(), n.reason.c_str());
  } else {
    RequireNoRefusals(im, path);
  }
  if (im.needs_max_steps) {
    bool given = false;
    for (const std::string& o : overrides) given = given || o.rfind("train.max_steps=", 0) == 0;
    Require(given,
            "{}: the run stops after a number of epochs but the dataset is not available "
            "to count its batches: map the data (--mix-dir, --data-paths, --path-map) or "
            "give --set train.max_steps=N",
            path);
  }
  if (options.for_training) {
    auto overridden = [&](const std::string& key) {
      for (const std::string& o : overrides)
        if (o.rfind(key + "=", 0) == 0) return true;
      return false;
    };
    std::vector<ImportNote> missing;
    for (const ImportNote& n : im.unresolved)
      if (!overridden(n.replica_key)) missing.push_back(n);
    Require(missing.empty(), "{}: before this OLMo-core config can train here:{}", path,
            NotesText(missing));
  }
  return RunConfig::FromYaml(im.yaml, fs::current_path().string(), overrides, path);
}

}  // namespace replica

#include "run/run_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/checked_math.h"
#include "core/byte_size.h"
#include "core/checksum.h"
#include "core/error.h"
#include "core/suggest.h"
#include "core/text_encoding.h"
#include "core/precision_spelling.h"
#include "core/python_int.h"
#include "core/threads.h"
#include "model/recompute.h"
#include "ops/precision.h"

namespace replica {
namespace fs = std::filesystem;

namespace {

enum class Kind {
  kInt, kUnsignedSeed, kSeed, kDouble, kBool, kString, kPath, kStringList, kPathList, kDoubleList, kMixture,
  kJsonMap  // a mapping taken over as JSON (the model's RoPE settings)
};

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kInt: return "an integer";
    case Kind::kUnsignedSeed: return "an integer seed (digits, below 2^64)";
    case Kind::kSeed: return "an integer seed (digits, below 2^63)";
    case Kind::kDouble: return "a number";
    case Kind::kBool: return "a boolean (true/false)";
    case Kind::kString: return "a string";
    case Kind::kPath: return "a path";
    case Kind::kStringList: return "a list of strings";
    case Kind::kPathList: return "a list of paths";
    case Kind::kDoubleList: return "a list of numbers";
    case Kind::kMixture: return "a list of sources {name, paths, weight | tokens, max_repetition}";
    case Kind::kJsonMap: return "a mapping (as in config.json)";
  }
  return "?";
}

// One settable key. `ref` returns the member it sets, typed by `kind`.
struct Field {
  const char* key;
  Kind kind;
  bool trajectory;
  std::function<void*(RunConfig&)> ref;
  const char* help;
};

#define REF(member) [](RunConfig& c) -> void* { return &c.member; }

const std::vector<Field>& Fields() {
  static const std::vector<Field> fields = {
      {"init.seed", Kind::kUnsignedSeed, true, REF(init.seed), "parameter init seed (Philox stream key)"},
      {"init.from_checkpoint", Kind::kPath, true, REF(init.from_checkpoint),
       "start from this checkpoint (or HF model dir) instead of a fresh init"},
      {"init.reset_step", Kind::kBool, true, REF(init.reset_step),
       "with from_checkpoint: fresh step counter, tokens, data order and schedule"},
      {"init.load_optimizer", Kind::kBool, true, REF(init.load_optimizer),
       "with from_checkpoint: take Adam m, v and t from it"},
      {"data.paths", Kind::kPathList, false, REF(data.paths),
       "token files or globs (numpy format), in mix order"},
      {"data.seq_len", Kind::kInt, true, REF(data.seq_len), "tokens per instance"},
      {"data.seed", Kind::kSeed, true, REF(data.seed), "data order seed (shuffle uses seed + epoch)"},
      {"data.source_permutation_seed", Kind::kString, true, REF(data.source_permutation_seed),
       "read data.paths' files in the order Python's random.Random(seed).shuffle gives "
       "(OLMo-core's source_permutation_seed); empty: in the order given"},
      {"data.dtype", Kind::kString, true, REF(data.dtype), "token file dtype: uint32 or uint16"},
      {"data.mixture", Kind::kMixture, false, REF(data.mixture),
       "weighted sources instead of data.paths: [{name, paths, weight | tokens, max_repetition}]"},
      {"data.mixture_tokens", Kind::kInt, true, REF(data.mixture_tokens),
       "total token budget split by the sources' weights (0: each source's own tokens)"},
      {"data.mixture_seed", Kind::kSeed, true, REF(data.mixture_seed),
       "seed of the mixture's per-source instance selection"},
      {"data.check_vocab", Kind::kBool, false, REF(data.check_vocab),
       "refuse token ids >= model.vocab_size"},
      {"data.packing", Kind::kString, true, REF(data.packing),
       "none (OLMo-core's NumpyFSLDataset) or obfd (its NumpyPackedFSLDataset: documents packed "
       "into instances by optimized best-fit decreasing)"},
      {"data.long_doc_strategy", Kind::kString, true, REF(data.long_doc_strategy),
       "with packing obfd: truncate or fragment documents longer than data.seq_len"},
      {"data.source_group_size", Kind::kInt, true, REF(data.source_group_size),
       "with packing obfd: this many consecutive files are packed together"},
      {"data.generate_doc_lengths", Kind::kBool, true, REF(data.generate_doc_lengths),
       "give the model each instance's document lengths (cu_doc_lens: intra-document "
       "attention), split at model.eos_token_id as OLMo-core's get_document_lengths does"},
      {"train.max_steps", Kind::kInt, false, REF(train.max_steps), "optimizer steps to run"},
      {"train.global_batch_instances", Kind::kInt, true, REF(train.global_batch_instances),
       "instances per optimizer step"},
      {"train.micro_batch_instances", Kind::kInt, false, REF(train.micro_batch_instances),
       "instances per forward/backward (0 = whole global batch)"},
      {"train.threads", Kind::kInt, false, REF(train.threads), "threads (0 = all cores)"},
      {"train.z_loss_multiplier", Kind::kDouble, true, REF(train.z_loss_multiplier),
       "weight of logsumexp^2 in the loss"},
      {"train.log_interval", Kind::kInt, false, REF(train.log_interval),
       "progress line every N steps"},
      {"train.grad_accumulation", Kind::kString, true, REF(train.grad_accumulation),
       "how micro-batch gradients are summed: tree (evens-first pairwise) | sequential (left fold "
       "in micro-batch order; parallel.sharding zero3 needs it)"},
      {"train.micro_batch_layout", Kind::kString, true, REF(train.micro_batch_layout),
       "which instances of a rank's batch form micro-batch k of m: strided (k, k+m, ...: the same "
       "on any number of ranks) | contiguous (k·μ .. k·μ+μ-1: OLMo-core's split)"},
      {"train.recompute", Kind::kString, false, REF(train.recompute),
       "activation recomputation: none | mlp (SwiGLU MLP) | full (whole layer) | auto (the "
       "cheapest that fits parallel.memory_per_rank); changes no bit"},
      {"train.skip_step.enabled", Kind::kBool, true, REF(train.skip_step.enabled),
       "skip steps whose loss or grad norm is an outlier"},
      {"train.skip_step.window", Kind::kInt, true, REF(train.skip_step.window),
       "previous steps the mean/std are taken over"},
      {"train.skip_step.min_history", Kind::kInt, true, REF(train.skip_step.min_history),
       "values (incl. the current) recorded before the rule applies"},
      {"train.skip_step.sigma", Kind::kDouble, true, REF(train.skip_step.sigma),
       "standard deviations above the mean that trigger a skip"},
      {"optim.type", Kind::kString, true, REF(optim.type),
       "the update rule (optim/update_rule.h): adamw"},
      {"optim.lr", Kind::kDouble, true, REF(optim.lr), "peak learning rate"},
      {"optim.betas", Kind::kDoubleList, true, REF(optim.betas), "Adam [beta1, beta2]"},
      {"optim.eps", Kind::kDouble, true, REF(optim.eps), "Adam epsilon"},
      {"optim.weight_decay", Kind::kDouble, true, REF(optim.weight_decay),
       "decoupled weight decay"},
      {"optim.max_grad_norm", Kind::kDouble, true, REF(optim.max_grad_norm),
       "global grad-norm clip (0 = off)"},
      {"optim.no_decay", Kind::kStringList, true, REF(optim.no_decay),
       "HF names of tensors without weight decay"},
      {"optim.schedule.type", Kind::kString, true, REF(optim.schedule_type),
       "constant | cosine | cosine_continuation | linear | wsd"},
      {"optim.schedule.warmup", Kind::kInt, true, REF(optim.schedule.warmup), "warmup steps"},
      {"optim.schedule.t_max", Kind::kInt, true, REF(optim.schedule.t_max),
       "step where the decay ends (0 = train.max_steps)"},
      {"optim.schedule.alpha_f", Kind::kDouble, true, REF(optim.schedule.alpha_f),
       "final LR as a fraction of optim.lr"},
      {"optim.schedule.warmup_min_lr", Kind::kDouble, true, REF(optim.schedule.warmup_min_lr),
       "LR at the start of the warmup"},
      {"optim.schedule.decay_steps", Kind::kInt, true, REF(optim.schedule.decay_steps),
       "wsd: steps of the final linear decay"},
      {"optim.schedule.decay_min_lr", Kind::kDouble, true, REF(optim.schedule.decay_min_lr),
       "wsd: LR at t_max"},
      {"checkpoint.interval", Kind::kInt, false, REF(checkpoint.interval),
       "steps between checkpoints (default 1000; 0 = only at the end)"},
      {"checkpoint.keep", Kind::kInt, false, REF(checkpoint.keep),
       "newest complete checkpoints to keep"},
      {"eval.interval", Kind::kInt, false, REF(eval.interval),
       "steps between evaluations (0 = only at the end)"},
      {"eval.sets", Kind::kPathList, false, REF(eval.sets), "JSONL perplexity sets"},
      {"eval.tokenizer", Kind::kString, false, REF(eval.tokenizer),
       "text encoder for the eval sets: dolma2 | bytes"},
      {"eval.leak_guard", Kind::kString, false, REF(eval.leak_guard),
       "scan every batch the loader emits for eval data: stop | warn | off"},
      {"eval.canaries", Kind::kPath, false, REF(eval.canaries),
       "registered canary set (JSONL of token ids), scored with its unregistered twin"},
      {"compute.device", Kind::kString, false, REF(compute.device),
       "which registered backend computes: cpu"},
      {"compute.precision", Kind::kString, false, REF(compute.precision),
       "how the model computes: fp32 | bf16 (bf16 matmul inputs, fp32 accumulation) | bf16-fsdp "
       "(every tensor rounded to bf16 where torch rounds it under OLMo-core's FSDP bf16)"},
      {"compute.isa", Kind::kString, false, REF(compute.isa),
       "cap on the CPU's instruction set: auto | avx2 | avx512 | amx (checked against the machine "
       "when the run starts)"},
      {"compute.torch_cpu", Kind::kString, false, REF(compute.torch_cpu),
       "bf16-fsdp: the CPU kind whose torch kernels it follows: auto (this machine's) | avx2 | "
       "avx512 (the kind the reference run was made on; checked when the run starts)"},
      {"parallel.sharding", Kind::kString, false, REF(parallel.sharding),
       "what ranks shard: zero1 (Adam m, v) | zero3 (parameters, gradients, Adam m, v)"},
      {"parallel.memory_per_rank", Kind::kString, false, REF(parallel.memory_per_rank),
       "memory one rank may use, bytes or e.g. 24GiB (0: physical memory / ranks on this host); "
       "what train.recompute auto plans against"},
      {"parallel.prefetch", Kind::kBool, false, REF(parallel.prefetch),
       "zero3: gather the next unit's weights while this one computes (one more unit buffer)"},
      {"parallel.context_parallel_degree", Kind::kInt, false,
       REF(parallel.context_parallel_degree),
       "the reference's context-parallel degree (OLMo-core cp_config.degree); replica computes "
       "each sequence on one rank, plan shows per-rank memory and K/V traffic at this degree"},
      {"fault.kill_at_step", Kind::kInt, false, REF(fault.kill_at_step),
       "test hook: SIGKILL itself after this step (0 = off)"},
      {"fault.kill_in_checkpoint", Kind::kInt, false, REF(fault.kill_in_checkpoint),
       "test hook: SIGKILL itself while writing this step's checkpoint (0 = off)"},
      {"fault.kill_in_checkpoint_phase", Kind::kString, false, REF(fault.kill_in_checkpoint_phase),
       "where in the checkpoint write: files | before_done"},
  };
  return fields;
}
#undef REF

// Keys of the model section: Hugging Face config.json names, as ModelConfig::FromHfJson reads them.
struct ModelKey {
  const char* key;
  Kind kind;
  bool nullable;
};
const std::vector<ModelKey>& ModelKeys() {
  static const std::vector<ModelKey> keys = {
      {"model_type", Kind::kString, false},
      {"vocab_size", Kind::kInt, false},
      {"hidden_size", Kind::kInt, false},
      {"intermediate_size", Kind::kInt, false},
      {"num_hidden_layers", Kind::kInt, false},
      {"num_attention_heads", Kind::kInt, false},
      {"num_key_value_heads", Kind::kInt, false},
      {"head_dim", Kind::kInt, false},
      {"rms_norm_eps", Kind::kDouble, false},
      {"rope_theta", Kind::kDouble, true},
      {"rope_scaling", Kind::kJsonMap, true},
      {"rope_parameters", Kind::kJsonMap, true},
      {"sliding_window", Kind::kInt, true},
      {"layer_types", Kind::kStringList, false},
      {"max_position_embeddings", Kind::kInt, true},
      {"initializer_range", Kind::kDouble, false},
      {"tie_word_embeddings", Kind::kBool, false},
      {"pad_token_id", Kind::kInt, true},
      {"eos_token_id", Kind::kInt, true},
      {"bos_token_id", Kind::kInt, true},
  };
  return keys;
}

const std::set<std::string>& Sections() {
  static const std::set<std::string> s = {"model", "init", "data", "train", "train.skip_step",
                                          "optim", "optim.schedule", "checkpoint", "eval", "compute",
                                          "parallel", "fault"};
  return s;
}

const Field* FindField(const std::string& key) {
  for (const Field& f : Fields())
    if (key == f.key) return &f;
  return nullptr;
}

const ModelKey* FindModelKey(const std::string& key) {
  for (const ModelKey& k : ModelKeys())
    if (key == k.key) return &k;
  return nullptr;
}

std::string KnownKeysOf(const std::string& section) {
  std::string out;
  auto add = [&](const std::string& k) { out += (out.empty() ? "" : ", ") + k; };
  if (section == "model") {
    add("hf_config");
    for (const ModelKey& k : ModelKeys()) add(k.key);
    return out;
  }
  const std::string prefix = section.empty() ? "" : section + ".";
  std::set<std::string> seen;
  for (const Field& f : Fields()) {
    std::string k = f.key;
    if (k.rfind(prefix, 0) != 0) continue;
    std::string rest = k.substr(prefix.size());
    std::string first = rest.substr(0, rest.find('.'));
    if (seen.insert(first).second) add(first);
  }
  if (section.empty()) add("model");
  return out;
}

// What follows "unknown config key 'KEY'" when KEY's section is `section`: that section's keys, or,
// when the section itself does not exist, the sections there are (and the nearest one).
std::string UnknownKeyHint(const std::string& section) {
  if (section.empty() || Sections().count(section))
    return fmt::format("known keys in {}: {}", section.empty() ? "the top level" : "'" + section + "'",
                       KnownKeysOf(section));
  std::vector<std::string> names(Sections().begin(), Sections().end());
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  const std::optional<std::string> near = ClosestMatch(section, names);
  return fmt::format("there is no section '{}'{}; the sections are {}", section,
                     near ? " (did you mean '" + *near + "'?)" : "", list);
}

std::string Where(const std::string& origin) { return origin.empty() ? "" : origin + ": "; }

// --- scalar parsing with precise errors ---

std::string ScalarText(const YAML::Node& n) {
  return n.IsScalar() ? n.Scalar() : n.IsNull() ? "null" : n.IsSequence() ? "a list" : "a mapping";
}

[[noreturn]] void TypeError(const std::string& origin, const std::string& key, Kind kind,
                            const YAML::Node& n) {
  Fail("{}config key '{}': expected {}, got '{}'", Where(origin), key, KindName(kind),
       ScalarText(n));
}

int64_t ParseInt(const std::string& origin, const std::string& key, const YAML::Node& n,
                 Kind kind = Kind::kInt) {
  if (!n.IsScalar()) TypeError(origin, key, kind, n);
  std::string s = n.Scalar();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  // Accept integral floats such as 1e6 or 4.0, as people write step counts that way.
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::floor(d) == d &&
      std::fabs(d) < 9.007199254740992e15)
    return static_cast<int64_t>(d);
  TypeError(origin, key, kind, n);
}

double ParseDouble(const std::string& origin, const std::string& key, const YAML::Node& n) {
  if (!n.IsScalar()) TypeError(origin, key, Kind::kDouble, n);
  const std::string& s = n.Scalar();
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(d))
    TypeError(origin, key, Kind::kDouble, n);
  return d;
}

bool ParseBool(const std::string& origin, const std::string& key, const YAML::Node& n) {
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "off") return false;
  }
  TypeError(origin, key, Kind::kBool, n);
}

std::string ParseString(const std::string& origin, const std::string& key, const YAML::Node& n,
                        Kind kind = Kind::kString) {
  if (n.IsNull()) return "";
  if (!n.IsScalar()) TypeError(origin, key, kind, n);
  return n.Scalar();
}

std::string ResolvePath(const std::string& p, const std::string& base) {
  if (p.empty()) return p;
  fs::path path(p);
  if (path.is_relative()) path = fs::path(base) / path;
  return path.lexically_normal().string();
}

template <typename F>
auto ParseList(const std::string& origin, const std::string& key, const YAML::Node& n, Kind kind,
               F element) {
  std::vector<decltype(element(n))> out;
  if (n.IsNull()) return out;
  if (n.IsScalar()) {  // a single value stands for a one-element list (handy with --set)
    out.push_back(element(n));
    return out;
  }
  if (!n.IsSequence()) TypeError(origin, key, kind, n);
  for (const YAML::Node& e : n) {
    if (!e.IsScalar()) TypeError(origin, key, kind, e);
    out.push_back(element(e));
  }
  return out;
}

// --- loading ---

// The text of a mapping key; Error naming where it is when the key is not a plain scalar (YAML
// allows "? [a, b]: 1", a sequence or mapping as a key, which no config key is).
std::string KeyName(const YAML::Node& key, const std::string& origin, const std::string& within) {
  if (!key.IsScalar())
    Fail("{}line {}, column {}: a config key must be a plain name, got a {} (in {})",
         origin.empty() ? "" : origin + ": ", key.Mark().line + 1, key.Mark().column + 1,
         key.IsMap() ? "mapping" : key.IsSequence() ? "sequence" : "null", within);
  return key.Scalar();
}

struct Entry {
  std::string key;  // dotted path
  YAML::Node value;
  std::string base;    // directory relative paths resolve against
  std::string origin;  // file name or "--set"
};

// yaml-cpp keeps every entry of a mapping with a repeated key, and lookups see only one of them;
// a file that sets one key twice is refused rather than one value silently winning.
void RequireOnce(std::set<std::string>& seen, const std::string& key, const std::string& origin) {
  Require(seen.insert(key).second,
          "{}config key '{}' appears more than once (remove all but one)", Where(origin), key);
}

// Dotted keys of one file, in file order. `seen` holds the keys and sections met so far.
void Collect(const YAML::Node& node, const std::string& prefix, const std::string& base,
             const std::string& origin, std::vector<Entry>& out, std::set<std::string>& seen) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string k =
        KeyName(it->first, origin, prefix.empty() ? "the top level" : "'" + prefix + "'");
    const std::string full = prefix.empty() ? k : prefix + "." + k;
    RequireOnce(seen, full, origin);
    // By value: the iterator's pair is a temporary proxy, a reference to its node would dangle.
    const YAML::Node v = it->second;
    if (Sections().count(full)) {
      if (v.IsNull()) continue;
      Require(v.IsMap(), "{}config key '{}': expected a mapping (a section), got '{}'",
              Where(origin), full, ScalarText(v));
      Collect(v, full, base, origin, out, seen);
      continue;
    }
    const bool model_key = prefix == "model" && (k == "hf_config" || FindModelKey(k));
    if (!model_key && !FindField(full)) {
      Fail("{}unknown config key '{}' ({})", Where(origin), full, UnknownKeyHint(prefix));
    }
    out.push_back({full, v, base, origin});
  }
}

Entry ParseOverride(const std::string& text) {
  const size_t eq = text.find('=');
  Require(eq != std::string::npos && eq > 0,
          "--set '{}': expected key=value with a dotted key, e.g. train.max_steps=100", text);
  Entry e;
  e.key = text.substr(0, eq);
  const std::string value = text.substr(eq + 1);
  try {
    e.value = YAML::Load(value);
  } catch (const YAML::Exception&) {
    e.value = YAML::Node(value);  // not YAML (e.g. a glob starting with '*'): take it literally
  }
  e.base = fs::current_path().string();
  e.origin = "--set " + e.key;
  const size_t dot = e.key.rfind('.');
  const std::string section = dot == std::string::npos ? "" : e.key.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? e.key : e.key.substr(dot + 1);
  if (Sections().count(e.key))
    Fail("--set '{}': '{}' is a section; set one of its keys ({})", text, e.key,
         KnownKeysOf(e.key));
  const bool model_key = section == "model" && (leaf == "hf_config" || FindModelKey(leaf));
  if (!model_key && !FindField(e.key))
    Fail("--set: unknown config key '{}' ({})", e.key, UnknownKeyHint(section));
  return e;
}

std::vector<RunConfig::MixtureSource> ParseMixture(const Entry& e) {
  const std::string& o = e.origin;
  std::vector<RunConfig::MixtureSource> out;
  if (e.value.IsNull()) return out;
  if (!e.value.IsSequence()) TypeError(o, e.key, Kind::kMixture, e.value);
  for (size_t i = 0; i < e.value.size(); ++i) {
    const YAML::Node& n = e.value[i];
    const std::string at = fmt::format("{}[{}]", e.key, i);
    if (!n.IsMap()) TypeError(o, at, Kind::kMixture, n);
    RunConfig::MixtureSource src;
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = KeyName(it->first, o, at);
      const std::string key = at + "." + k;
      RequireOnce(seen, key, o);
      // By value: the iterator's pair is a temporary proxy, a reference to its node would dangle.
      const YAML::Node v = it->second;
      if (k == "name") {
        src.name = ParseString(o, key, v);
      } else if (k == "paths") {
        src.paths = ParseList(o, key, v, Kind::kPathList, [&](const YAML::Node& x) {
          return ResolvePath(ParseString(o, key, x, Kind::kPathList), e.base);
        });
      } else if (k == "weight") {
        src.weight = ParseDouble(o, key, v);
      } else if (k == "tokens") {
        src.tokens = ParseInt(o, key, v);
      } else if (k == "max_repetition") {
        src.max_repetition = ParseDouble(o, key, v);
      } else {
        Fail("{}unknown config key '{}' (a mixture source has: name, paths, weight, tokens, "
             "max_repetition)",
             Where(o), key);
      }
    }
    out.push_back(std::move(src));
  }
  return out;
}

void ApplyField(RunConfig& c, const Field& f, const Entry& e) {
  void* p = f.ref(c);
  const std::string& o = e.origin;
  switch (f.kind) {
    case Kind::kInt: *static_cast<int64_t*>(p) = ParseInt(o, e.key, e.value); break;
    case Kind::kSeed: {
      // A seed is an exact integer within int64, written as one (no float notation such as
      // 1.5e3); a negative one is refused by Validate, naming the range.
      const std::string t = e.value.IsScalar() ? e.value.Scalar() : "";
      int64_t v = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size())
        TypeError(o, e.key, Kind::kSeed, e.value);
      *static_cast<int64_t*>(p) = v;
      break;
    }
    case Kind::kUnsignedSeed: {
      // As kSeed, for a key into the unsigned RNG stream: digits only, no float notation.
      const std::string t = e.value.IsScalar() ? e.value.Scalar() : "";
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size())
        TypeError(o, e.key, Kind::kUnsignedSeed, e.value);
      *static_cast<uint64_t*>(p) = v;
      break;
    }
    case Kind::kDouble: *static_cast<double*>(p) = ParseDouble(o, e.key, e.value); break;
    case Kind::kBool: *static_cast<bool*>(p) = ParseBool(o, e.key, e.value); break;
    case Kind::kString: *static_cast<std::string*>(p) = ParseString(o, e.key, e.value); break;
    case Kind::kPath:
      *static_cast<std::string*>(p) =
          ResolvePath(ParseString(o, e.key, e.value, Kind::kPath), e.base);
      break;
    case Kind::kStringList:
      *static_cast<std::vector<std::string>*>(p) =
          ParseList(o, e.key, e.value, f.kind,
                    [&](const YAML::Node& n) { return ParseString(o, e.key, n, f.kind); });
      break;
    case Kind::kPathList:
      *static_cast<std::vector<std::string>*>(p) =
          ParseList(o, e.key, e.value, f.kind, [&](const YAML::Node& n) {
            return ResolvePath(ParseString(o, e.key, n, f.kind), e.base);
          });
      break;
    case Kind::kDoubleList:
      *static_cast<std::vector<double>*>(p) = ParseList(
          o, e.key, e.value, f.kind, [&](const YAML::Node& n) { return ParseDouble(o, e.key, n); });
      break;
    case Kind::kMixture:
      *static_cast<std::vector<RunConfig::MixtureSource>*>(p) = ParseMixture(e);
      break;
    case Kind::kJsonMap:  // a model key's kind (ModelKeys); no RunConfig field has it
      Fail("config key '{}': internal error: a mapping field outside the model section", e.key);
  }
}

// A YAML mapping as JSON: quoted scalars stay strings; plain ones become integers, numbers,
// booleans or null where they read as such.
nlohmann::json YamlToJson(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (auto it = n.begin(); it != n.end(); ++it)
      o[KeyName(it->first, "", "a model value")] = YamlToJson(it->second);
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const YAML::Node& e : n) a.push_back(YamlToJson(e));
    return a;
  }
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted
  int64_t i = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (!s.empty() && ec == std::errc() && p == s.data() + s.size()) return i;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d)) return d;
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  if (s == "null" || s == "~") return nullptr;
  return s;
}

nlohmann::json ModelValue(const ModelKey& mk, const Entry& e) {
  const std::string& o = e.origin;
  if (mk.nullable && e.value.IsNull()) return nullptr;
  switch (mk.kind) {
    case Kind::kInt: return ParseInt(o, e.key, e.value);
    case Kind::kDouble: return ParseDouble(o, e.key, e.value);
    case Kind::kBool: return ParseBool(o, e.key, e.value);
    case Kind::kStringList:
      return ParseList(o, e.key, e.value, mk.kind,
                       [&](const YAML::Node& n) { return ParseString(o, e.key, n); });
    case Kind::kJsonMap:
      if (!e.value.IsMap()) TypeError(o, e.key, mk.kind, e.value);
      return YamlToJson(e.value);
    default: return ParseString(o, e.key, e.value);
  }
}

// Builds the model from model.hf_config (the base) and inline HF keys (which win).
ModelConfig ResolveModel(const std::vector<Entry>& entries, const std::string& source) {
  nlohmann::json j;
  std::string hf_path;
  std::map<std::string, nlohmann::json> inline_keys;
  for (const Entry& e : entries) {
    if (e.key == "model.hf_config") {
      hf_path = ResolvePath(ParseString(e.origin, e.key, e.value, Kind::kPath), e.base);
    } else if (e.key.rfind("model.", 0) == 0) {
      const std::string k = e.key.substr(6);
      inline_keys[k] = ModelValue(*FindModelKey(k), e);
    }
  }
  Require(!hf_path.empty() || !inline_keys.empty(),
          "{}config section 'model' is missing: give model.hf_config (a Hugging Face config.json) "
          "or the shape inline ({})",
          Where(source), KnownKeysOf("model"));
  if (!hf_path.empty()) {
    j = ParseJson(ReadFile(hf_path), "config key 'model.hf_config': " + hf_path);
    Require(j.is_object(), "config key 'model.hf_config': {} is not a JSON object", hf_path);
  } else {
    j = nlohmann::json::object();
    j["model_type"] = "olmo3";
    j["hidden_act"] = "silu";
    j["tie_word_embeddings"] = false;
    j["attention_bias"] = false;
  }
  // Changing the depth inline without new layer_types means "the default pattern for that depth".
  if (inline_keys.count("num_hidden_layers") && !inline_keys.count("layer_types"))
    j.erase("layer_types");
  for (auto& [k, v] : inline_keys) j[k] = v;
  const std::string name = hf_path.empty() ? "config section 'model'" : hf_path;
  return ModelConfig::FromHfJson(j, name);
}

// `origin_of` maps each key given to the origin ("FILE" or "--set KEY") of its last value, so an
// error blames where the value came from; keys left at their defaults are the file's.
void Validate(RunConfig& c, const std::string& source,
              const std::map<std::string, std::string>& origin_of) {
  auto W = [&](const std::string& key) {
    auto it = origin_of.find(key);
    return Where(it == origin_of.end() ? source : it->second);
  };
  auto positive = [&](int64_t v, const char* key) {
    Require(v > 0, "{}config key '{}': expected a positive integer, got {}", W(key), key, v);
  };
  auto non_negative = [&](int64_t v, const char* key) {
    Require(v >= 0, "{}config key '{}': expected >= 0, got {}", W(key), key, v);
  };
  positive(c.data.seq_len, "data.seq_len");
  positive(c.train.max_steps, "train.max_steps");
  positive(c.train.global_batch_instances, "train.global_batch_instances");
  auto at_most = [&](int64_t v, int64_t max, const char* key) {
    Require(v <= max, "{}config key '{}': {} is larger than {}, the most replica accepts", W(key), key,
            v, max);
  };
  at_most(c.data.seq_len, int64_t{1} << 24, "data.seq_len");
  at_most(c.train.global_batch_instances, int64_t{1} << 31, "train.global_batch_instances");
  // Tokens per step and per run are counted in int64.
  try {
    const int64_t per_step =
        CheckedMul(c.train.global_batch_instances, c.data.seq_len,
                   "'train.global_batch_instances' * 'data.seq_len' (tokens per step)");
    (void)CheckedMul(c.train.max_steps, per_step, "'train.max_steps' * tokens per step");
  } catch (const Error& e) {
    Fail("{}config: {}", W("train.max_steps"), e.what());
  }
  non_negative(c.train.micro_batch_instances, "train.micro_batch_instances");
  if (c.train.micro_batch_instances == 0)
    c.train.micro_batch_instances = c.train.global_batch_instances;
  Require(c.train.global_batch_instances % c.train.micro_batch_instances == 0,
          "{}config key 'train.micro_batch_instances': {} does not divide "
          "train.global_batch_instances ({})",
          W("train.micro_batch_instances"), c.train.micro_batch_instances,
          c.train.global_batch_instances);
  non_negative(c.train.threads, "train.threads");
  at_most(c.train.threads, kMaxThreads, "train.threads");
  positive(c.train.log_interval, "train.log_interval");
  Require(c.train.z_loss_multiplier >= 0,
          "{}config key 'train.z_loss_multiplier': expected >= 0, got {}",
          W("train.z_loss_multiplier"), c.train.z_loss_multiplier);
  positive(c.train.skip_step.window, "train.skip_step.window");
  Require(c.train.skip_step.min_history >= 3,
          "{}config key 'train.skip_step.min_history': expected >= 3 (std needs 2 values), got {}",
          W("train.skip_step.min_history"), c.train.skip_step.min_history);
  Require(c.train.skip_step.sigma > 0, "{}config key 'train.skip_step.sigma': expected > 0",
          W("train.skip_step.sigma"));
  if (!c.data.mixture.empty()) {
    Require(c.data.paths.empty(),
            "{}config keys 'data.paths' and 'data.mixture': give one of them, not both",
            W("data.paths"));
    std::set<std::string> names;
    for (size_t i = 0; i < c.data.mixture.size(); ++i) {
      const RunConfig::MixtureSource& m = c.data.mixture[i];
      const std::string at = fmt::format("data.mixture[{}]", i);
      Require(!m.name.empty() && names.insert(m.name).second,
              "{}config key '{}.name': expected a unique, non-empty name", W("data.mixture"), at);
      Require(!m.paths.empty(), "{}config key '{}.paths': expected at least one path",
              W("data.mixture"), at);
      Require(m.max_repetition >= 1, "{}config key '{}.max_repetition': expected >= 1, got {}",
              W("data.mixture"), at, m.max_repetition);
      if (c.data.mixture_tokens > 0) {
        Require(m.weight > 0,
                "{}config key '{}.weight': expected > 0 (data.mixture_tokens splits "
                "by weight), got {}",
                W("data.mixture"), at, m.weight);
      } else {
        Require(m.tokens > 0,
                "{}config key '{}.tokens': expected > 0 (or set "
                "data.mixture_tokens and weights), got {}",
                W("data.mixture"), at, m.tokens);
      }
    }
  }
  Require(c.data.mixture_tokens >= 0, "{}config key 'data.mixture_tokens': expected >= 0",
          W("data.mixture_tokens"));
  Require(c.data.mixture_seed >= 0, "{}config key 'data.mixture_seed': expected >= 0",
          W("data.mixture_seed"));
  Require(c.data.seed >= 0,
          "{}config key 'data.seed': expected >= 0, got {} (the data order is numpy's PCG64 seeded "
          "with seed + epoch, as in OLMo-core, and numpy refuses negative seeds)",
          W("data.seed"), c.data.seed);
  Require(c.data.source_permutation_seed.empty() ||
              PythonIntMagnitude(c.data.source_permutation_seed).has_value(),
          "{}config key 'data.source_permutation_seed': expected an integer (decimal digits, "
          "optionally '-', magnitude below 2^64) or nothing, got '{}'",
          W("data.source_permutation_seed"), c.data.source_permutation_seed);
  Require(c.data.source_permutation_seed.empty() || c.data.mixture.empty(),
          "{}config key 'data.source_permutation_seed': applies to data.paths, not to "
          "data.mixture", W("data.source_permutation_seed"));
  Require(c.data.dtype == "uint32" || c.data.dtype == "uint16",
          "{}config key 'data.dtype': expected uint32 or uint16, got '{}'", W("data.dtype"),
          c.data.dtype);
  Require(c.data.packing == "none" || c.data.packing == "obfd",
          "{}config key 'data.packing': expected none or obfd, got '{}'", W("data.packing"),
          c.data.packing);
  Require(c.data.long_doc_strategy == "truncate" || c.data.long_doc_strategy == "fragment",
          "{}config key 'data.long_doc_strategy': expected truncate or fragment (OLMo-core's "
          "LongDocStrategy), got '{}'",
          W("data.long_doc_strategy"), c.data.long_doc_strategy);
  Require(c.data.source_group_size >= 1,
          "{}config key 'data.source_group_size': expected >= 1, got {}",
          W("data.source_group_size"), c.data.source_group_size);
  if (c.data.packing == "none") {
    for (const auto& [key, is_default] :
         {std::pair<const char*, bool>{"data.long_doc_strategy",
                                       c.data.long_doc_strategy == "truncate"},
          {"data.source_group_size", c.data.source_group_size == 1}})
      Require(is_default, "{}config key '{}': applies to packed instances only; set "
              "data.packing: obfd", W(key), key);
  } else {
    const int64_t T = c.data.seq_len;
    Require(T >= 2 && (T & (T - 1)) == 0,
            "{}config key 'data.seq_len': {} is not a power of two, which data.packing: obfd "
            "needs (OLMo-core's OBFD packer asserts it)",
            W("data.seq_len"), T);
    Require(c.data.mixture.empty(),
            "{}config key 'data.packing': obfd packs data.paths, not data.mixture",
            W("data.packing"));
    Require(c.model.eos_token_id >= 0 && c.model.pad_token_id >= 0,
            "{}config key 'data.packing': obfd needs model.eos_token_id (document ends) and "
            "model.pad_token_id (padding) set",
            W("data.packing"));
  }
  Require(!c.data.generate_doc_lengths || c.model.eos_token_id >= 0,
          "{}config key 'data.generate_doc_lengths': document lengths need model.eos_token_id "
          "(get_document_lengths ends a document at each EOS)",
          W("data.generate_doc_lengths"));
  Require(c.data.dtype == "uint32" || c.model.vocab_size <= 65536,
          "{}config key 'data.dtype': uint16 cannot hold ids of a {}-row vocabulary",
          W("data.dtype"), c.model.vocab_size);
  Require(IsUpdateRuleType(c.optim.type), "{}config key 'optim.type': unknown update rule '{}' "
          "(known: {})", W("optim.type"), c.optim.type, fmt::join(UpdateRuleTypes(), ", "));
  Require(c.optim.betas.size() == 2 && c.optim.betas[0] >= 0 && c.optim.betas[0] < 1 &&
              c.optim.betas[1] >= 0 && c.optim.betas[1] < 1,
          "{}config key 'optim.betas': expected [beta1, beta2] with both in [0, 1)",
          W("optim.betas"));
  Require(c.optim.eps > 0, "{}config key 'optim.eps': expected > 0, got {}", W("optim.eps"),
          c.optim.eps);
  Require(c.optim.weight_decay >= 0, "{}config key 'optim.weight_decay': expected >= 0, got {}",
          W("optim.weight_decay"), c.optim.weight_decay);
  Require(c.optim.max_grad_norm >= 0, "{}config key 'optim.max_grad_norm': expected >= 0, got {}",
          W("optim.max_grad_norm"), c.optim.max_grad_norm);
  c.optim.schedule.type = ParseScheduleType(c.optim.schedule_type, "optim.schedule.type");
  if (c.optim.schedule.t_max == 0 && c.optim.schedule.type != ScheduleType::kConstant) {
    c.optim.schedule.t_max = c.train.max_steps;
    // A short run of a longer config (a smoke run): the schedule shrinks with max_steps, the
    // warm-up does not, and nothing scales it behind the user's back.
    Require(c.optim.schedule.type == ScheduleType::kWsd ||
                c.optim.schedule.warmup < c.train.max_steps,
            "{}config key 'optim.schedule.warmup': the warm-up of {} steps does not end before "
            "train.max_steps {} (the schedule's t_max follows train.max_steps); for a run this "
            "short shorten the warm-up too, e.g. --set optim.schedule.warmup={}",
            W("optim.schedule.warmup"), c.optim.schedule.warmup, c.train.max_steps,
            c.train.max_steps / 2);
  }
  ValidateSchedule(c.optim.schedule, c.optim.lr);
  non_negative(c.checkpoint.interval, "checkpoint.interval");
  positive(c.checkpoint.keep, "checkpoint.keep");
  non_negative(c.eval.interval, "eval.interval");
  Require(c.eval.tokenizer == "dolma2" || c.eval.tokenizer == "bytes",
          "{}config key 'eval.tokenizer': expected dolma2 or bytes, got '{}'", W("eval.tokenizer"),
          c.eval.tokenizer);
  Require(c.eval.leak_guard == "stop" || c.eval.leak_guard == "warn" || c.eval.leak_guard == "off",
          "{}config key 'eval.leak_guard': expected stop, warn or off, got '{}'",
          W("eval.leak_guard"), c.eval.leak_guard);
  if (const std::string p = CanonicalPrecision(c.compute.precision); !p.empty())
    c.compute.precision = p;  // f32, float32, bfloat16: one spelling in config.yaml and its hash
  ParsePrecision(c.compute.precision, W("compute.precision") + "config key 'compute.precision'");
  Require(!c.compute.torch_cpu.empty(), "{}config key 'compute.torch_cpu': empty (auto, avx2 or "
          "avx512)", W("compute.torch_cpu"));
  Require(!c.compute.isa.empty(), "{}config key 'compute.isa': empty (auto, or a cap the device "
          "names: the run checks it against its machine)", W("compute.isa"));
  Require(c.train.micro_batch_layout == "strided" || c.train.micro_batch_layout == "contiguous",
          "{}config key 'train.micro_batch_layout': expected strided or contiguous, got '{}'",
          W("train.micro_batch_layout"), c.train.micro_batch_layout);
  Require(c.train.grad_accumulation == "tree" || c.train.grad_accumulation == "sequential",
          "{}config key 'train.grad_accumulation': expected tree or sequential, got '{}'",
          W("train.grad_accumulation"), c.train.grad_accumulation);
  Require(c.parallel.sharding == "zero1" || c.parallel.sharding == "zero3",
          "{}config key 'parallel.sharding': expected zero1 or zero3, got '{}'",
          W("parallel.sharding"), c.parallel.sharding);
  Require(c.parallel.sharding != "zero3" || c.train.grad_accumulation == "sequential",
          "{}config keys 'parallel.sharding' (zero3) and 'train.grad_accumulation' ({}): zero3 "
          "folds micro-batch gradients into each owner's shard in micro-batch order; set "
          "train.grad_accumulation: sequential",
          W("parallel.sharding"), c.train.grad_accumulation);
  if (c.train.recompute != "auto")
    ParseRecompute(c.train.recompute, W("train.recompute") + "config key 'train.recompute' (or auto)");
  Require(c.parallel.context_parallel_degree >= 1 &&
              c.data.seq_len % c.parallel.context_parallel_degree == 0,
          "{}config key 'parallel.context_parallel_degree': expected an integer >= 1 dividing "
          "data.seq_len ({}), got {}",
          W("parallel.context_parallel_degree"), c.data.seq_len,
          c.parallel.context_parallel_degree);
  ParseByteSize(c.parallel.memory_per_rank,
                W("parallel.memory_per_rank") + "config key 'parallel.memory_per_rank'");
  non_negative(c.fault.kill_at_step, "fault.kill_at_step");
  non_negative(c.fault.kill_in_checkpoint, "fault.kill_in_checkpoint");
  Require(c.fault.kill_in_checkpoint_phase == "files" ||
              c.fault.kill_in_checkpoint_phase == "before_done",
          "{}config key 'fault.kill_in_checkpoint_phase': expected files or before_done, got '{}'",
          W("fault.kill_in_checkpoint_phase"), c.fault.kill_in_checkpoint_phase);
}

// --- canonical rendering ---

std::string Num(double v) { return fmt::format("{}", v); }

void EmitValue(YAML::Emitter& e, Kind kind, const void* p) {
  switch (kind) {
    case Kind::kInt: e << *static_cast<const int64_t*>(p); break;
    case Kind::kUnsignedSeed: e << *static_cast<const uint64_t*>(p); break;
    case Kind::kSeed: e << *static_cast<const int64_t*>(p); break;
    case Kind::kDouble: e << Num(*static_cast<const double*>(p)); break;
    case Kind::kBool: e << (*static_cast<const bool*>(p) ? "true" : "false"); break;
    case Kind::kString:
    case Kind::kPath: e << YAML::DoubleQuoted << *static_cast<const std::string*>(p); break;
    case Kind::kStringList:
    case Kind::kPathList:
      e << YAML::Flow << YAML::BeginSeq;
      for (const auto& s : *static_cast<const std::vector<std::string>*>(p))
        e << YAML::DoubleQuoted << s;
      e << YAML::EndSeq;
      break;
    case Kind::kDoubleList:
      e << YAML::Flow << YAML::BeginSeq;
      for (double d : *static_cast<const std::vector<double>*>(p)) e << Num(d);
      e << YAML::EndSeq;
      break;
    case Kind::kMixture: {
      const auto& sources = *static_cast<const std::vector<RunConfig::MixtureSource>*>(p);
      if (sources.empty()) e << YAML::Flow;
      e << YAML::BeginSeq;
      for (const auto& m : sources) {
        e << YAML::Flow << YAML::BeginMap;
        e << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << m.name;
        e << YAML::Key << "paths" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const auto& path : m.paths) e << YAML::DoubleQuoted << path;
        e << YAML::EndSeq;
        e << YAML::Key << "weight" << YAML::Value << Num(m.weight);
        e << YAML::Key << "tokens" << YAML::Value << m.tokens;
        e << YAML::Key << "max_repetition" << YAML::Value << Num(m.max_repetition);
        e << YAML::EndMap;
      }
      e << YAML::EndSeq;
      break;
    }
    case Kind::kJsonMap:  // a model key's kind; the model section is emitted as JSON values
      Fail("canonical config: internal error: a mapping field outside the model section");
  }
}

// The model section as HF keys, in ModelKeys() order.
std::vector<std::pair<std::string, std::string>> ModelCanonical(const ModelConfig& m) {
  const nlohmann::json rope = m.ToHfJson();
  auto id = [](int64_t v) { return v < 0 ? std::string("null") : std::to_string(v); };
  std::string types = "[";
  for (size_t i = 0; i < m.layer_types.size(); ++i)
    types += std::string(i ? ", " : "") +
             (m.layer_types[i] == AttentionType::kSliding ? "sliding_attention" : "full_attention");
  types += "]";
  return {
      {"model_type", m.model_type},
      {"vocab_size", std::to_string(m.vocab_size)},
      {"hidden_size", std::to_string(m.hidden_size)},
      {"intermediate_size", std::to_string(m.intermediate_size)},
      {"num_hidden_layers", std::to_string(m.num_layers)},
      {"num_attention_heads", std::to_string(m.num_heads)},
      {"num_key_value_heads", std::to_string(m.num_kv_heads)},
      {"head_dim", std::to_string(m.head_dim)},
      {"rms_norm_eps", Num(m.rms_norm_eps)},
      // RoPE in the spelling config.json used (ModelConfig::ToHfJson); JSON text, or null.
      {"rope_theta", rope.contains("rope_theta") ? Num(rope["rope_theta"].get<double>()) : "null"},
      {"rope_scaling", rope.contains("rope_scaling") && !rope["rope_scaling"].is_null()
                           ? rope["rope_scaling"].dump() : "null"},
      {"rope_parameters", rope.contains("rope_parameters") ? rope["rope_parameters"].dump() : "null"},
      {"sliding_window", m.sliding_window > 0 ? std::to_string(m.sliding_window) : "null"},
      {"layer_types", types},
      {"max_position_embeddings",
       m.max_position_embeddings > 0 ? std::to_string(m.max_position_embeddings) : "null"},
      {"initializer_range", Num(m.initializer_range)},
      {"tie_word_embeddings", m.tie_word_embeddings ? "true" : "false"},
      {"pad_token_id", id(m.pad_token_id)},
      {"eos_token_id", id(m.eos_token_id)},
      {"bos_token_id", id(m.bos_token_id)},
  };
}

std::string Render(const RunConfig& c, bool trajectory_only) {
  RunConfig& mc = const_cast<RunConfig&>(c);  // Field::ref is non-const; nothing is written
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : ModelCanonical(c.model)) {
    const bool rope_map = k == "rope_scaling" || k == "rope_parameters";
    if (rope_map && v == "null") continue;  // absent: a plain-RoPE model renders as it always has
    e << YAML::Key << k << YAML::Value;
    if (k == "model_type") {
      e << YAML::DoubleQuoted << v;
    } else if (rope_map) {
      e << YAML::Flow << YAML::Load(v);
    } else if (k == "layer_types") {
      e << YAML::Flow << YAML::BeginSeq;
      for (AttentionType t : c.model.layer_types)
        e << (t == AttentionType::kSliding ? "sliding_attention" : "full_attention");
      e << YAML::EndSeq;
    } else if (v == "null") {
      e << YAML::Null;
    } else {
      e << v;
    }
  }
  e << YAML::EndMap;
  std::vector<std::string> open;  // currently open nested sections
  for (const Field& f : Fields()) {
    if (trajectory_only && !f.trajectory) continue;
    // Added after runs existed: its default (the only behaviour before it) leaves the trajectory
    // hash of those runs as it was.
    if (trajectory_only && f.key == std::string("train.grad_accumulation") &&
        c.train.grad_accumulation == "tree")
      continue;
    if (f.key == std::string("train.micro_batch_layout") && c.train.micro_batch_layout == "strided")
      continue;
    // Added after runs existed: the only device then (cpu) renders as before, so the canonical
    // config and both hashes of those runs are unchanged.
    if (f.key == std::string("compute.device") && c.compute.device == "cpu") continue;
    if (f.key == std::string("compute.torch_cpu") && c.compute.torch_cpu == "auto") continue;
    std::vector<std::string> parts;
    std::string k = f.key;
    for (size_t pos; (pos = k.find('.')) != std::string::npos; k = k.substr(pos + 1))
      parts.push_back(k.substr(0, pos));
    size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common])
      ++common;
    while (open.size() > common) {
      e << YAML::EndMap;
      open.pop_back();
    }
    for (size_t i = common; i < parts.size(); ++i) {
      e << YAML::Key << parts[i] << YAML::Value << YAML::BeginMap;
      open.push_back(parts[i]);
    }
    e << YAML::Key << k << YAML::Value;
    EmitValue(e, f.kind, f.ref(mc));
  }
  while (!open.empty()) {
    e << YAML::EndMap;
    open.pop_back();
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

RunConfig Build(const YAML::Node& root, const std::string& base, const std::string& source,
                const std::vector<std::string>& overrides) {
  std::vector<Entry> entries;
  if (root.IsDefined() && !root.IsNull()) {
    Require(root.IsMap(), "{}: expected a YAML mapping of sections (model, data, train, optim, ...)",
            source);
    std::set<std::string> seen;
    Collect(root, "", base, source, entries, seen);
  }
  for (const std::string& o : overrides) entries.push_back(ParseOverride(o));
  RunConfig c;
  c.source = source;
  c.model = ResolveModel(entries, source);
  for (const Entry& e : entries) {
    if (e.key.rfind("model.", 0) == 0) continue;
    ApplyField(c, *FindField(e.key), e);
  }
  std::map<std::string, std::string> origin_of;
  for (const Entry& e : entries) origin_of[e.key] = e.origin;
  Validate(c, source, origin_of);
  return c;
}

}  // namespace

RunConfig RunConfig::Load(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = ReadFile(path);
  RequireUtf8Text(text, path, "config files");
  const std::string base = fs::absolute(fs::path(path)).parent_path().string();
  return FromYaml(text, base, overrides, path);
}

RunConfig RunConfig::FromYaml(const std::string& text, const std::string& base_dir,
                              const std::vector<std::string>& overrides,
                              const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& ex) {
    Fail("{}: invalid YAML at line {}, column {}: {}", source, ex.mark.line + 1,
         ex.mark.column + 1, ex.msg);
  }
  return Build(root, base_dir, source, overrides);
}

std::string RunConfig::Canonical() const { return Render(*this, false); }
std::string RunConfig::Hash() const { return Sha256Hex(Canonical()); }
std::string RunConfig::TrajectoryHash() const { return Sha256Hex(Render(*this, true)); }

std::vector<std::string> TrajectoryDifferences(const RunConfig& a, const RunConfig& b) {
  std::vector<std::string> diffs;
  auto ma = ModelCanonical(a.model), mb = ModelCanonical(b.model);
  for (size_t i = 0; i < ma.size(); ++i)
    if (ma[i].second != mb[i].second) diffs.push_back("model." + ma[i].first);
  RunConfig& ca = const_cast<RunConfig&>(a);
  RunConfig& cb = const_cast<RunConfig&>(b);
  for (const Field& f : Fields()) {
    if (!f.trajectory) continue;
    YAML::Emitter ea, eb;
    EmitValue(ea, f.kind, f.ref(ca));
    EmitValue(eb, f.kind, f.ref(cb));
    if (std::string(ea.c_str()) != std::string(eb.c_str())) diffs.push_back(f.key);
  }
  return diffs;
}

std::string DescribeTrajectoryDifferences(const RunConfig& before, const RunConfig& now) {
  auto value_of = [](const RunConfig& c, const std::string& key) -> std::string {
    if (key.rfind("model.", 0) == 0) {
      for (const auto& [k, v] : ModelCanonical(c.model))
        if ("model." + k == key) return v;
      return "?";
    }
    const Field* f = FindField(key);
    if (f == nullptr) return "?";
    YAML::Emitter e;
    EmitValue(e, f->kind, f->ref(const_cast<RunConfig&>(c)));
    return e.c_str();
  };
  std::string out;
  for (const std::string& k : TrajectoryDifferences(before, now)) {
    const std::string was = value_of(before, k), is = value_of(now, k);
    out += fmt::format("{}{} (the run has {}, this config {}", out.empty() ? "" : "; ", k, was, is);
    // t_max follows train.max_steps unless given: extending a run changes it silently.
    if (k == "optim.schedule.t_max") out += fmt::format("; pin it with --set {}={}", k, was);
    out += ")";
  }
  return out;
}

std::vector<ConfigKeyInfo> ConfigKeys() {
  std::vector<ConfigKeyInfo> out;
  out.push_back({"model.hf_config", KindName(Kind::kPath),
                 "Hugging Face config.json giving the model shape (inline keys override it)",
                 true});
  for (const ModelKey& k : ModelKeys())
    out.push_back({std::string("model.") + k.key, KindName(k.kind), "Hugging Face config field",
                   true});
  for (const Field& f : Fields()) out.push_back({f.key, KindName(f.kind), f.help, f.trajectory});
  return out;
}

}  // namespace replica

// The importer's internals (run/olmo_core_config.h is the interface): the recipe it collects from
// config.json, the field-by-field reader of one JSON object, and the Importer whose readers
// (olmo_core_read_model.cc, olmo_core_read_train.cc, olmo_core_data.cc) fill the recipe. Then
// Decide (olmo_core_decide.cc) makes every cross-field decision and refusal and lists the replica
// keys, and RenderYaml (olmo_core_emit.cc) only writes them out.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "run/olmo_core_config.h"
#include "run/olmo_core_fields.h"
#include "run/olmo_core_yarn.h"

namespace replica::olmo_core {

using json = nlohmann::json;

inline constexpr const char* kClassKey = "_CLASS_";

// Bounds checked before anything is built from a size (the model's own bounds,
// model/model_config.cc), named by JSON path.
inline constexpr int64_t kMaxLayers = int64_t{1} << 16;
inline constexpr int64_t kMaxWidth = int64_t{1} << 24;
inline constexpr int64_t kMaxVocab = int64_t{1} << 31;

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
  bool first_full = true, last_full = true;  // the dataclass defaults
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
  bool scaling_present = false;         // rope.scaling given (YaRN or not, accepted or refused)
  std::optional<OlmoCoreYarn> yarn;     // rope.scaling, when it is an accepted YaRN config
  std::string yarn_path;                // its JSON path
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
  Src<std::string> source_permutation_seed;  // a Python integer, in decimal
  Src<std::string> packing;                  // "obfd" for NumpyPackedFSLDatasetConfig
  Src<std::string> long_doc_strategy;
  Src<int64_t> source_group_size;
  Src<bool> generate_doc_lengths;
  // data loader
  Src<int64_t> global_batch_tokens, data_seed;
  // train module
  Src<int64_t> rank_microbatch_tokens, max_sequence_length;
  Src<double> lr, eps, weight_decay, max_grad_norm, z_loss;
  Src<std::vector<double>> betas;
  Src<std::vector<std::string>> no_decay;
  bool skip_step = false;
  std::string data_parallel_path;  // train_module.dp_config, when the recipe shards over ranks
  Src<std::string> precision;      // "bf16" from param_dtype / autocast_precision
  Src<int64_t> context_parallel_degree;  // cp_config.degree
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

// One replica key with its value (YAML text) and the JSON path (or rule) it came from.
struct Line {
  std::string key, value, from;
};

// What the decisions have found so far: the keys, and the counts later sections need.
struct Decided {
  std::vector<Line> lines;
  std::string dtype;              // data.dtype
  int64_t instances = 0;          // per global batch
  int64_t tokens_per_step = 0;
  int64_t t_max = 0;              // trainer max steps (from max_duration); -1: needs the data
  std::string t_max_from;
};

std::string JoinPath(const std::string& a, const std::string& b);
std::string ShortClass(const std::string& cls);

class Importer;

// One JSON object of a field-by-field class: the readers take its mapped fields; Finish() applies
// the field table (run/olmo_core_fields.h) to every other key.
class Obj {
 public:
  Obj(Importer& im, const json& j, std::string path, const ClassRule& rule)
      : im_(im), j_(j), path_(std::move(path)), rule_(rule) {}
  const std::string& path() const { return path_; }
  const std::string& cls() const { return rule_.name; }
  std::string At(const std::string& key) const { return JoinPath(path_, key); }

  // The value of mapped field `key` (marked read), or nullptr when absent or null. Taking a field
  // the table does not list as mapped is a logic error (the table and the readers disagree).
  const json* Take(const std::string& key);
  // Whether `key` is given as null (None), for a field whose Python type is not Optional.
  bool IsNull(const std::string& key) const {
    auto it = j_.find(key);
    return it != j_.end() && it->is_null();
  }
  bool Has(const std::string& key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  // Typed takes: a value of the wrong type is refused with its path (and gives nullopt).
  std::optional<int64_t> Int(const std::string& key);
  std::optional<double> Num(const std::string& key);
  std::optional<bool> Bool(const std::string& key);
  std::optional<std::string> Str(const std::string& key);
  void Finish();

 private:
  Importer& im_;
  const json& j_;
  std::string path_;
  const ClassRule& rule_;
  std::set<std::string> taken_;
};

class Importer {
 public:
  Importer(const OlmoCoreImportOptions& o, std::string source)
      : opt_(o), source_(std::move(source)) {}

  OlmoCoreImport Run(const json& root);

  // substitute: what replica computes instead under --allow-unsupported ("" for nothing).
  void Refuse(const std::string& path, const std::string& reason,
              const std::string& substitute = "") {
    out_.refused.push_back({path, reason, "", substitute});
  }
  void Ignored(const std::string& path, const std::string& reason) {
    out_.ignored.push_back({path, reason, "", ""});
  }
  void Unresolved(const std::string& path, const std::string& reason, const std::string& key) {
    out_.unresolved.push_back({path, reason, key, ""});
  }

  // The rule of `j`'s class at `path` if it is a known class of `role` read field by field;
  // nullptr (after a refusal, or a note for a class accepted whole) when there is nothing to
  // read. Checks "type" against the class's registered name.
  const ClassRule* Dispatch(const json& j, const std::string& path, Role role);

 private:
  // readers (olmo_core_read_model.cc)
  void Model(const json& j, const std::string& path);
  std::optional<Block> ReadBlock(const json& j, const std::string& path);
  void ReadAttention(const json& j, const std::string& path, Block& b);
  void ReadYarn(const json& j, const std::string& path, Block& b);
  std::optional<double> ReadLayerNorm(const json& j, const std::string& path);
  // readers (olmo_core_read_train.cc)
  void Experiment(const json& j, const std::string& path);
  void DataLoader(const json& j, const std::string& path);
  void TrainModule(const json& j, const std::string& path);
  void Optim(const json& j, const std::string& path);
  void ReadSchedule(const json& j, const std::string& path);
  void Trainer(const json& j, const std::string& path);
  Duration ReadDuration(const json& j, const std::string& path);
  void Callback(const json& j, const std::string& path);
  void DataParallel(const json& j, const std::string& path);
  void ContextParallel(const json& j, const std::string& path);
  void Float8(const json& j, const std::string& path);
  // readers (olmo_core_data.cc)
  void Dataset(const json& j, const std::string& path);
  void Tokenizer(const json& j, const std::string& path);
  std::vector<std::string> ResolveMix(const std::string& mix, const std::string& mix_path,
                                      const std::string& base_dir);
  std::string MapPath(const std::string& p) const;
  // decisions (olmo_core_decide.cc)
  std::vector<Line> Decide();
  void DecideModel(Decided& d);
  void DecideInit(Decided& d);
  void DecideData(Decided& d);
  void DecideTrain(Decided& d);
  void DecideOptim(Decided& d);
  void DecideRest(Decided& d);
  void MapRopeScaling(const std::vector<int64_t>& windows, const Block& base, int64_t head_dim,
                      const std::function<void(std::string, std::string, std::string)>& add);

  const OlmoCoreImportOptions& opt_;
  std::string source_;
  Recipe r_;
  OlmoCoreImport out_;
  std::string mix_label_;
  Src<std::string> experiment_load_path_;  // ExperimentConfig.load_path
};

// The YAML text of `lines` (nested sections, the JSON path as a comment beside each key) with the
// notes of `im` in its header (olmo_core_emit.cc). Writes only; decides nothing.
std::string RenderYaml(const std::vector<Line>& lines, const OlmoCoreImport& im,
                       const std::string& source);

// Python's round() on a float: round half to even.
int64_t RoundHalfEven(double v);
std::string Num(double v);
std::string Quote(const std::string& s);

}  // namespace replica::olmo_core

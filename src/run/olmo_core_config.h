// OLMo-core experiment configs read as replica run configs (docs/olmo-core.md). OLMo-core saves the
// ExperimentConfig of every run as config.json (ConfigSaverCallback, Config.as_config_dict): nested
// objects each carrying "_CLASS_": "module.ClassName", None values left out, enums as values.
//
// Promises:
//   - dispatch is on "_CLASS_" through the field table (run/olmo_core_fields.h); an unknown class
//     is refused with its JSON path, never guessed from its keys, and "type" must be the class's
//     registered name;
//   - every field of a known class is mapped to a replica key, accepted with a stated reason (at
//     any value, or only at the values that change nothing), or refused with its JSON path (a
//     feature replica lacks: float8, document packing, RoPE scaling other than YaRN on exactly the
//     full-attention layers, ...); an unknown field of a known class is refused too; sizes are
//     bounded (by JSON path) before anything is built from them;
//   - both spellings of the attention block are read: block.sequence_mixer (OLMo-core since
//     2026-01) and block.attention (before), and per-layer model.block_overrides.<layer>: the
//     long-context stage's YaRNRoPEScalingConfig there becomes model.rope_scaling (transformers'
//     yarn on the full-attention layers, run/olmo_core_yarn.h);
//   - the result is replica YAML with the JSON path beside each key (as a comment), which
//     RunConfig::FromYaml reads: a run started from config.json and one started from the imported
//     YAML are the same config (same Canonical(), same trajectory);
//   - data: a mix (dataset.mix + mix_base_dir, one "label,path" a line with {TOKENIZER}) is read
//     from a local mix file, or the dataset's paths are taken as they are, or data_paths.txt (the
//     run's file list, in order) replaces them; --path-map prefixes make remote paths local.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/run_config.h"

namespace replica {

struct OlmoCoreImportOptions {
  std::string mix_dir;          // directory of OLMo-core mix files: <mix>.txt
  std::string mix_file;         // one mix file, whatever dataset.mix names
  std::string data_paths_file;  // data_paths.txt: the token files in order (replaces the dataset's)
  std::vector<std::string> path_map;  // "PREFIX=LOCAL": a path starting with PREFIX is rewritten
  // Report refusals instead of failing: plan reports every one; training goes on only past those
  // with a substitute (ImportNote::substitute), and names each.
  bool allow_unsupported = false;
  int64_t max_steps = 0;  // > 0: train.max_steps when the config stops after epochs of unknown data
  bool for_training = false;  // LoadRunConfig: unresolved data or checkpoint paths are errors
};

struct ImportNote {
  std::string json_path, reason;
  std::string replica_key;  // for unresolved notes: the key a --set may give instead
  // For refusals: what replica computes instead when allowed past it (--allow-unsupported), ""
  // when nothing can stand in and training stays refused.
  std::string substitute;
};

struct OlmoCoreImport {
  std::string yaml;                    // replica YAML, JSON path beside each key
  std::vector<ImportNote> ignored;     // fields with no effect on replica's training math
  std::vector<ImportNote> refused;     // fields replica cannot reproduce
  std::vector<ImportNote> unresolved;  // needed to train, not to plan (local data, checkpoint)
  bool needs_max_steps = false;        // hard stop in epochs and the dataset size is unknown

  // The dataset as OLMo-core reads it (for `replica data batch`).
  std::vector<std::string> data_paths;  // local token files, in order (empty: unresolved)
  int64_t seq_len = 0;
  std::string dtype = "uint32";
  uint64_t seed = 0;
  std::string source_permutation_seed;  // "" (None) or a Python integer: the file order's shuffle
  uint64_t global_batch_instances = 0;
  uint64_t tokenizer_vocab_size = 0;
  int64_t eos_token_id = -1, pad_token_id = -1, bos_token_id = -1;
  int64_t max_target_sequence_length = -1;  // -1: None
  // NumpyPackedFSLDatasetConfig: packing "obfd" (else "none") and its settings.
  std::string packing = "none", long_doc_strategy = "truncate";
  int64_t source_group_size = 1;
  bool generate_doc_lengths = false;  // of either dataset class: document lengths (cu_doc_lens)

  // Each replica key of `yaml` -> the JSON path (or rule) it came from, so that an error about a
  // replica key can name the OLMo-core field.
  std::map<std::string, std::string> sources;
};

// True for a JSON object with a "_CLASS_" key (an OLMo-core config).
bool IsOlmoCoreConfig(const nlohmann::json& j);

// Maps an OLMo-core ExperimentConfig. Refusals are collected in the result, not thrown; an Error
// only for options that cannot be used (unreadable mix or data_paths.txt, malformed --path-map).
OlmoCoreImport ImportOlmoCoreConfig(const nlohmann::json& j, const std::string& source,
                                    const OlmoCoreImportOptions& options);

// Error listing every refusal (JSON path: reason) unless there are none.
void RequireNoRefusals(const OlmoCoreImport& imported, const std::string& source);

// "\n  JSON path: reason" for each note.
std::string NotesText(const std::vector<ImportNote>& notes);

// RunConfig::FromYaml of the imported YAML; an error about a replica key names the JSON path it
// came from (run/load_run_config.cc).
RunConfig RunConfigFromImport(const OlmoCoreImport& imported, const std::string& source,
                              const std::vector<std::string>& overrides);

// Reads `path` and returns it parsed when it is an OLMo-core config.json (a JSON object with
// "_CLASS_", after an optional UTF-8 byte order mark), else null. A config nested deeper than 64
// levels is an Error (before it is parsed).
nlohmann::json ReadOlmoCoreConfig(const std::string& path);

// A run config from `path`: replica YAML, or an OLMo-core config.json (recognised by "_CLASS_").
// For config.json every refusal is an Error (unless options.allow_unsupported, which prints them
// on stderr with what stands in; with options.for_training a refusal without a substitute stays
// an Error), and so is a missing max_steps (epoch hard stop without the data) unless `overrides`
// set train.max_steps; with options.for_training, so is anything unresolved (remote data or
// checkpoint paths, a mix file not given) unless `overrides` set the key it would fill.
// `notices` (optional) receives one line per refused setting let through by allow_unsupported.
RunConfig LoadRunConfig(const std::string& path, const std::vector<std::string>& overrides,
                        const OlmoCoreImportOptions& options,
                        std::vector<std::string>* notices = nullptr);

}  // namespace replica

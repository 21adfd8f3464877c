// `replica convert` (docs/design.md §5): checkpoint <-> Hugging Face model directory.
//
//  export  checkpoint (a step-N/ directory, or a run directory -> its newest valid checkpoint)
//          -> HF directory: config.json (the checkpoint's copy of the model config, torch_dtype
//          set to the stored dtype) + model.safetensors in F32 or BF16, sharded with
//          model.safetensors.index.json when the weights exceed max_shard_bytes; plus
//          generation_config.json (eos/pad/bos ids) and, unless the tokenizer is "none", the
//          tokenizer files (tokenizer/tokenizer_hf_export.h), so transformers loads the directory
//          whole (AutoModelForCausalLM + AutoTokenizer).
//  import  HF directory (config.json + model.safetensors or shards; F32/BF16/F16) -> a
//          weights-only checkpoint directory: model.safetensors (F32, canonical tensor order),
//          config.json, MANIFEST.json, DONE (step 0, no optimizer state, no state.json); or, when
//          the directory also holds optim.safetensors (F32 m.<name>, v.<name>, I64 `step`) and
//          state.json (a replica trainer state), a resumable checkpoint at the state's step with
//          both carried over (what tools/olmo_core_checkpoint.py stages from an OLMo-core
//          checkpoint).
//
// Both directions check every tensor against ModelConfig::BuildLayout() (names and shapes; a
// missing or unexpected tensor is an Error naming it), so export -> import is exact in F32.
// The destination is refused when it is the source, or when it exists and holds something other
// than what would be written (an HF directory is not overwritten by a checkpoint and vice versa).
#pragma once
#include <cstdint>
#include <string>

#include "io/safetensors.h"

namespace replica {

enum class ConvertDirection { kCheckpointToHf, kHfToCheckpoint };

struct ConvertOptions {
  std::string from, to;
  DType dtype = DType::kF32;          // export: F32 or BF16; import: F32 only
  uint64_t max_shard_bytes = 5000ull * 1000 * 1000;  // transformers' "5GB"
  // export: "auto" (dolma2 when the model's vocabulary holds dolma2's 100278 ids, else none),
  // "dolma2", "none", or a tokenizer.json path (rank-based byte-level BPE only).
  std::string tokenizer = "auto";
  // A progress line on stderr (core/progress.h): megabytes read, then written, with an ETA.
  bool progress = false;
};

struct ConvertResult {
  ConvertDirection direction = ConvertDirection::kCheckpointToHf;
  std::string source;       // the checkpoint directory or HF directory actually read
  int64_t step = 0;         // of the exported checkpoint, or of the imported state.json (else 0)
  int64_t tensors = 0;
  int64_t parameters = 0;
  std::vector<std::string> files;  // written, relative to `to`
};

// Detects the direction from `from`: a checkpoint or run directory exports, an HF directory
// (config.json + model.safetensors[.index.json], no MANIFEST.json) imports.
ConvertResult Convert(const ConvertOptions& options);

}  // namespace replica

// The on-disk checkpoint format (docs/design.md §4, §2.6) and its verification: names, MANIFEST.json
// and DONE. Writers (writer.h, sharded_writer.h) and readers (reader.h) share this unit. Below is
// format version 1; version 2 (sharded_format.h: one file per rank instead of model.safetensors and
// optim.safetensors, the rest as here) is what the trainer writes. Both verify here.
//
//   RUN/checkpoints/step-NNNNNNNN/      N = the step, zero-padded to 8 digits (more if needed)
//     model.safetensors   F32 parameters under their Hugging Face names
//     optim.safetensors   Adam state: "m.<HF name>", "v.<HF name>" (F32, same shapes) and
//                         "step" (I64 scalar: the optimizer's bias-correction step count)
//     state.json          the trainer's opaque resume state (step, tokens, loader, skip history,
//                         RNG, config hash, world size, ...)
//     config.json         the model's Hugging Face config (ModelConfig::ToHfJson), for `convert`
//     MANIFEST.json       {"format": "replica-checkpoint", "version": 1, "step": N,
//                          "checksum": "xxh3_64", "files": {name: {"bytes": B, "xxh3_64": hex}}}
//     DONE                "step N\nmanifest_xxh3_64 <hex of MANIFEST.json>\n", written last
//
// A checkpoint is valid iff DONE exists and names the manifest's checksum, and every file listed in
// the manifest exists with exactly that size and XXH3-64 digest (seed 0; 16 lowercase hex
// digits, most significant first). XXH3 rather than SHA-256 because a 7B checkpoint is ~88 GB and
// is re-verified on every resume: XXH3 runs at memory speed and detects truncation and flipped
// bits; it is not meant to resist deliberate tampering. A weights-only checkpoint (what
// `replica convert` imports) has no optim.safetensors and no state.json.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace replica {

inline constexpr const char* kCheckpointsSubdir = "checkpoints";
inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kOptimFile = "optim.safetensors";
inline constexpr const char* kStateFile = "state.json";
inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kManifestFile = "MANIFEST.json";
inline constexpr const char* kDoneFile = "DONE";

std::string CheckpointDirName(int64_t step);  // "step-00000020"
// The step of a directory named exactly "step-<digits>"; nullopt for anything else ("*.tmp" too).
std::optional<int64_t> ParseCheckpointDirName(std::string_view name);

struct CheckpointDir {
  int64_t step = 0;
  std::string path;
};
// step-* directories under `checkpoints_dir` (complete or not), ascending by step. Empty if the
// directory does not exist; Error naming the path when it exists but cannot be listed (a regular
// file, a symlink loop, no permission), so an unreadable directory is never taken for "none".
std::vector<CheckpointDir> ListCheckpointDirs(const std::string& checkpoints_dir);
bool HasDone(const std::string& checkpoint_dir);

std::string FileXxh3Hex(const std::string& path);  // Error naming the path if unreadable

// Manifest of `files` (names relative to `dir`), with sizes and digests read back from disk.
nlohmann::json BuildManifest(const std::string& dir, int64_t step,
                             const std::vector<std::string>& files);
std::string DoneContents(int64_t step, const std::string& manifest_text);

// Checks everything listed in the format comment above; throws Error saying what is wrong (missing
// DONE, manifest mismatch, a file's size or checksum) and naming the file. Returns the manifest.
nlohmann::json VerifyCheckpoint(const std::string& dir);

}  // namespace replica

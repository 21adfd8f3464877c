// `replica tokenize`: text / JSONL inputs (optionally .gz / .zst) -> OLMo-core numpy token files.
// Each input file becomes <out>/<stem>.npy: raw headerless little-endian token ids (uint32 for
// dolma2; uint16 when every id fits), every document followed by EOS, documents in input order.
// Input formats, by name (after removing .gz/.zst/.zstd): *.jsonl / *.ndjson hold one document per
// line in the "text" field (blank lines skipped); anything else is one document per file. Empty
// documents are skipped and counted. Documents are encoded in parallel (OpenMP), long ones in
// chunks (Tokenizer::SplitForParallelEncode); output is byte-identical for any thread count.
// <out>/manifest.json records the tokenizer, every input (sha256) and output (sha256, tokens).
// All files are written atomically, and only after every input was read without error: bad input
// (missing file, malformed JSON line, missing "text", invalid UTF-8) is an Error naming file:line
// and leaves no new output behind.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace replica {

struct TokenizeOptions {
  std::string out_dir;
  std::optional<uint32_t> eos_id;  // default: the tokenizer's EOS; Error if it has none
  std::string dtype;               // "uint16" or "uint32"; empty: the smallest that holds every id
  bool progress = false;           // progress line on stderr
  size_t batch_bytes = 32u << 20;  // text read per parallel batch
  size_t chunk_bytes = 1u << 20;   // documents longer than this are cut for parallel encoding
};

struct TokenizedFile {
  std::string input, input_sha256, format, compression;
  uint64_t input_bytes = 0, text_bytes = 0, documents = 0, skipped_empty = 0;
  std::string output, output_sha256;  // output: path of the .npy file
  uint64_t tokens = 0, output_bytes = 0;  // tokens include one EOS per document
};

struct TokenizeSummary {
  std::vector<TokenizedFile> files;
  std::string dtype, manifest_path;
  uint64_t documents = 0, skipped_empty = 0, tokens = 0, text_bytes = 0, input_bytes = 0;
  double seconds = 0, cpu_seconds = 0;  // wall and process CPU time of TokenizeToDisk
  int threads = 1;
};

TokenizeSummary TokenizeToDisk(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                               const TokenizeOptions& options);

// The output name for an input path: basename without .gz/.zst/.zstd and .jsonl/.ndjson/.txt,
// plus ".npy".
std::string TokenFileNameFor(const std::string& input_path);

}  // namespace replica

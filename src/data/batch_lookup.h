// What a NumpyFSLDataLoader fed at global batch b, found from file sizes alone (docs/data.md,
// "Which instances were in batch N"): the instance numbering of a NumpyFslDataset needs only each
// file's size (floor(size / (itemsize · seq_len)) instances per file, in list order) and the order
// of epoch e needs only (N, seed, e, I) (data_order.h). So the lookup stats every file, computes
// the order, and then opens only the files that hold an instance of the batch, reading only the
// first `head_tokens` tokens of each such instance (the whole instance when document lengths are
// asked for). Nothing else is read.
//
// Batches are counted across epochs as the loader does: global batch b (0-based; trainer step
// b + 1) is row b mod B of epoch 1 + b / B, with B = N / I whole batches per epoch.
//
// Also OLMo-core's dataset fingerprint of such a file list (NumpyDatasetBase.fingerprint,
// fingerprint_version "v2.0": sha256 over the class name, the tokenizer fields, dtype,
// max_target_sequence_length and each file's base name and byte size), which the reference stores
// in its data loader state.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "data/instance_dataset.h"
#include "data/token_files.h"

namespace replica::data {

struct BatchLookupOptions {
  std::vector<std::string> paths;  // token files in mix order
  int64_t seq_len = 0;
  TokenDtype dtype = TokenDtype::kUint32;
  uint64_t seed = 0;
  uint64_t global_batch_instances = 0;  // I
  uint64_t head_tokens = 16;            // tokens read from the start of each instance
  // When set (OLMo-core's generate_doc_lengths), every instance of the batch is read whole for its
  // document lengths (DocumentLengths over its seq_len tokens).
  std::optional<DocumentBoundary> document_boundary;
};

struct BatchInstance {
  uint32_t instance = 0;      // index in the dataset's numbering
  size_t file = 0;            // index into paths
  uint64_t token_offset = 0;  // first token of the instance in that file
  std::vector<int32_t> head;  // its first min(head_tokens, seq_len) tokens
  std::vector<int32_t> doc_lens;  // with document_boundary: its document lengths; else empty
};

struct BatchLookup {
  uint64_t global_batch = 0;             // b, counted across epochs
  uint64_t epoch = 0;                    // 1-based
  uint64_t batch_in_epoch = 0;           // row of that epoch's order
  uint64_t num_instances = 0;            // N
  uint64_t batches_per_epoch = 0;        // N / I
  std::vector<uint64_t> file_sizes;      // bytes, per path
  std::vector<BatchInstance> instances;  // the row, in order (rank r of R reads r::R)
  std::set<size_t> files_opened;         // indices of the files whose contents were read
};

// Error naming the file for a missing file or a size that is not a whole number of tokens, and
// for an empty dataset, a global batch larger than the dataset, or I = 0.
BatchLookup LookupGlobalBatch(const BatchLookupOptions& options, uint64_t global_batch);

struct OlmoCoreFingerprintFields {
  uint64_t vocab_size = 0;
  int64_t pad_token_id = -1;  // -1 prints as None
  int64_t eos_token_id = -1;
  int64_t bos_token_id = -1;
  int64_t max_target_sequence_length = -1;
};
// sha256 hex of NumpyFSLDataset's fingerprint text for these paths (base names) and byte sizes.
std::string OlmoCoreFslFingerprint(const std::vector<std::string>& paths,
                                   const std::vector<uint64_t>& file_sizes, TokenDtype dtype,
                                   const OlmoCoreFingerprintFields& fields);

}  // namespace replica::data

// OLMo-core's NumpyFSLDataset: token files taken in the given order, each cut into
// floor(tokens / seq_len) instances of seq_len tokens (a file's tail is dropped; instances never
// cross files), numbered consecutively across files. Instance g lives in the file f whose
// cumulative range holds g, at token offset (g - first_instance_f) * seq_len.
// Opening checks every file (exists, whole tokens, ids < vocab_size) and rejects an empty corpus.
// Given a document boundary (OLMo-core's generate_doc_lengths) each instance also has document
// lengths: get_document_lengths over its seq_len tokens alone, so a document cut by an instance's
// edge counts as one document on each side, and an instance without EOS is one document.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/instance_dataset.h"
#include "data/token_files.h"

namespace replica::data {

struct FslDatasetOptions {
  std::vector<std::string> paths;  // in mix order; the order defines instance numbering
  int64_t seq_len = 0;
  TokenDtype dtype = TokenDtype::kUint32;
  uint64_t vocab_size = 0;  // ids must be below it (dolma2: 100278)
};

struct InstanceLocation {
  size_t file = 0;           // index into the paths
  uint64_t token_offset = 0;  // first token of the instance in that file
};

class NumpyFslDataset : public InstanceDataset {
 public:
  // `document_boundary`: the EOS (and BOS) ids that split instances into documents; nullopt: no
  // document lengths. Error when its EOS id is negative.
  explicit NumpyFslDataset(const FslDatasetOptions& options,
                           std::optional<DocumentBoundary> document_boundary = std::nullopt);

  uint64_t num_instances() const override { return num_instances_; }
  int64_t seq_len() const override { return seq_len_; }
  const std::string& fingerprint() const override { return fingerprint_; }
  void ReadInstance(uint64_t index, int32_t* out) const override;
  std::optional<DocumentBoundary> document_boundary() const override { return boundary_; }

  InstanceLocation Locate(uint64_t index) const;
  const std::vector<TokenFile>& files() const { return files_; }
  // first_instance()[f] is the index of file f's first instance; one extra entry holds the total.
  const std::vector<uint64_t>& first_instance() const { return first_instance_; }
  uint64_t vocab_size() const { return vocab_size_; }

 private:
  std::vector<TokenFile> files_;
  std::vector<uint64_t> first_instance_;
  int64_t seq_len_;
  uint64_t vocab_size_;
  uint64_t num_instances_ = 0;
  std::string fingerprint_;
  std::optional<DocumentBoundary> boundary_;
};

}  // namespace replica::data

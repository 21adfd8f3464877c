// OLMo-core's NumpyPackedFSLDataset: documents packed into instances of exactly seq_len tokens.
//
//   documents: each token file is split after every EOS (with a BOS token: after every EOS that a
//     BOS follows, and after a final EOS); tokens after a file's last boundary belong to no
//     document and are dropped, so a file without one contributes nothing
//   long documents (more than seq_len tokens): "truncate" keeps the first seq_len tokens,
//     "fragment" cuts them into pieces of seq_len (the last one shorter)
//   groups: source_group_size consecutive files are packed together as if concatenated (the last
//     group may be smaller); each group is packed by OBFD (data/obfd.h) on its own
//   instances: group 0's bins in the order they were opened, then group 1's, ...; an instance is
//     its documents' tokens in the order they were packed, right-padded with pad_token_id, with a
//     label mask that is false on the padding
//
// Document lengths, when generate_doc_lengths is set, come from get_document_lengths on the padded
// instance (document_boundary()), as OLMo-core computes them for a local token file.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/instance_dataset.h"
#include "data/obfd.h"
#include "data/token_files.h"

namespace replica::data {

enum class LongDocStrategy { kTruncate, kFragment };
std::string_view LongDocStrategyName(LongDocStrategy s);  // "truncate" / "fragment"
// Error naming `what` and the value unless it is "truncate" or "fragment".
LongDocStrategy ParseLongDocStrategy(std::string_view name, std::string_view what);

struct PackedDatasetOptions {
  std::vector<std::string> paths;  // in mix order
  int64_t seq_len = 0;             // a power of two
  TokenDtype dtype = TokenDtype::kUint32;
  uint64_t vocab_size = 0;
  int64_t eos_token_id = 100257;
  int64_t bos_token_id = -1;  // -1: none
  int64_t pad_token_id = 100277;
  LongDocStrategy long_doc_strategy = LongDocStrategy::kTruncate;
  int64_t source_group_size = 1;
  bool generate_doc_lengths = false;
};

// One token file's documents as OLMo-core's iter_document_indices_with_max_sequence_length
// yields them (token ranges within the file).
std::vector<DocumentSpan> FileDocuments(const TokenFile& file, int64_t eos_token_id,
                                        int64_t bos_token_id, int64_t seq_len,
                                        LongDocStrategy strategy);

class PackedDataset : public InstanceDataset {
 public:
  // Errors: as NumpyFslDataset for the files (plus an empty file), seq_len not a power of two,
  // source_group_size < 1, no instance at all (naming the files and why).
  explicit PackedDataset(const PackedDatasetOptions& options);

  uint64_t num_instances() const override { return group_first_.back(); }
  int64_t seq_len() const override { return options_.seq_len; }
  const std::string& fingerprint() const override { return fingerprint_; }
  void ReadInstance(uint64_t index, int32_t* out) const override;
  bool has_label_mask() const override { return true; }
  void ReadLabelMask(uint64_t index, uint8_t* out) const override;
  std::optional<DocumentBoundary> document_boundary() const override;

  // Tokens of instance `index` that are documents (the rest is padding).
  uint64_t InstanceTokens(uint64_t index) const;
  // The instance's documents as (file index, token offset in that file, length), in order.
  struct Piece {
    size_t file;
    uint64_t offset, length;
  };
  std::vector<Piece> InstancePieces(uint64_t index) const;

  const std::vector<TokenFile>& files() const { return files_; }
  const PackedDatasetOptions& options() const { return options_; }
  uint64_t total_tokens() const { return total_tokens_; }  // tokens in documents, all instances
  uint64_t num_documents() const { return num_documents_; }
  size_t num_groups() const { return groups_.size(); }
  // The first instance of each group, plus one entry holding num_instances().
  const std::vector<uint64_t>& group_first_instances() const { return group_first_; }

 private:
  struct Group {
    size_t first_file = 0;
    std::vector<uint64_t> file_start;  // token offset of each file of the group in the group
    std::vector<DocumentSpan> documents;
    std::vector<uint64_t> doc_ids;          // instances' documents, concatenated
    std::vector<uint64_t> instance_offset;  // into doc_ids, one per instance plus the end
  };
  // The group holding instance `index` and the instance's position in it.
  std::pair<const Group*, uint64_t> Find(uint64_t index) const;

  PackedDatasetOptions options_;
  std::vector<TokenFile> files_;
  std::vector<Group> groups_;
  std::vector<uint64_t> group_first_;
  uint64_t total_tokens_ = 0, num_documents_ = 0;
  std::string fingerprint_;
};

// sha256 hex of OLMo-core's NumpyPackedFSLDataset.fingerprint for these options (vocab_size,
// pad, EOS, dtype, long_doc_strategy, BOS, sequence_length, source_group_size when above 1, then
// each file's base name and byte size), with the files' sizes as given.
std::string OlmoCorePackedFingerprint(const PackedDatasetOptions& options,
                                      const std::vector<uint64_t>& file_sizes);

}  // namespace replica::data

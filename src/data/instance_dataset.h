// What the data loader reads from: a fixed number of fixed-length instances (token sequences),
// addressed 0..num_instances()-1, plus a fingerprint that changes whenever the instances could.
// NumpyFslDataset (plain token files) and MixtureDataset (sampled sources) implement it; a packed
// dataset (data/packed_dataset.h) also gives a label mask (false on padding) and the tokens that
// end its documents, through the optional members below whose defaults describe a plain dataset.
// Also the rules for training labels and document lengths, shared by everything that feeds the
// model.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace replica::data {

// OLMo-core's ignore index; the model skips these labels in the loss.
constexpr int32_t kLabelIgnore = -100;

// OLMo-core's get_document_lengths: without a BOS token a document ends at every EOS; with one, at
// an EOS followed by BOS. The last document ends at the instance's end whatever its last token.
struct DocumentBoundary {
  int64_t eos_token_id = 0;
  int64_t bos_token_id = -1;  // -1: none
};

// The lengths of the documents of ids[0..n) (n >= 1), in order; they sum to n.
std::vector<int32_t> DocumentLengths(const int32_t* ids, int64_t n, const DocumentBoundary& b);

class InstanceDataset {
 public:
  virtual ~InstanceDataset() = default;
  virtual uint64_t num_instances() const = 0;
  virtual int64_t seq_len() const = 0;
  // Lowercase hex sha256; equal fingerprints mean the same instances in the same index order.
  virtual const std::string& fingerprint() const = 0;
  // Writes seq_len() token ids of instance `index` to out. Error when index is out of range.
  // Safe to call from several threads at once.
  virtual void ReadInstance(uint64_t index, int32_t* out) const = 0;

  // Whether some label is masked (ReadLabelMask is not all true).
  virtual bool has_label_mask() const { return false; }
  // Writes seq_len() flags of instance `index`: 1 where the token may be a label, 0 where OLMo-core's
  // label_mask is false (padding). The default writes all 1.
  virtual void ReadLabelMask(uint64_t index, uint8_t* out) const;
  // The tokens get_document_lengths splits an instance at, when the dataset gives document
  // lengths (OLMo-core's generate_doc_lengths); nullopt when it does not.
  virtual std::optional<DocumentBoundary> document_boundary() const { return std::nullopt; }
};


// OLMo-core get_labels: labels[t] = ids[t+1] within each instance, and the last position of each
// instance is kLabelIgnore; no EOS masking. With a label mask ([rows, seq_len], nullptr: all
// true) labels[t] is kLabelIgnore where mask[t+1] is 0. ids and labels are [rows, seq_len]
// row-major, so labels line up with the logits the model produces at each position.
void MakeLabels(const int32_t* ids, int64_t rows, int64_t seq_len, int32_t* labels,
                const uint8_t* label_mask = nullptr);

}  // namespace replica::data

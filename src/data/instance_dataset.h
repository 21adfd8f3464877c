// What the data loader reads from: a fixed number of fixed-length instances (token sequences),
// addressed 0..num_instances()-1, plus a fingerprint that changes whenever the instances could.
// NumpyFslDataset (plain token files) and MixtureDataset (sampled sources) implement it.
// Also the rule for training labels, shared by everything that feeds the model.
#pragma once
#include <cstdint>
#include <string>

namespace replica::data {

// OLMo-core's ignore index; the model skips these labels in the loss.
constexpr int32_t kLabelIgnore = -100;

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
};

// OLMo-core get_labels: labels[t] = ids[t+1] within each instance, and the last position of each
// instance is kLabelIgnore; no EOS masking. ids and labels are [rows, seq_len] row-major, so
// labels line up with the logits the model produces at each position.
void MakeLabels(const int32_t* ids, int64_t rows, int64_t seq_len, int32_t* labels);

}  // namespace replica::data

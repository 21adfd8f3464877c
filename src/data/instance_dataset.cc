#include "data/instance_dataset.h"

#include <cstring>

namespace replica::data {

void InstanceDataset::ReadLabelMask(uint64_t, uint8_t* out) const {
  std::memset(out, 1, static_cast<size_t>(seq_len()));
}

std::vector<int32_t> DocumentLengths(const int32_t* ids, int64_t n, const DocumentBoundary& b) {
  std::vector<int32_t> lens;
  int64_t start = 0;
  for (int64_t t = 0; t + 1 < n; ++t) {
    const bool ends = b.bos_token_id < 0
                          ? ids[t] == b.eos_token_id
                          : ids[t] == b.eos_token_id && ids[t + 1] == b.bos_token_id;
    if (ends) {
      lens.push_back(static_cast<int32_t>(t + 1 - start));
      start = t + 1;
    }
  }
  if (n > 0) lens.push_back(static_cast<int32_t>(n - start));
  return lens;
}

void MakeLabels(const int32_t* ids, int64_t rows, int64_t seq_len, int32_t* labels,
                const uint8_t* label_mask) {
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* in = ids + r * seq_len;
    const uint8_t* mask = label_mask ? label_mask + r * seq_len : nullptr;
    int32_t* out = labels + r * seq_len;
    for (int64_t t = 0; t + 1 < seq_len; ++t)
      out[t] = (mask == nullptr || mask[t + 1]) ? in[t + 1] : kLabelIgnore;
    if (seq_len > 0) out[seq_len - 1] = kLabelIgnore;
  }
}

}  // namespace replica::data

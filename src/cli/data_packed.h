// `replica data batch N` for a packed dataset (data.packing: obfd, or an OLMo-core
// NumpyPackedFSLDatasetConfig): opens and packs the files (packing needs every document's
// length), then prints each instance of the global batch with its documents (file, offset,
// length), document lengths as get_document_lengths finds them, padding and first token ids.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/packed_dataset.h"

namespace replica::cli {

struct PackedBatchRequest {
  data::PackedDatasetOptions dataset;
  uint64_t seed = 0, global_batch_instances = 0, global_batch = 0, head_tokens = 16;
  bool json = false;
  // Decodes token ids for the text view; empty: no text.
  std::function<std::string(const std::vector<int32_t>&)> decode;
};

int RunPackedBatch(const PackedBatchRequest& request);

}  // namespace replica::cli

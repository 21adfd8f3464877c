// Fuzzes token files (OLMo-core's raw uint16/uint32 arrays) through the numpy FSL dataset that
// training reads them with. The first input byte picks the dtype (bit 0), the sequence length
// (bits 1-3: 1..8) and the vocabulary size (bits 4-7: 2^(k+1)); the rest is the file. Every
// instance the dataset accepts is read back and its ids checked against the vocabulary.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "data/fsl_dataset.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using namespace replica::data;
  FslDatasetOptions o;
  o.dtype = (data[0] & 1) ? TokenDtype::kUint16 : TokenDtype::kUint32;
  o.seq_len = 1 + ((data[0] >> 1) & 7);
  o.vocab_size = uint64_t{2} << (data[0] >> 4);
  o.paths = {replica::fuzz::WriteTempFile(data + 1, size - 1, ".npy")};
  try {
    const NumpyFslDataset ds(o);
    std::vector<int32_t> row(static_cast<size_t>(ds.seq_len()));
    for (uint64_t i = 0; i < ds.num_instances(); ++i) {
      ds.ReadInstance(i, row.data());
      for (int32_t id : row)
        if (id < 0 || static_cast<uint64_t>(id) >= o.vocab_size) std::abort();
    }
  } catch (const replica::Error&) {
  }
  return 0;
}

// The global instance order of OLMo-core's NumpyFSLDataLoader (docs/design.md §2.5), for one epoch:
//   G = arange(N, uint32); Generator(PCG64(seed + epoch)).shuffle(G)
//   G = G[:I * (N // I)].reshape(N // I, I)          # one row per global batch of I instances
//   rank r of R in batch b reads G[b, r::R]          # strided, not contiguous
// It depends only on (N, seed, epoch, I); the world size R only decides who reads which column,
// which is why a run can resume on a different number of ranks at a fixed global batch.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace replica::data {

// Largest dataset OLMo-core accepts (it asserts N < 2^32 - 1 so indices fit in uint32).
constexpr uint64_t kMaxInstances = 0xFFFFFFFEULL;

// shuffle(arange(N)) with PCG64(seed + epoch). Error when N is 0 or above kMaxInstances.
std::vector<uint32_t> ShuffledInstanceOrder(uint64_t num_instances, uint64_t seed, uint64_t epoch);

// sha256 of the uint32 values as little-endian bytes (the oracle files' digest).
std::string OrderSha256(std::span<const uint32_t> values);

// "'epoch' must be at least 1, got E (epochs are counted from 1, as in OLMo-core's data loader)":
// the refusal of epoch 0 wherever an epoch is given (OLMo-core: NumpyDataLoaderBase.reshuffle).
std::string EpochMessage(uint64_t epoch);

class GlobalOrder {
 public:
  // Error when global_batch_instances is 0, epoch is 0 (OLMo-core's loader refuses it too) or N
  // is out of range, as above.
  GlobalOrder(uint64_t num_instances, uint64_t seed, uint64_t epoch,
              uint64_t global_batch_instances);

  uint64_t num_instances() const { return shuffled_.size(); }
  uint64_t seed() const { return seed_; }
  uint64_t epoch() const { return epoch_; }
  uint64_t global_batch_instances() const { return batch_; }
  // N // I; may be 0 for a dataset smaller than one global batch (the loader rejects that).
  uint64_t num_batches() const { return shuffled_.size() / batch_; }

  std::span<const uint32_t> shuffled() const { return shuffled_; }  // all N entries
  std::span<const uint32_t> truncated() const {                      // first I * (N // I)
    return std::span<const uint32_t>(shuffled_).first(num_batches() * batch_);
  }
  // Row b of G. Error naming b when out of range.
  std::span<const uint32_t> Batch(uint64_t b) const;
  // G[b, rank::world]. Error unless 0 <= rank < world and world divides I.
  std::vector<uint32_t> RankBatch(uint64_t b, uint64_t rank, uint64_t world) const;

 private:
  uint64_t seed_, epoch_, batch_;
  std::vector<uint32_t> shuffled_;
};

}  // namespace replica::data

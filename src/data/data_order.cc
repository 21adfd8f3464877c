#include "data/data_order.h"

#include <bit>
#include <numeric>

#include "core/checksum.h"
#include "core/error.h"
#include "data/numpy_rng.h"

namespace replica::data {

std::vector<uint32_t> ShuffledInstanceOrder(uint64_t num_instances, uint64_t seed,
                                            uint64_t epoch) {
  Require(num_instances > 0, "data order: the dataset has 0 instances; need at least 1");
  Require(num_instances <= kMaxInstances,
          "data order: {} instances; at most {} are supported (indices are uint32, as in "
          "OLMo-core)",
          num_instances, kMaxInstances);
  std::vector<uint32_t> order(num_instances);
  std::iota(order.begin(), order.end(), uint32_t{0});
  // seed + epoch is a Python integer sum in OLMo-core; 128 bits keeps it exact here.
  Pcg64 rng = Pcg64::FromSeed(static_cast<uint128>(seed) + epoch);
  Shuffle(rng, order);
  return order;
}

std::string EpochMessage(uint64_t epoch) {
  return fmt::format("'epoch' must be at least 1, got {} (epochs are counted from 1, as in "
                     "OLMo-core's data loader)",
                     epoch);
}

std::string OrderSha256(std::span<const uint32_t> values) {
  static_assert(std::endian::native == std::endian::little, "replica assumes a little-endian host");
  return Sha256Hex(values.data(), values.size_bytes());
}

GlobalOrder::GlobalOrder(uint64_t num_instances, uint64_t seed, uint64_t epoch,
                         uint64_t global_batch_instances)
    : seed_(seed), epoch_(epoch), batch_(global_batch_instances) {
  Require(global_batch_instances > 0, "data order: global batch must be at least 1 instance");
  Require(epoch >= 1, "data order: {}", EpochMessage(epoch));
  shuffled_ = ShuffledInstanceOrder(num_instances, seed, epoch);
}

std::span<const uint32_t> GlobalOrder::Batch(uint64_t b) const {
  Require(b < num_batches(), "data order: batch {} out of range; epoch {} has {} global batches",
          b, epoch_, num_batches());
  return std::span<const uint32_t>(shuffled_).subspan(b * batch_, batch_);
}

std::vector<uint32_t> GlobalOrder::RankBatch(uint64_t b, uint64_t rank, uint64_t world) const {
  Require(world > 0 && batch_ % world == 0,
          "data order: world size {} must divide the global batch of {} instances", world, batch_);
  Require(rank < world, "data order: rank {} out of range for world size {}", rank, world);
  auto row = Batch(b);
  std::vector<uint32_t> local;
  local.reserve(batch_ / world);
  for (uint64_t k = rank; k < batch_; k += world) local.push_back(row[k]);
  return local;
}

}  // namespace replica::data

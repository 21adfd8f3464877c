// OLMo-core's NumpyFSLDataLoader over any InstanceDataset: epoch e (1-based) visits the instances
// in GlobalOrder(N, seed, e, I) (see data_order.h), one global batch of I instances per step;
// rank r of R gets row[r::R], which it may split into consecutive micro-batches. After the last
// whole batch of epoch e the loader moves to epoch e + 1 (a fresh shuffle with seed + e + 1).
//
// LoaderState is global (seed, epoch, batches processed in that epoch, I, dataset fingerprint),
// never per rank, so restoring it on any world size that divides I resumes the identical stream
// of global batches. Restoring against a different dataset is an Error naming both fingerprints.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/data_order.h"
#include "data/instance_dataset.h"

namespace replica::data {

struct LoaderState {
  uint64_t seed = 0;
  uint64_t epoch = 1;
  uint64_t batches_processed = 0;  // whole global batches already read in `epoch`
  uint64_t global_batch_instances = 0;
  int64_t seq_len = 0;
  uint64_t num_instances = 0;
  std::string dataset_fingerprint;

  // {"version": 1, "dataset_type": "fsl", "seed", "epoch", "batches_processed",
  //  "tokens_processed", "global_batch_instances", "sequence_length", "num_instances",
  //  "dataset_fingerprint"}; tokens_processed (within the epoch) is informational.
  nlohmann::json ToJson() const;
  // Error naming the missing or mistyped field.
  static LoaderState FromJson(const nlohmann::json& j);
  bool operator==(const LoaderState&) const = default;
};

struct LoaderOptions {
  uint64_t seed = 0;
  uint64_t global_batch_instances = 0;  // I
  uint64_t rank = 0, world = 1;         // world must divide I
  uint64_t micro_batch_instances = 0;   // 0: the whole rank batch; must divide I / world
  uint64_t start_epoch = 1;
};

// One micro-batch: rows consecutive instances of a rank batch, [rows, seq_len] row-major.
// (RankBatch::cu_doc_lens covers the whole rank batch; a micro-batch's documents are the entries
// between k * rows * seq_len and (k + 1) * rows * seq_len.)
struct MicroBatch {
  const uint32_t* instances;
  const int32_t* input_ids;
  const int32_t* labels;
  int64_t rows, seq_len;
};

// This rank's share of one global batch.
struct RankBatch {
  uint64_t epoch = 0, batch = 0;    // which row of which epoch's order
  std::vector<uint32_t> instances;  // G[batch, rank::world], in order
  std::vector<int32_t> input_ids;   // [instances.size(), seq_len]
  std::vector<int32_t> labels;      // MakeLabels(input_ids, the dataset's label mask)
  // OLMo-core's cu_doc_lens over the rows * seq_len positions: 0, then the running sum of every
  // row's document lengths (DocumentLengths), rows in order, so it ends at rows * seq_len and
  // holds every r * seq_len (no document crosses a row). Empty unless the dataset gives document
  // lengths (InstanceDataset::document_boundary(), OLMo-core's generate_doc_lengths).
  std::vector<int32_t> cu_doc_lens;
  int64_t seq_len = 0;
  int64_t micro_batch_instances = 0;

  int64_t num_micro_batches() const;
  MicroBatch micro_batch(int64_t k) const;  // Error when k is out of range
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const InstanceDataset> dataset, const LoaderOptions& options);

  // Reads this rank's part of the next global batch and advances the state by one batch.
  RankBatch Next();
  // Only the instance ids of the next global batch (the whole row), without advancing.
  std::vector<uint32_t> PeekGlobalBatch();

  LoaderState state() const;
  // Continues from `state`. Errors when the dataset fingerprint, global batch, sequence length
  // or instance count differ, or the state is not a position inside an epoch.
  void Restore(const LoaderState& state);

  uint64_t batches_per_epoch() const { return batches_per_epoch_; }
  const InstanceDataset& dataset() const { return *dataset_; }

 private:
  const GlobalOrder& Order();  // the current epoch's order, recomputed on epoch change

  std::shared_ptr<const InstanceDataset> dataset_;
  LoaderOptions options_;
  uint64_t batches_per_epoch_ = 0;
  uint64_t epoch_ = 1, batches_processed_ = 0;
  std::unique_ptr<GlobalOrder> order_;
};

}  // namespace replica::data

#include "train/rank_batch_step.h"

#include "core/error.h"

namespace replica {

StepOutcome RunRankBatch(TrainStep& step, const data::RankBatch& batch, double lr, int64_t rows) {
  if (rows == 0) rows = static_cast<int64_t>(batch.instances.size());
  const int64_t T = batch.seq_len;
  Require(static_cast<int64_t>(batch.input_ids.size()) == rows * T &&
              batch.labels.size() == batch.input_ids.size(),
          "train step: the rank batch holds {} tokens and {} labels, not {} rows of {}",
          batch.input_ids.size(), batch.labels.size(), rows, T);
  const bool packed = !batch.cu_doc_lens.empty();
  return step.Run(batch.input_ids.data(), batch.labels.data(), rows, T, lr,
                  packed ? batch.cu_doc_lens.data() : nullptr,
                  static_cast<int64_t>(batch.cu_doc_lens.size()));
}

}  // namespace replica

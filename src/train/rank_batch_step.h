// The training step on one rank batch as the data loader gives it (data/loader.h): its tokens,
// labels and, when the dataset has document lengths (packed instances), its cu_doc_lens, which
// TrainStep cuts per micro-batch so that attention and RoPE see each document alone.
#pragma once
#include <cstdint>

#include "data/loader.h"
#include "train/train_step.h"

namespace replica {

// step.Run on batch's rows [rows, batch.seq_len]; rows = batch.instances.size() when 0.
StepOutcome RunRankBatch(TrainStep& step, const data::RankBatch& batch, double lr,
                         int64_t rows = 0);

}  // namespace replica

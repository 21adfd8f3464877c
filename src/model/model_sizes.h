// Sizes of the model's scratch that `replica plan` (run/plan.h) counts, computed by the code that
// allocates them: the plan may not include the ops folder, so the model answers for the workspaces
// it builds there and asks the backend for what the backend's ops keep.
#pragma once
#include <cstdint>
#include <string>

#include "model/model_config.h"
#include "ops/precision.h"
#include "ops/step_scratch.h"

namespace replica {

// The ops a training step of a model built for micro-batches of `rows` rows (batch · sequence)
// runs: every layer's matmul weights as linear layers, the norms, RoPE and the LM head.
StepShape TrainingStepShape(const ModelConfig& m, int64_t rows);
// What the backend of (device, precision) keeps between op calls for that step, the model's LM
// head workspace included (Backend::StepScratchBytes).
StepScratch TrainingStepScratch(const ModelConfig& m, int64_t rows, const std::string& device,
                                Precision precision);

// Bytes of the RoPE tables a model built for sequences of up to `seq_len` holds (one per distinct
// RoPE of its layers).
uint64_t RopeTableBytes(const ModelConfig& m, int64_t seq_len);

}  // namespace replica

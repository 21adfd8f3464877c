// Loads a model for evaluation from either a Hugging Face directory (config.json +
// model.safetensors or shards) or a replica checkpoint (a step-* directory, verified, or a run
// directory, whose newest valid checkpoint is used), and wraps it as the evaluators' LossFn.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "eval/scorer.h"
#include "model/olmo3.h"

namespace replica::eval {

struct EvalModel {
  std::unique_ptr<Olmo3Model> model;
  std::string source;      // what was loaded: "hf:<dir>" or "checkpoint:<dir>"
  int64_t step = -1;       // checkpoint step, -1 for a HF directory
  int64_t max_seq = 0;
};

// Errors name the path: neither a HF directory nor a checkpoint, bad config, missing tensors.
// max_seq <= 0 means min(max_position_embeddings, kDefaultEvalSeqLen); the value used is in
// EvalModel::max_seq.
constexpr int64_t kDefaultEvalSeqLen = 2048;
EvalModel LoadEvalModel(const std::string& path, int64_t max_batch, int64_t max_seq);

// model.ForwardLoss, after checking every token id is inside the model's vocabulary (an eval set
// tokenized for another vocabulary is an Error, not garbage numbers).
LossFn ModelLossFn(Olmo3Model& model);

}  // namespace replica::eval

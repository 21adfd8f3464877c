// Loads a model for evaluation from either a Hugging Face directory (config.json +
// model.safetensors or shards) or a replica checkpoint (a step-* directory, verified, or a run
// directory, whose newest valid checkpoint is used), and wraps it as the evaluators' LossFn. The
// weights stay memory-mapped in their stored dtype and the forward runs layer by layer
// (infer/inference_model.h), so a bf16 7B evaluates within a few GiB beyond its file pages.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "eval/scorer.h"
#include "infer/inference_model.h"
#include "model/olmo3.h"

namespace replica::eval {

struct EvalModel {
  std::unique_ptr<InferenceModel> model;
  std::string source;      // what was loaded: "hf:<dir>" or "checkpoint:<dir>"
  int64_t step = -1;       // checkpoint step, -1 for a HF directory
  int64_t max_seq = 0;
};

// Errors name the path: neither a HF directory nor a checkpoint, bad config, missing tensors or
// shards. max_seq <= 0 means min(max_position_embeddings, kDefaultEvalSeqLen); the value used is
// in EvalModel::max_seq. The model runs on `backend` (ops/backend.h), which must outlive it.
constexpr int64_t kDefaultEvalSeqLen = 2048;
EvalModel LoadEvalModel(const std::string& path, int64_t max_seq,
                        const Backend& backend);

// model.ForwardLoss, after checking every token id is inside the model's vocabulary (an eval set
// tokenized for another vocabulary is an Error, not garbage numbers).
LossFn ModelLossFn(InferenceModel& model);
LossFn ModelLossFn(Olmo3Model& model);

}  // namespace replica::eval

#include "eval/model_loader.h"

#include <algorithm>

#include "core/error.h"
#include "infer/model_weights.h"

namespace replica::eval {
namespace {

int64_t ResolveSeqLen(const ModelConfig& config, int64_t requested) {
  if (requested > 0) {
    Require(config.max_position_embeddings <= 0 || requested <= config.max_position_embeddings,
            "--seq-len {}: more than the model's context (max_position_embeddings {})", requested,
            config.max_position_embeddings);
    return requested;
  }
  return config.max_position_embeddings > 0 ? std::min(config.max_position_embeddings, kDefaultEvalSeqLen)
                                            : kDefaultEvalSeqLen;
}

void CheckIds(int64_t V, const int32_t* tokens, const int32_t* labels, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Require(tokens[i] >= 0 && tokens[i] < V,
            "eval: token id {} is outside the model's vocabulary of {} (wrong --tokenizer?)", tokens[i], V);
    Require(labels[i] == kIgnoreLabel || (labels[i] >= 0 && labels[i] < V),
            "eval: token id {} is outside the model's vocabulary of {} (wrong --tokenizer?)", labels[i], V);
  }
}

}  // namespace

EvalModel LoadEvalModel(const std::string& path, int64_t max_seq, const Backend& backend) {
  EvalModel out;
  ModelWeights weights = ModelWeights::Open(path);
  out.max_seq = ResolveSeqLen(weights.config(), max_seq);
  out.source = weights.source();
  out.step = weights.step();
  out.model = std::make_unique<InferenceModel>(std::move(weights), backend);
  return out;
}

LossFn ModelLossFn(InferenceModel& model) {
  return [&model](const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T) {
    CheckIds(model.config().vocab_size, tokens, labels, B * T);
    return model.ForwardLoss(tokens, labels, B, T);
  };
}

LossFn ModelLossFn(Olmo3Model& model) {
  return [&model](const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T) {
    CheckIds(model.config().vocab_size, tokens, labels, B * T);
    return model.ForwardLoss(tokens, labels, B, T);
  };
}

}  // namespace replica::eval

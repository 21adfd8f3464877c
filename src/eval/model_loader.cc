#include "eval/model_loader.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "hf/hf_weights.h"
#include "model/model_config.h"
#include "checkpoint/format.h"
#include "checkpoint/reader.h"

namespace replica::eval {
namespace {

int64_t ResolveSeqLen(const ModelConfig& config, int64_t requested) {
  if (requested > 0) return requested;
  return config.max_position_embeddings > 0 ? std::min(config.max_position_embeddings, kDefaultEvalSeqLen)
                                            : kDefaultEvalSeqLen;
}

}  // namespace

EvalModel LoadEvalModel(const std::string& path, int64_t max_batch, int64_t max_seq) {
  namespace fs = std::filesystem;
  Require(fs::is_directory(path), "--model {}: not a directory (expected a Hugging Face model "
          "directory, a checkpoint step-* directory or a run directory)", path);
  EvalModel out;
  const bool is_checkpoint = fs::exists(fs::path(path) / kManifestFile) ||
                             fs::exists(fs::path(path) / kDoneFile) ||
                             fs::is_directory(fs::path(path) / kCheckpointsSubdir);
  if (is_checkpoint) {
    CheckpointInfo info = ResolveCheckpoint(path);
    Checkpoint ckpt = Checkpoint::Open(info.dir, /*verify=*/true);
    Require(!ckpt.model_config().is_null(), "{}: checkpoint has no {}", info.dir, kConfigFile);
    ModelConfig config = ModelConfig::FromHfJson(ckpt.model_config(), info.dir + "/" + kConfigFile);
    out.max_seq = ResolveSeqLen(config, max_seq);
    out.model = std::make_unique<Olmo3Model>(config, max_batch, out.max_seq);
    ckpt.LoadParams(out.model->layout(), out.model->params());
    out.source = "checkpoint:" + info.dir;
    out.step = info.step;
  } else {
    ModelConfig config = ModelConfig::FromHfFile((fs::path(path) / "config.json").string());
    out.max_seq = ResolveSeqLen(config, max_seq);
    out.model = std::make_unique<Olmo3Model>(config, max_batch, out.max_seq);
    LoadHfWeights(path, out.model->layout(), out.model->params());
    out.source = "hf:" + path;
  }
  return out;
}

LossFn ModelLossFn(Olmo3Model& model) {
  return [&model](const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T) {
    const int64_t V = model.config().vocab_size;
    for (int64_t i = 0; i < B * T; ++i) {
      Require(tokens[i] >= 0 && tokens[i] < V,
              "eval: token id {} is outside the model's vocabulary of {} (wrong --tokenizer?)", tokens[i], V);
      Require(labels[i] == kIgnoreLabel || (labels[i] >= 0 && labels[i] < V),
              "eval: token id {} is outside the model's vocabulary of {} (wrong --tokenizer?)", labels[i], V);
    }
    return model.ForwardLoss(tokens, labels, B, T);
  };
}

}  // namespace replica::eval

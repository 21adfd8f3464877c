#include "model/model_sizes.h"

#include "ops/lm_head_workspace.h"

namespace replica {

int64_t LmHeadChunkRows(const ModelConfig& m, int64_t rows) {
  return LmHeadWorkspace::ChunkRows(rows, m.vocab_size);
}

}  // namespace replica

// Sizes of the model's scratch that `replica plan` (run/plan.h) counts, computed by the code that
// allocates them: the plan may not include the ops folder, so the model answers for the workspaces
// it builds there.
#pragma once
#include <cstdint>

#include "model/model_config.h"

namespace replica {

// Rows of the LM head's logits chunk of a model built for batches of up to `rows` rows (the
// default-budget ops/lm_head_workspace.h LmHeadWorkspace the model holds).
int64_t LmHeadChunkRows(const ModelConfig& m, int64_t rows);

}  // namespace replica

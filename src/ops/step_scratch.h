// What a backend keeps between op calls for one training step of a model, asked of the backend
// (Backend::StepScratchBytes) by whoever plans memory (`replica plan`, through
// model/model_sizes.h), so the figures come from the code that allocates the buffers.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace replica {

// The ops a training step runs, by shape.
struct StepShape {
  int64_t rows = 0;            // N: tokens of the largest micro-batch (batch · sequence)
  int64_t hidden = 0;          // D
  int64_t vocab = 0;           // V
  int64_t lm_head_rows = 0;    // the rows the model's LmHeadWorkspace is built for (N)
  // Every linear layer the step runs, (in, out), once per weight tensor (a weight's bf16 copy is
  // kept per tensor).
  std::vector<std::pair<int64_t, int64_t>> linears;
  std::vector<int64_t> norm_widths;  // every RMSNorm's row width
  std::vector<int64_t> rope_widths;  // every RoPE call's row width (heads · head_dim)
};

// Bytes a backend holds for such a step once it has run one (they stay for the next).
struct StepScratch {
  uint64_t lm_head_workspace = 0;  // the model's LmHeadWorkspace, as the backend's LM head grows it
  uint64_t weight_copies = 0;      // bf16 copies of matmul weights (ops/cpu/bf16_weights.h)
  uint64_t operand_scratch = 0;    // the bf16 GEMM's operand buffers, on the calling thread
  uint64_t op_scratch = 0;         // other ops' buffers kept on the calling thread
  uint64_t total() const { return lm_head_workspace + weight_copies + operand_scratch + op_scratch; }
};

}  // namespace replica

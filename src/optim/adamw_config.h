// AdamW's keys of the run config's `optim` section (optim/adamw.h computes with them).
#pragma once
#include <string>
#include <vector>

namespace replica {

// The AdamW settings; the run config's `optim` section holds these keys under the same names
// (beside `optim.type`, the LR and its schedule).
struct AdamWConfig {
  std::vector<double> betas = {0.9, 0.95};  // [beta1, beta2]
  double eps = 1e-8;
  double weight_decay = 0.1;
  double max_grad_norm = 1.0;  // <= 0 disables clipping
  // Exact HF names of tensors without weight decay (OLMo-core Olmo 3: only the embedding).
  std::vector<std::string> no_decay = {"model.embed_tokens.weight"};
};

}  // namespace replica

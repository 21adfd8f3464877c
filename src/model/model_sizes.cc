#include "model/model_sizes.h"

#include <vector>

#include "model/layer_tensors.h"
#include "ops/registry.h"
#include "ops/rope_table.h"

namespace replica {

StepShape TrainingStepShape(const ModelConfig& m, int64_t rows) {
  StepShape s;
  s.rows = rows;
  s.hidden = m.hidden_size;
  s.vocab = m.vocab_size;
  s.lm_head_rows = rows;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    for (const LayerTensorInfo& t : LayerTensorTable()) {
      const std::vector<int64_t> shape = LayerTensorShape(m, t.id);
      if (t.matmul_weight) {
        s.linears.emplace_back(shape[1], shape[0]);  // [out, in]
      } else if (l == 0) {
        s.norm_widths.push_back(shape[0]);
      }
    }
  }
  s.norm_widths.push_back(m.hidden_size);  // the final norm
  s.rope_widths = {m.num_heads * m.head_dim, m.num_kv_heads * m.head_dim};
  return s;
}

StepScratch TrainingStepScratch(const ModelConfig& m, int64_t rows, const std::string& device,
                                Precision precision) {
  return SelectBackend(device, precision).StepScratchBytes(TrainingStepShape(m, rows));
}

uint64_t RopeTableBytes(const ModelConfig& m, int64_t seq_len) {
  std::vector<RopeParams> distinct;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const RopeParams& p = m.RopeFor(l);
    bool seen = false;
    for (const RopeParams& d : distinct) seen = seen || d.SameMath(p);
    if (!seen) distinct.push_back(p);
  }
  return distinct.size() * RopeTableBytesOf(seq_len, m.head_dim);
}

}  // namespace replica

#include "train/grad_reducer.h"

namespace replica {

double LocalGradReducer::ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars&,
                                         const Backend& backend) {
  return GlobalGradNorm(grads, backend);
}

std::unique_ptr<Optimizer> LocalGradReducer::MakeOptimizer(const ParamLayout& layout,
                                                           const AdamWConfig& config,
                                                           const Backend& backend) {
  return std::make_unique<AdamW>(layout, config, backend);
}

}  // namespace replica

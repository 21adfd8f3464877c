#include "train/grad_reducer.h"

namespace replica {

double LocalGradReducer::ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars&) {
  return GlobalGradNorm(grads);
}

std::unique_ptr<Optimizer> LocalGradReducer::MakeOptimizer(const ParamLayout& layout,
                                                           const AdamWConfig& config) {
  return std::make_unique<AdamW>(layout, config);
}

}  // namespace replica

#include "train/grad_reducer.h"

#include <utility>

#include "core/error.h"

namespace replica {

LocalGradReducer::LocalGradReducer(std::string accumulation)
    : accumulation_(std::move(accumulation)) {
  Require(accumulation_ == "tree" || accumulation_ == "sequential",
          "config key 'train.grad_accumulation': expected tree or sequential, got '{}'",
          accumulation_);
}

double LocalGradReducer::ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars&,
                                         const Backend& backend) {
  return GlobalGradNorm(grads, backend);
}

std::unique_ptr<Optimizer> LocalGradReducer::MakeOptimizer(const ParamLayout& layout,
                                                           std::unique_ptr<const UpdateRule> rule,
                                                           const Backend& backend) {
  return std::make_unique<AdamW>(layout, std::move(rule), backend);
}

}  // namespace replica

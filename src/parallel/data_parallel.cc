#include "parallel/data_parallel.h"

#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "parallel/collectives.h"
#include "parallel/sharded_optimizer.h"

namespace replica::parallel {

namespace {

// The ZeRO-1 ShardedOptimizer whose Step wall time is added to `seconds`.
class TimedZero1 final : public Optimizer {
 public:
  TimedZero1(const ParamLayout& layout, std::unique_ptr<const UpdateRule> rule, Communicator& comm,
             const Backend& backend, double& seconds)
      : zero_(layout, std::move(rule), GatherPolicy::kAllGatherParams, comm, backend),
        seconds_(seconds) {}
  void Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) override {
    const auto t0 = Clock::now();
    zero_.Step(params, grads, lr, clip_coef);
    seconds_ += SecondsSince(t0);
  }
  const OptimizerState* SaveState() override { return zero_.SaveState(); }
  void LoadState(OptimizerState state) override { zero_.LoadState(std::move(state)); }
  OwnedState Owned() override { return zero_.Owned(); }
  void SetStep(int64_t t) override { zero_.SetStep(t); }
  int64_t step() const override { return zero_.step(); }
  double max_grad_norm() const override { return zero_.max_grad_norm(); }
  const ShardPlan& plan() const { return zero_.plan(); }

 private:
  ShardedOptimizer zero_;
  double& seconds_;
};

}  // namespace

DataParallel::DataParallel(Communicator& comm, const RunConfig& config)
    : comm_(comm) {
  Require(comm.world() == 1 || config.train.grad_accumulation == "tree",
          "config keys 'train.grad_accumulation' ({}) and 'parallel.sharding' ({}) with {} ranks: "
          "ZeRO-1 data parallelism sums micro-batches along the fixed tree; set "
          "train.grad_accumulation: tree, or parallel.sharding: zero3 for the sequential fold",
          config.train.grad_accumulation, config.parallel.sharding, comm.world());
  RequireRankIndependentBatch(config.NumMicroBatches(), comm.world());
}

DataParallel::~DataParallel() {
  if (comm_.rank() != 0 || steps_ == 0) return;
  std::fprintf(stderr,
               "[dist] rank 0 of %d: %lld steps; gradient reduce-scatter + norm %.3f s/step, "
               "ZeRO-1 update + parameter all-gather %.3f s/step\n",
               comm_.world(), static_cast<long long>(steps_), reduce_s_ / static_cast<double>(steps_),
               step_s_ / static_cast<double>(steps_));
}

int64_t DataParallel::SumTokens(int64_t local) {
  // Counts below 2^53 are exact in fp64, so the tree sum is the integer sum.
  Require(local >= 0 && local < (int64_t{1} << 53), "data parallel: token count {} out of range",
          local);
  std::vector<double> v{static_cast<double>(local)};
  TreeAllReduce(comm_, v);
  return static_cast<int64_t>(v[0]);
}

double DataParallel::ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars,
                                     const Backend& backend) {
  Require(plan_.has_value(), "data parallel: ReduceGradients before MakeOptimizer fixed the shards");
  Require(grads.size() == plan_->total(), "data parallel: gradient buffer has {} floats, expected {}",
          grads.size(), plan_->total());
  const auto t0 = Clock::now();
  std::vector<double> v(scalars.begin(), scalars.end());
  TreeAllReduce(comm_, v);
  for (size_t i = 0; i < v.size(); ++i) scalars[i] = v[i];
  TreeReduceScatter(comm_, grads.data(), *plan_, backend);
  const double norm = ShardedGradNorm(comm_, grads.data(), *plan_, backend);
  reduce_s_ += SecondsSince(t0);
  ++steps_;
  return norm;
}

std::unique_ptr<Optimizer> DataParallel::MakeOptimizer(const ParamLayout& layout,
                                                       std::unique_ptr<const UpdateRule> rule,
                                                       const Backend& backend) {
  auto optimizer = std::make_unique<TimedZero1>(layout, std::move(rule), comm_, backend, step_s_);
  plan_.emplace(optimizer->plan());
  return optimizer;
}

}  // namespace replica::parallel

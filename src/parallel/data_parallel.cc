#include "parallel/data_parallel.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "core/error.h"
#include "parallel/collectives.h"

namespace replica::parallel {

DataParallel::DataParallel(Communicator& comm, const RunConfig& config)
    : comm_(comm) {
  RequireRankIndependentBatch(config.NumMicroBatches(), comm.world());
}

namespace {
double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

DataParallel::~DataParallel() {
  if (comm_.rank() != 0 || steps_ == 0) return;
  std::fprintf(stderr,
               "[dist] rank 0 of %d: %lld steps; gradient reduce-scatter + norm %.3f s/step, "
               "ZeRO-1 update + parameter all-gather %.3f s/step\n",
               comm_.world(), static_cast<long long>(steps_), reduce_s_ / static_cast<double>(steps_),
               step_s_ / static_cast<double>(steps_));
}

Zero1AdamW& DataParallel::zero() {
  Require(zero_ != nullptr, "data parallel: the optimizer state was not adopted before a step");
  return *zero_;
}

int64_t DataParallel::SumTokens(int64_t local) {
  // Counts below 2^53 are exact in fp64, so the tree sum is the integer sum.
  Require(local >= 0 && local < (int64_t{1} << 53), "data parallel: token count {} out of range",
          local);
  std::vector<double> v{static_cast<double>(local)};
  TreeAllReduce(comm_, v);
  return static_cast<int64_t>(v[0]);
}

double DataParallel::ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars) {
  const double t0 = Now();
  std::vector<double> v(scalars.begin(), scalars.end());
  TreeAllReduce(comm_, v);
  for (size_t i = 0; i < v.size(); ++i) scalars[i] = v[i];
  const double norm = zero().ReduceGradients(grads);
  reduce_s_ += Now() - t0;
  ++steps_;
  return norm;
}

void DataParallel::OptimizerStep(FlatBuffer& params, const FlatBuffer& grads, double lr,
                                 double grad_coef) {
  const double t0 = Now();
  zero().Step(params, grads, lr, grad_coef);
  step_s_ += Now() - t0;
}

void DataParallel::AdoptOptimizer(const ParamLayout& layout, AdamW& adam) {
  zero_ = std::make_unique<Zero1AdamW>(layout, adam.config(), comm_, adam.backend());
  zero_->LoadState(adam.m(), adam.v(), adam.step());
  // ZeRO-1: from here on only the shard lives on this rank (rank 0 re-creates full buffers as the
  // gather target of each checkpoint).
  adam.m() = FlatBuffer();
  adam.v() = FlatBuffer();
}

void DataParallel::GatherOptimizer(AdamW& adam) {
  Zero1AdamW& z = zero();
  if (comm_.rank() == 0) {
    if (adam.m().size() != z.plan().total()) adam.m() = FlatBuffer(z.plan().total());
    if (adam.v().size() != z.plan().total()) adam.v() = FlatBuffer(z.plan().total());
  }
  z.GatherState(&adam.m(), &adam.v());
  adam.set_step(z.step());
}

}  // namespace replica::parallel

#include "parallel/zero3.h"

#include <cstdio>
#include <utility>

#include "core/clock.h"
#include "core/error.h"
#include "parallel/owner_collectives.h"
#include "parallel/sharded_optimizer.h"

namespace replica::parallel {

// Local micro-batches in natural order; the store folds their gradients as backward runs, this
// records their loss sums for ReduceGradients' global fold.
class Zero3::Accumulation final : public GradAccumulation {
 public:
  explicit Accumulation(Zero3& z) : z_(z) {}
  const std::vector<int64_t>& Begin(int64_t m) override {
    Require(m >= 1, "gradient accumulation: need at least one micro-batch, got {}", m);
    order_.resize(static_cast<size_t>(m));
    for (int64_t k = 0; k < m; ++k) order_[static_cast<size_t>(k)] = k;
    z_.local_scalars_.clear();
    z_.store().BeginStep();
    return order_;
  }
  void Add(int64_t k, Scalars s) override {
    Require(static_cast<size_t>(k) * TreeAccumulator::kScalars == z_.local_scalars_.size(),
            "ZeRO-3: micro-batch {} out of order", k);
    z_.local_scalars_.insert(z_.local_scalars_.end(), s.begin(), s.end());
  }
  FlatBuffer& grads() override { return z_.store().accumulator(); }
  // This rank's sums only (the world-1 result); ReduceGradients folds every rank's.
  Scalars scalars() const override {
    Scalars sums{};
    for (size_t i = 0; i < z_.local_scalars_.size(); ++i)
      sums[i % TreeAccumulator::kScalars] = sums[i % TreeAccumulator::kScalars] + z_.local_scalars_[i];
    return sums;
  }
  FlatBuffer& params() override { return z_.store().master(); }

 private:
  Zero3& z_;
  std::vector<int64_t> order_;
};

Zero3::Zero3(Communicator& comm, const RunConfig& config)
    : comm_(comm), prefetch_(config.parallel.prefetch) {
  const int64_t m = config.NumMicroBatches(), world = comm.world();
  Require(m % world == 0,
          "parallel.sharding zero3: world size {} does not divide the {} micro-batches of a global "
          "batch (train.global_batch_instances / train.micro_batch_instances); every rank needs "
          "the same number of whole micro-batches",
          world, m);
  Require(config.train.grad_accumulation == "sequential",
          "config keys 'parallel.sharding' (zero3) and 'train.grad_accumulation' ({}): zero3 needs "
          "train.grad_accumulation: sequential",
          config.train.grad_accumulation);
}

Zero3::~Zero3() {
  if (comm_.rank() != 0 || steps_ == 0) return;
  const double steps = static_cast<double>(steps_);
  std::fprintf(stderr,
               "[zero3] rank 0 of %d: %lld steps; unit gathers %.3f s/step, gradient folds %.3f "
               "s/step, loss fold + grad norm %.3f s/step (waiting for other ranks included); "
               "prefetch %s (%lld of %lld acquires prefetched), %s gathers\n",
               comm_.world(), static_cast<long long>(steps_), gathers_s_ / steps, folds_s_ / steps,
               reduce_s_ / steps, prefetch_ ? "on" : "off",
               static_cast<long long>(hits_), static_cast<long long>(acquires_),
               bf16_gathers_ ? "bf16 matmul-weight" : "fp32");
}

Zero3ParamStore& Zero3::store() {
  Require(store_ != nullptr, "ZeRO-3: no parameter store made yet");
  return *store_;
}

int64_t Zero3::SumTokens(int64_t local) {
  Require(local >= 0 && local < (int64_t{1} << 53), "ZeRO-3: token count {} out of range", local);
  int64_t total = 0;
  for (double c : AllGatherEqual(comm_, {static_cast<double>(local)}))
    total += static_cast<int64_t>(c);
  return total;
}

double Zero3::ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars,
                              const Backend& backend) {
  // The optimizer step writes the master parameters next (counted in the store's gather time).
  store().Drain();
  const auto t0 = Clock::now();
  // Every rank's loss sums; rank r's local micro-batch k is global j = k·R + r.
  const std::vector<double> all = AllGatherEqual(comm_, local_scalars_);
  const size_t world = static_cast<size_t>(comm_.world());
  const size_t per_rank = local_scalars_.size() / TreeAccumulator::kScalars;
  TreeAccumulator::Scalars sums{};
  for (size_t k = 0; k < per_rank; ++k) {
    for (size_t r = 0; r < world; ++r) {
      const double* s = all.data() + (r * per_rank + k) * TreeAccumulator::kScalars;
      for (int i = 0; i < TreeAccumulator::kScalars; ++i) sums[i] = sums[i] + s[i];
    }
  }
  scalars = sums;
  Zero3ParamStore& st = store();
  Require(&grads == &st.accumulator(), "ZeRO-3: ReduceGradients takes the store's accumulator");
  const double norm = OwnedGradNorm(comm_, st.plan(), grads.data(), backend);
  reduce_s_ += SecondsSince(t0);
  // The store counts from its start; the report is per step of this reducer.
  gathers_s_ = st.gather_seconds();
  folds_s_ = st.fold_seconds();
  hits_ = st.prefetch_hits();
  acquires_ = st.acquires();
  ++steps_;
  return norm;
}

std::unique_ptr<Optimizer> Zero3::MakeOptimizer(const ParamLayout& layout,
                                                std::unique_ptr<const UpdateRule> rule,
                                                const Backend& backend) {
  return std::make_unique<ShardedOptimizer>(layout, std::move(rule), GatherPolicy::kGatherOnUse,
                                            comm_, backend,
                                            store_ != nullptr ? &store_->master() : nullptr);
}

std::unique_ptr<ParamStore> Zero3::MakeParamStore(const ModelConfig& config,
                                                  const Backend& backend) {
  // The bf16 backend rounds every matmul weight to bf16 before use, so those may travel as bf16.
  bf16_gathers_ = backend.matmul_precision() == Precision::kBf16;
  if (override_) {
    prefetch_ = override_->prefetch;
    bf16_gathers_ = override_->bf16_matmul_weights;
  }
  auto store = std::make_unique<Zero3ParamStore>(
      config.BuildLayout(), config.num_layers, comm_, backend,
      Zero3StoreOptions{.prefetch = prefetch_, .bf16_matmul_weights = bf16_gathers_});
  store_ = store.get();
  return store;
}

std::unique_ptr<GradAccumulation> Zero3::MakeAccumulation(Olmo3Model&) {
  return std::make_unique<Accumulation>(*this);
}

OwnedParams Zero3::Owned(Olmo3Model&) {
  Zero3ParamStore& s = store();
  return {&s.master(), s.owned_begin(), s.owned_end()};
}

const FlatBuffer* Zero3::WholeParams(Olmo3Model&) {
  Zero3ParamStore& s = store();
  const bool root = comm_.rank() == 0;
  if (root && whole_.size() != s.plan().total()) whole_ = s.backend().AllocateFloats(s.plan().total());
  GatherOwned(comm_, s.plan(), s.master().data(), root ? whole_.data() : nullptr, s.backend());
  return root ? &whole_ : nullptr;
}

}  // namespace replica::parallel

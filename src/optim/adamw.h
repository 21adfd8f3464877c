// AdamW as OLMo-core's (optim/adamw.py) and the fixture README's training run (docs/design.md §3), on
// flat buffers (docs/design.md §2.1): parameters, gradients, m and v share one ParamLayout, and every
// loop is over float offsets, so a rank can update any contiguous range (update_rule.h ShardSpan:
// ZeRO-1 and ZeRO-3 shards) with the same code and bits.
//
// Per step, for every element, in this order (t = steps taken, 1 on the first update):
//   g  = coef · g                                  (coef = global clipping coefficient)
//   p  = p · (1 − lr·wd_p)                         (decoupled decay first; wd_p = 0 for no_decay)
//   m  = β1·m + (1 − β1)·g
//   v  = β2·v + (1 − β2)·g²
//   p  = p − (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + eps)
// Each element's arithmetic is done in float64 and rounded to fp32 storage once per step (p, m, v
// are fp32 in memory, as in OLMo-core). The result depends only on the element's own values, so it
// is bit-identical for any thread count or sharding.
//
// Gradient norm: ‖g‖₂ over the whole buffer as a fixed-order reduction: fp64 partial sums of g² over
// fixed blocks of kNormBlock floats (a block is summed sequentially by one thread), then the block
// partials summed in block order. Padding between views is zero and contributes nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "optim/adamw_config.h"
#include "optim/optimizer.h"
#include "optim/update_rule.h"
#include "tensor/flat_buffer.h"

namespace replica {

constexpr size_t kNormBlock = 4096;

// Σ g² over [begin, end) as fp64 partials per kNormBlock-aligned block, returned in block order
// (block b covers [b·kNormBlock, (b+1)·kNormBlock) ∩ [begin, end)). `begin` must be block-aligned.
// The sums run on `backend` (Backend::SumSquaresPartials).
std::vector<double> GradSquarePartials(const float* g, size_t begin, size_t end,
                                       const Backend& backend);
// sqrt of the in-order sum of GradSquarePartials over the whole buffer.
double GlobalGradNorm(const FlatBuffer& grads, const Backend& backend);
// min(1, max_norm / (norm + 1e-6)); exactly 1 when not clipping (or max_norm <= 0). A non-finite
// norm gives a non-finite coefficient, so the step's values show it (and the skip rule refuses it).
double ClipCoefficient(double norm, double max_norm);

// Per-element weight-decay factor table: wd for every view except the no_decay names (each of which
// must exist in the layout: Error naming it otherwise).
std::vector<double> DecayPerView(const ParamLayout& layout, const AdamWConfig& config);

// AdamW's update rule (update_rule.h) over one span: one Backend::AdamWUpdate call per parameter
// tensor the span overlaps, with that tensor's weight-decay factor.
class AdamWRule final : public UpdateRule {
 public:
  // Error naming the key for a bad config (RequireAdamWConfig, DecayPerView). `layout` must
  // outlive the rule.
  AdamWRule(const ParamLayout& layout, const AdamWConfig& config);
  void Apply(const ShardSpan& span, const StepArgs& step, const Backend& backend) const override;
  double max_grad_norm() const override { return config_.max_grad_norm; }
  const AdamWConfig& config() const { return config_; }

 private:
  const ParamLayout& layout_;
  AdamWConfig config_;
  std::vector<double> decay_;  // per view (DecayPerView)
};

// The factory of `optim.type: adamw` (update_rule.h).
std::unique_ptr<const UpdateRule> MakeAdamWRule(const ParamLayout& layout,
                                                const UpdateRuleConfig& config);

// Error naming the key unless betas holds two values (the rest is range-checked by the run config).
void RequireAdamWConfig(const AdamWConfig& config);

// The single-process optimizer: full-size m and v and the step counter t, starting at zero, updated
// by an UpdateRule over the whole layout (AdamWRule when built from an AdamWConfig). m and v are
// allocated by the first Step or SaveState unless LoadState brings them (so loading a checkpoint
// never holds two copies).
class AdamW final : public Optimizer {
 public:
  // `backend` runs the element updates and must outlive the optimizer.
  AdamW(const ParamLayout& layout, const AdamWConfig& config, const Backend& backend);
  AdamW(const ParamLayout& layout, std::unique_ptr<const UpdateRule> rule, const Backend& backend);

  // t += 1, then the update above with clip coefficient `clip_coef` over every element.
  void Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) override;
  // Its own state, no copy.
  const OptimizerState* SaveState() override;
  void LoadState(OptimizerState state) override;
  // The whole layout; params nullptr (the caller's buffer is authoritative).
  OwnedState Owned() override;
  void SetStep(int64_t t) override;
  int64_t step() const override { return state_.step; }
  double max_grad_norm() const override { return rule_->max_grad_norm(); }

  const Backend& backend() const { return backend_; }
  // Empty before the first Step, SaveState or LoadState.
  const FlatBuffer& m() const { return state_.m; }
  const FlatBuffer& v() const { return state_.v; }

 private:
  void Allocate();  // zero m and v unless present
  const ParamLayout& layout_;
  std::unique_ptr<const UpdateRule> rule_;
  const Backend& backend_;
  OptimizerState state_;
};

}  // namespace replica

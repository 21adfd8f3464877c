#include "optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/profile.h"
#include "core/error.h"

namespace replica {

std::vector<double> GradSquarePartials(const float* g, size_t begin, size_t end,
                                       const Backend& backend) {
  Require(begin % kNormBlock == 0, "grad norm: range start {} is not block-aligned", begin);
  if (end <= begin) return {};
  std::vector<double> partials((end - begin + kNormBlock - 1) / kNormBlock);
  backend.SumSquaresPartials(g + begin, static_cast<int64_t>(end - begin),
                             static_cast<int64_t>(kNormBlock), partials.data());
  return partials;
}

double GlobalGradNorm(const FlatBuffer& grads, const Backend& backend) {
  ProfileScope profile_scope(ProfileCategory::kOptimizer);
  double total = 0;
  for (double p : GradSquarePartials(grads.data(), 0, grads.size(), backend)) total += p;
  return std::sqrt(total);
}

double ClipCoefficient(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (norm + 1e-6));
}

std::vector<double> DecayPerView(const ParamLayout& layout, const AdamWConfig& config) {
  std::vector<double> decay(layout.views().size(), config.weight_decay);
  for (const std::string& name : config.no_decay) {
    const ParamView* v = layout.Find(name);
    Require(v != nullptr,
            "config key 'optim.no_decay': the model has no tensor named '{}' (names are Hugging "
            "Face names, e.g. model.embed_tokens.weight)",
            name);
    decay[static_cast<size_t>(v - layout.views().data())] = 0.0;
  }
  return decay;
}

AdamWRule::AdamWRule(const ParamLayout& layout, const AdamWConfig& config)
    : layout_(layout), config_(config) {
  RequireAdamWConfig(config_);
  decay_ = DecayPerView(layout, config_);
}

void AdamWRule::Apply(const ShardSpan& span, const StepArgs& args, const Backend& backend) const {
  ProfileScope profile_scope(ProfileCategory::kOptimizer);
  const size_t begin = span.begin, end = span.end;
  const double lr = args.lr;
  const double b1 = config_.betas[0], b2 = config_.betas[1], eps = config_.eps;
  const double bias1 = 1.0 - std::pow(b1, static_cast<double>(args.step));
  const double bias2_sqrt = std::sqrt(1.0 - std::pow(b2, static_cast<double>(args.step)));
  const double step_size = lr / bias1;
  const auto& views = layout_.views();
  for (size_t vi = 0; vi < views.size(); ++vi) {
    const size_t lo = std::max(begin, views[vi].offset);
    const size_t hi = std::min(end, views[vi].offset + views[vi].numel);
    if (lo >= hi) continue;
    const double keep = 1.0 - lr * decay_[vi];
    const AdamWCoefficients coefs{args.grad_coef, keep, b1, b2, step_size, bias2_sqrt, eps};
    const size_t at = lo - begin;
    backend.AdamWUpdate(span.params + at, span.grads + at, span.m + at, span.v + at,
                        static_cast<int64_t>(hi - lo), coefs);
  }
}

std::unique_ptr<const UpdateRule> MakeAdamWRule(const ParamLayout& layout,
                                                const UpdateRuleConfig& config) {
  return std::make_unique<AdamWRule>(layout, config);
}

void RequireAdamWConfig(const AdamWConfig& config) {
  Require(config.betas.size() == 2, "config key 'optim.betas': expected [beta1, beta2], got {} values",
          config.betas.size());
}

AdamW::AdamW(const ParamLayout& layout, const AdamWConfig& config, const Backend& backend)
    : AdamW(layout, std::make_unique<AdamWRule>(layout, config), backend) {}

AdamW::AdamW(const ParamLayout& layout, std::unique_ptr<const UpdateRule> rule,
             const Backend& backend)
    : layout_(layout), rule_(std::move(rule)), backend_(backend) {
  Require(rule_ != nullptr, "optimizer: no update rule");
}

void AdamW::Allocate() {
  if (state_.m.size() == layout_.total_floats()) return;
  state_.m = backend_.AllocateFloats(layout_.total_floats());
  state_.v = backend_.AllocateFloats(layout_.total_floats());
}

const OptimizerState* AdamW::SaveState() {
  Allocate();
  return &state_;
}

void AdamW::Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) {
  Allocate();
  FlatBuffer& m = state_.m;
  Require(params.size() == m.size() && grads.size() == m.size(),
          "optimizer: buffer sizes differ (params {}, grads {}, state {})", params.size(),
          grads.size(), m.size());
  ++state_.step;
  rule_->Apply({.begin = 0, .end = m.size(), .params = params.data(), .grads = grads.data(),
                .m = m.data(), .v = state_.v.data()},
               {.lr = lr, .grad_coef = clip_coef, .step = state_.step}, backend_);
}

void AdamW::LoadState(OptimizerState state) {
  Require(state.m.size() == layout_.total_floats() && state.v.size() == layout_.total_floats(),
          "optimizer: state has {} / {} floats of m / v, the model needs {}", state.m.size(),
          state.v.size(), layout_.total_floats());
  Require(state.step >= 0, "optimizer: step count {} is negative", state.step);
  state_ = std::move(state);
}

OwnedState AdamW::Owned() {
  Allocate();
  return {0, layout_.total_floats(), nullptr, state_.m.data(), state_.v.data()};
}

void AdamW::SetStep(int64_t t) {
  Require(t >= 0, "optimizer: step count {} is negative", t);
  state_.step = t;
}

}  // namespace replica

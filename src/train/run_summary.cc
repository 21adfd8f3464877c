#include "train/run_summary.h"

#include <fmt/format.h>

#include <algorithm>

#include "data/mixture.h"
#include "optim/schedule.h"

namespace replica {
namespace {

std::string ModelLine(const ModelConfig& m) {
  const int64_t sliding = std::count(m.layer_types.begin(), m.layer_types.end(),
                                     AttentionType::kSliding);
  std::string layers = fmt::format("{} layers (all full attention)", m.num_layers);
  if (sliding == m.num_layers)
    layers = fmt::format("{} layers (all sliding-window {})", m.num_layers, m.sliding_window);
  else if (sliding > 0)
    layers = fmt::format("{} layers ({} sliding-window {}, {} full)", m.num_layers, sliding,
                         m.sliding_window, m.num_layers - sliding);
  return fmt::format(
      "model: {}, {}, hidden {}, MLP {}, {} heads / {} kv heads of {}, vocab {}{}, {} params, "
      "init std {}; RoPE {}",
      m.model_type, layers, m.hidden_size, m.intermediate_size, m.num_heads, m.num_kv_heads,
      m.head_dim, m.vocab_size, m.tie_word_embeddings ? " (tied)" : "", m.NumParams(),
      m.initializer_range, m.RopeSummary());
}

std::string DataLine(const RunConfig& c, const data::InstanceDataset& d, uint64_t batches) {
  const uint64_t instances = d.num_instances();
  const uint64_t tokens = instances * static_cast<uint64_t>(d.seq_len());
  const std::string common = fmt::format(
      "{} instances of {} tokens ({} tokens, {}), {} global batches per epoch, order seed {}",
      instances, d.seq_len(), tokens, c.data.dtype, batches, c.data.seed);
  const auto* mixture = dynamic_cast<const data::MixtureDataset*>(&d);
  if (!mixture) return fmt::format("data: {} path(s), {}", c.data.paths.size(), common);
  std::string sources;
  for (size_t i = 0; i < mixture->plan().size(); ++i) {
    const data::MixtureSourcePlan& p = mixture->plan()[i];
    const RunConfig::MixtureSource& s = c.data.mixture[i];
    sources += fmt::format(
        "; {} (weight {}): {} of {} instances, {} tokens", p.name, s.weight, p.selected_instances,
        p.available_instances, p.selected_instances * static_cast<uint64_t>(d.seq_len()));
  }
  return fmt::format("data: mixture of {} sources (mixture seed {}), {}{}", c.data.mixture.size(),
                     c.data.mixture_seed, common, sources);
}

std::string OptimLine(const RunConfig& c) {
  const RunConfig::Optim& o = c.optim;
  const SkipStepConfig& k = c.train.skip_step;
  return fmt::format(
      "optim: AdamW betas ({}, {}), eps {}, weight decay {} (0 on {} tensor(s)), grad clip {}, "
      "z-loss {}, skip-step {}",
      o.betas.at(0), o.betas.at(1), o.eps, o.weight_decay, o.no_decay.size(),
      o.max_grad_norm > 0 ? fmt::format("{}", o.max_grad_norm) : std::string("off"),
      c.train.z_loss_multiplier,
      k.enabled ? fmt::format("{} sigma over the last {} steps (from {})", k.sigma, k.window,
                              k.min_history)
                : std::string("off"));
}

std::string ScheduleLine(const RunConfig& c) {
  const ScheduleConfig& s = c.optim.schedule;
  const double lr = c.optim.lr;
  std::string at;
  for (int64_t step : ScheduleProbeSteps(c))
    at += fmt::format("{}{} {:.4g}", at.empty() ? "" : ", ", step, LrAt(s, lr, step));
  std::string shape = fmt::format("peak {:.4g}", lr);
  if (s.warmup > 0)
    shape += fmt::format(" after {} warm-up steps from {:.4g}", s.warmup, s.warmup_min_lr);
  if (s.type != ScheduleType::kConstant) {
    shape += fmt::format(", {:.4g} at t_max {}", LrAt(s, lr, s.t_max), s.t_max);
    if (s.type == ScheduleType::kWsd) shape += fmt::format(" (decay over {} steps)", s.decay_steps);
  }
  return fmt::format("schedule: {}, {}; lr at step {}", ScheduleTypeName(s.type), shape, at);
}

}  // namespace

std::vector<int64_t> ScheduleProbeSteps(const RunConfig& c) {
  const int64_t last = c.train.max_steps;
  const int64_t warm = std::min(c.optim.schedule.warmup, last);
  std::vector<int64_t> steps = {1, warm, warm + (last - warm) / 2, last};
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  std::erase_if(steps, [&](int64_t s) { return s < 1 || s > last; });
  return steps;
}

std::vector<std::string> ResolvedConfigLines(const RunConfig& config,
                                             const data::InstanceDataset& dataset,
                                             uint64_t batches_per_epoch) {
  return {ModelLine(config.model), DataLine(config, dataset, batches_per_epoch),
          OptimLine(config), ScheduleLine(config)};
}

}  // namespace replica

#include "optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace replica {
namespace {

// OLMo-core _linear_warmup: min + (lr - min) * min(step, warmup) / warmup, evaluated left to right.
double LinearWarmup(double lr, int64_t step, int64_t warmup, double min_lr) {
  return min_lr + (lr - min_lr) * static_cast<double>(std::min(step, warmup)) /
                      static_cast<double>(warmup);
}

// OLMo-core _linear_decay: min + (lr - min) * min(from_end, decay) / decay.
double LinearDecay(double lr, int64_t from_end, int64_t decay, double min_lr) {
  return min_lr + (lr - min_lr) * static_cast<double>(std::min(from_end, decay)) /
                      static_cast<double>(decay);
}

double Cosine(double eta_min, double lr, double current, double t_max) {
  return eta_min + (lr - eta_min) * (1 + std::cos(std::numbers::pi * current / t_max)) / 2;
}

}  // namespace

const char* ScheduleTypeName(ScheduleType type) {
  switch (type) {
    case ScheduleType::kConstant: return "constant";
    case ScheduleType::kCosine: return "cosine";
    case ScheduleType::kCosineContinuation: return "cosine_continuation";
    case ScheduleType::kLinear: return "linear";
    case ScheduleType::kWsd: return "wsd";
  }
  return "?";
}

ScheduleType ParseScheduleType(const std::string& name, const std::string& field) {
  for (ScheduleType t : {ScheduleType::kConstant, ScheduleType::kCosine,
                         ScheduleType::kCosineContinuation, ScheduleType::kLinear,
                         ScheduleType::kWsd}) {
    if (name == ScheduleTypeName(t)) return t;
  }
  Fail("config key '{}': unknown schedule '{}' (expected constant, cosine, cosine_continuation, "
       "linear or wsd)",
       field, name);
}

void ValidateSchedule(const ScheduleConfig& s, double lr0) {
  Require(lr0 > 0 && std::isfinite(lr0), "config key 'optim.lr': expected a positive number, got {}",
          lr0);
  Require(s.warmup >= 0, "config key 'optim.schedule.warmup': expected >= 0, got {}", s.warmup);
  Require(s.warmup_min_lr >= 0 && (s.warmup == 0 || s.warmup_min_lr < lr0),
          "config key 'optim.schedule.warmup_min_lr': expected 0 <= value < optim.lr, got {}",
          s.warmup_min_lr);
  Require(s.alpha_f >= 0 && s.alpha_f <= 1,
          "config key 'optim.schedule.alpha_f': expected a value in [0, 1], got {}", s.alpha_f);
  if (s.type == ScheduleType::kConstant) return;
  Require(s.t_max > 0, "config key 'optim.schedule.t_max': expected > 0, got {}", s.t_max);
  if (s.type == ScheduleType::kWsd) {
    Require(s.decay_steps > 0 && s.decay_steps <= s.t_max,
            "config key 'optim.schedule.decay_steps': expected 1..t_max ({}), got {}", s.t_max,
            s.decay_steps);
    Require(s.decay_min_lr >= 0 && s.decay_min_lr < lr0,
            "config key 'optim.schedule.decay_min_lr': expected 0 <= value < optim.lr, got {}",
            s.decay_min_lr);
    Require(s.warmup <= s.t_max - s.decay_steps,
            "config key 'optim.schedule.warmup': warmup ({}) overlaps the decay (t_max {} - "
            "decay_steps {})",
            s.warmup, s.t_max, s.decay_steps);
  } else {
    Require(s.warmup < s.t_max, "config key 'optim.schedule.warmup': expected < t_max ({}), got {}",
            s.t_max, s.warmup);
  }
}

double LrAt(const ScheduleConfig& s, double lr0, int64_t step) {
  const double eta_min = lr0 * s.alpha_f;
  switch (s.type) {
    case ScheduleType::kConstant:
      if (s.warmup > 0 && step <= s.warmup) return LinearWarmup(lr0, step, s.warmup, s.warmup_min_lr);
      return lr0;
    case ScheduleType::kCosine:
      if (step < s.warmup) return LinearWarmup(lr0, step, s.warmup, s.warmup_min_lr);
      if (step >= s.t_max) return eta_min;
      return Cosine(eta_min, lr0, static_cast<double>(step - s.warmup),
                    static_cast<double>(s.t_max - s.warmup));
    case ScheduleType::kCosineContinuation: {
      if (step < s.warmup) {
        const double max_lr = eta_min + (lr0 - eta_min) / 2;
        return LinearWarmup(max_lr, step, s.warmup, s.warmup_min_lr);
      }
      if (step >= s.t_max) return eta_min;
      // The second half of a cosine twice as long: shift by the half length and double it.
      const int64_t half = s.t_max - s.warmup;
      return Cosine(eta_min, lr0, static_cast<double>(step - s.warmup + half),
                    static_cast<double>(half * 2));
    }
    case ScheduleType::kLinear:
      if (step < s.warmup) return LinearWarmup(lr0, step, s.warmup, s.warmup_min_lr);
      if (step >= s.t_max) return eta_min;
      return lr0 - (lr0 - eta_min) * (static_cast<double>(step - s.warmup) /
                                      static_cast<double>(s.t_max - s.warmup));
    case ScheduleType::kWsd:
      if (s.warmup > 0 && step <= s.warmup) return LinearWarmup(lr0, step, s.warmup, s.warmup_min_lr);
      if (step >= s.t_max - s.decay_steps)
        return LinearDecay(lr0, std::max<int64_t>(s.t_max - step, 0), s.decay_steps,
                           s.decay_min_lr);
      return lr0;
  }
  return lr0;
}

}  // namespace replica

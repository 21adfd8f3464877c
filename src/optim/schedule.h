// Learning-rate schedules with OLMo-core's semantics (olmo_core/optim/scheduler.py): the LR of
// optimizer step s (1-based, as OLMo-core's trainer counts) as a pure function of the schedule and
// s, in float64 with the same operation order as the Python code, so the value at any step equals
// the reference formula to the last bit that double arithmetic allows.
//
//   constant              lr0 (with warmup > 0: OLMo-core ConstantWithWarmup)
//   cosine                CosWithWarmup: linear warmup, then cosine from lr0 to alpha_f·lr0 at t_max
//   cosine_continuation   HalfCosWithWarmup: linear warmup to the cosine midpoint (lr0+lr_min)/2,
//                         then the second half of a cosine ending at alpha_f·lr0 at t_max
//                         (Olmo 3 stage 1 part 2)
//   linear                LinearWithWarmup: warmup, then linear from lr0 to alpha_f·lr0 at t_max
//                         (Olmo 3 stage 2: warmup 0, alpha_f 0)
//   wsd                   warmup, stable at lr0, linear decay to decay_min_lr over the last
//                         decay_steps steps before t_max
#pragma once
#include <cstdint>
#include <string>

namespace replica {

enum class ScheduleType { kConstant, kCosine, kCosineContinuation, kLinear, kWsd };

const char* ScheduleTypeName(ScheduleType type);
// Parses "constant" | "cosine" | "cosine_continuation" | "linear" | "wsd"; Error naming `field`.
ScheduleType ParseScheduleType(const std::string& name, const std::string& field);

struct ScheduleConfig {
  ScheduleType type = ScheduleType::kCosine;
  int64_t warmup = 0;         // steps of linear warmup from warmup_min_lr
  int64_t t_max = 0;          // step where the decay ends (0 = train.max_steps, resolved by config)
  double alpha_f = 0.1;       // final LR = alpha_f · lr0 (cosine, cosine_continuation, linear)
  double warmup_min_lr = 0;   // LR at step 0 of the warmup
  int64_t decay_steps = 0;    // wsd: length of the final linear decay
  double decay_min_lr = 0;    // wsd: LR at t_max
};

// Error naming the offending `optim.schedule.*` field when the schedule is inconsistent.
void ValidateSchedule(const ScheduleConfig& s, double lr0);

// LR of 1-based optimizer step `step` (step 0 is allowed and gives the warmup start).
double LrAt(const ScheduleConfig& s, double lr0, int64_t step);

}  // namespace replica

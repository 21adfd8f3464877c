// What the trainer does with a step whose loss or gradient norm is NaN or ±Inf (docs/training.md,
// "Non-finite steps"):
//  - the step's update is not applied (TrainStep leaves parameters and Adam state untouched and
//    keeps the value out of the skip-step history, which it would poison);
//  - the step is counted and its metrics line says "non_finite": true;
//  - after kMaxConsecutive such steps in a row the run stops with an Error (exit 2) before it
//    writes another checkpoint, naming the step and the values, so a diverged run never spends
//    its remaining steps producing nothing or leaves NaN checkpoints behind.
// The rule is a pure function of the sequence of (loss, grad norm), so every data-parallel rank
// (which sees the same reduced values) decides the same; its counts are part of the trainer state
// a checkpoint keeps (Restore), so a resumed run decides as an uninterrupted one.
#pragma once
#include <cstdint>

namespace replica {

bool IsFiniteStep(double loss, double grad_norm);

class NonFiniteGuard {
 public:
  static constexpr int64_t kMaxConsecutive = 5;

  // Records step `step`'s values; returns true when they are finite (the update may be applied).
  bool Observe(int64_t step, double loss, double grad_norm);
  // Error (exit 2) when the run must stop; call after the step's metrics line is written and
  // before any checkpoint of that step.
  void StopIfDiverged() const;

  int64_t consecutive() const { return consecutive_; }
  int64_t total() const { return total_; }
  int64_t first_step() const { return consecutive_ > 0 ? first_step_ : 0; }
  // Continues the counts a checkpoint saved (TrainState non_finite), so a resumed run stops at
  // the same step as an uninterrupted one. Error when they are inconsistent.
  void Restore(int64_t total, int64_t consecutive, int64_t first_step);

 private:
  int64_t consecutive_ = 0, total_ = 0;
  int64_t first_step_ = 0, last_step_ = 0;  // of the current consecutive run
  double last_loss_ = 0, last_grad_norm_ = 0;
};

}  // namespace replica

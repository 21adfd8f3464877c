#include "train/non_finite_guard.h"

#include <cmath>

#include "core/error.h"

namespace replica {

bool IsFiniteStep(double loss, double grad_norm) {
  return std::isfinite(loss) && std::isfinite(grad_norm);
}

bool NonFiniteGuard::Observe(int64_t step, double loss, double grad_norm) {
  if (IsFiniteStep(loss, grad_norm)) {
    consecutive_ = 0;
    return true;
  }
  if (consecutive_ == 0) first_step_ = step;
  ++consecutive_;
  ++total_;
  last_step_ = step;
  last_loss_ = loss;
  last_grad_norm_ = grad_norm;
  return false;
}

void NonFiniteGuard::StopIfDiverged() const {
  if (consecutive_ < kMaxConsecutive) return;
  Fail("training diverged: steps {} to {} ({} in a row) had a non-finite loss or gradient norm "
       "(last: loss {}, grad norm {}), so their updates were not applied; stopping before writing "
       "a checkpoint (the run's checkpoints hold finite weights). Lower optim.lr or check the data, "
       "then resume or start a new --run-dir",
       first_step_, last_step_, consecutive_, last_loss_, last_grad_norm_);
}

}  // namespace replica

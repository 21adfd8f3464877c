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

void NonFiniteGuard::Restore(int64_t total, int64_t consecutive, int64_t first_step) {
  Require(consecutive >= 0 && consecutive <= total && consecutive < kMaxConsecutive &&
              (consecutive == 0 || first_step > 0),
          "non-finite step counts: total {}, consecutive {} from step {} are inconsistent", total,
          consecutive, first_step);
  total_ = total;
  consecutive_ = consecutive;
  first_step_ = consecutive > 0 ? first_step : 0;
  last_step_ = consecutive > 0 ? first_step + consecutive - 1 : 0;
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

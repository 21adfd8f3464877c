// The coefficients of one AdamW update of a parameter tensor (optim/adamw.h gives the math and
// the order of operations): the argument of Backend::AdamWUpdate.
#pragma once

namespace replica {

struct AdamWCoefficients {
  double grad_coef;    // clipping coefficient applied to g
  double keep;         // 1 - lr * weight_decay of this tensor
  double beta1, beta2;
  double step_size;    // lr / (1 - beta1^t)
  double bias2_sqrt;   // sqrt(1 - beta2^t)
  double eps;
};

}  // namespace replica

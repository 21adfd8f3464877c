// The SwiGLU gate of the Olmo 3 MLP, elementwise in fp32: s = silu(g) ⊙ u, silu(x) = x·sigmoid(x).
// The gate and up projections and the down projection are Linear ops around it.
// Elementwise: each element's result depends only on its own inputs (bit-identical for any thread
// count); outputs must not alias the inputs.
#pragma once
#include <cstdint>

namespace replica {

// g, u, s [n] (n = rows * intermediate size).   s = g * sigmoid(g) * u
void SwiGLUForward(const float* g, const float* u, int64_t n, float* s);
// Backward of the line above; accumulates (+=) into dg, du [n].
//   dg += ds * u * σ(g) * (1 + g (1 - σ(g)))      du += ds * g σ(g)
void SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                    float* du);

// Plain scalar references (double arithmetic) for the tests.
void SwiGLUForwardReference(const float* g, const float* u, int64_t n, float* s);
void SwiGLUBackwardReference(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                             float* du);

}  // namespace replica

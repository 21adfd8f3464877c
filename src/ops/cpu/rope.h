// Rotary position embedding, "rotate half" layout (HF / OLMo-core): dimension j of a head is paired
// with j + hd/2. The cos/sin tables are built once per (max positions, head dim, RopeParams):
// angles t·inv_freq[j] (plain RoPE or YaRN, ops/rope_params.h) and m·cos, m·sin (m = the YaRN
// attention factor, 1 for plain RoPE) are computed in double and rounded to float once, so the
// table is the exact one to a half-ulp (an fp32 angle drifts by ~t·2^-24 rad at position t). The
// rotation itself runs in fp32, each element from its own pair, so results do not depend on the
// thread count. With m in the table, q·k of a YaRN layer is scaled by m².
#pragma once
#include <cstdint>
#include <vector>

#include "ops/rope_params.h"
#include "ops/rope_table.h"

namespace replica {

// x, y [B, T, heads, hd]. The position of row (b, t) is t when `positions` is null, else
// positions[b·T + t] (positions restarting in each packed document, or one decoding step's
// position); every position must be below table.max_positions. y may alias x.
//   y[j]      = m (x[j] cos φ(t,j) - x[j+hd/2] sin φ(t,j))
//   y[j+hd/2] = m (x[j+hd/2] cos φ(t,j) + x[j] sin φ(t,j))        j < hd/2, φ = t·inv_freq[j]
void RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                 const int32_t* positions, float* y);
// Backward of the line above (the transposed rotation); accumulates (+=) into dx. dx != dy.
//   dx[j] += dy[j] cos + dy[j+hd/2] sin ;  dx[j+hd/2] += dy[j+hd/2] cos - dy[j] sin
void RopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T, int64_t heads,
                  const int32_t* positions, float* dx);

// Plain scalar fp64 references for the tests: the inverse frequencies (plain or YaRN, written out
// from the formula independently of RopeInvFreq), the angles, cos, sin and m are computed on the
// fly in double; only the outputs are rounded to float.
std::vector<double> RopeInvFreqReference(const RopeParams& params, int64_t head_dim);
void RopeForwardReference(int64_t head_dim, const RopeParams& params, const float* x, int64_t B,
                          int64_t T, int64_t heads, float* y);
void RopeBackwardReference(int64_t head_dim, const RopeParams& params, const float* dy, int64_t B,
                           int64_t T, int64_t heads, float* dx);
// Plain RoPE with this theta.
void RopeForwardReference(int64_t head_dim, double theta, const float* x, int64_t B, int64_t T,
                          int64_t heads, float* y);
void RopeBackwardReference(int64_t head_dim, double theta, const float* dy, int64_t B, int64_t T,
                           int64_t heads, float* dx);

}  // namespace replica

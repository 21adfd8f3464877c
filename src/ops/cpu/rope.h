// Rotary position embedding, "rotate half" layout (HF / OLMo-core): dimension j of a head is paired
// with j + hd/2. The cos/sin tables are built once per (max positions, head dim, theta); angles
// t·θ^(-2j/hd) and their cos/sin are computed in double and rounded to float once, so the table
// is the exact one to a half-ulp (an fp32 angle drifts by ~t·2^-24 rad at position t; on the short
// fixtures both choices measure the same). The rotation itself runs in fp32, each element from its
// own pair, so results do not depend on the thread count.
#pragma once
#include <cstdint>
#include <vector>

namespace replica {

struct RopeTable {
  int64_t max_positions = 0, head_dim = 0;
  double theta = 0;
  std::vector<float> cos, sin;  // [max_positions, head_dim / 2]
};

RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, double theta);

// x, y [B, T, heads, hd]; position of row (b, t) is t. y may alias x.
//   y[j]      = x[j] cos φ(t,j) - x[j+hd/2] sin φ(t,j)
//   y[j+hd/2] = x[j+hd/2] cos φ(t,j) + x[j] sin φ(t,j)        j < hd/2
void RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                 float* y);
// Backward of the line above (the transposed rotation); accumulates (+=) into dx. dx != dy.
//   dx[j] += dy[j] cos + dy[j+hd/2] sin ;  dx[j+hd/2] += dy[j+hd/2] cos - dy[j] sin
void RopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T, int64_t heads,
                  float* dx);

// Plain scalar references computing the angles on the fly in double (for the tests).
void RopeForwardReference(int64_t head_dim, double theta, const float* x, int64_t B, int64_t T,
                          int64_t heads, float* y);
void RopeBackwardReference(int64_t head_dim, double theta, const float* dy, int64_t B, int64_t T,
                           int64_t heads, float* dx);

}  // namespace replica

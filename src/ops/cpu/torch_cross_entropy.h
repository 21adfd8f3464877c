// OLMo-core's loss as torch's CPU kernels compute it in fp32 (cross_entropy_loss on the logits'
// .float(): F.cross_entropy with reduction "sum" and logsumexp for the z-loss), for bf16-fsdp
// (fsdp_bf16.h). Every order and every exp/log below is torch's except where said:
//  - log_softmax over the last dimension (ATen _vec_log_softmax_lastdim): the row max, then
//    Σ exp(x − max) in one vector accumulator of `lanes` floats (Vectorized<float>: 16 on an
//    AVX-512 CPU, 8 on AVX2), consecutive vectors added in order, a partial last vector into its
//    first lanes, the lanes reduced by halves (lane i + lane i ^ lanes/2, then ^lanes/4, … ^1);
//    fewer than `lanes` values are added in order. exp and log are SLEEF's expf_u10 and logf_u10
//    (ATen's Vectorized exp() / log()). log_softmax[v] = (x[v] − max) − log Σ.
//  - nll_loss, reduction "sum": −log_softmax[label] over the rows with label != -100, in row
//    order, in ATen's 8-level cascade (level step 2^max(4, ⌈log2 N⌉ / 8)), the levels added from 0.
//  - logsumexp(-1): log(Σ exp(x − max)) + max, the sum torch's cascade sum (torch_sum.h). Its
//    elementwise exp and log are MKL's vector math in torch's wheel; glibc's expf/logf here, which
//    give the same lse for 97–100% of the rows (an fp32 ulp apart elsewhere).
// The fp32 results are those torch gives for any thread count; the order does not depend on the
// machine replica runs on.
#pragma once
#include <cstdint>

namespace replica {

// SLEEF 3's xexpf (expf_u10) and xlogf_u1 (logf_u10) with FMA, one lane: ATen's Vectorized<float>
// exp() and log() on AVX2 and AVX-512.
float SleefExpF(float x);
float SleefLogF(float x);

// Vectorized<float>'s width on AVX-512 CPUs (the CPU OLMo-core's bf16 references were made on);
// on AVX2 it is 8.
constexpr int kTorchLossLanes = 16;

// One row of log_softmax's statistics: *max = max x, returns log Σ exp(x − max).
float TorchLogSoftmaxLogSum(const float* x, int64_t V, int lanes, float* max);
// torch.logsumexp over one row of V floats.
float TorchLogsumexp(const float* x, int64_t V);

// nll_loss's "sum" reduction: Add(−log_softmax[label]) for every row in row order, ignored rows
// included (they advance nothing but are skipped as torch skips them).
class TorchNllSum {
 public:
  explicit TorchNllSum(int64_t rows);
  // Row b's term, b = 0, 1, … in order; `ignored` for label -100 (its value is not read).
  void Add(int64_t b, bool ignored, float neg_logp);
  float Total() const;

 private:
  static constexpr int kLevels = 8;
  int64_t level_power_ = 4;
  float partial_[kLevels] = {};
};

// log_softmax's backward of nll_loss's, plus logsumexp's of the z-loss, for one row, as autograd
// runs them: with gl = the loss's gradient (1 / the batch's label count, fp32) and zl = gl · z-loss
// multiplier (fp32, 0 without a z-loss),
//   g[v] = (onehot[v] · −gl − SleefExp((x[v] − max) − logsum) · −gl) + (zl · 2 lse) · exp(x[v] − lse)
// (all terms 0 for an ignored row; exp of the z term glibc's, torch's is MKL's).
void TorchLossRowGrad(const float* x, int64_t V, int32_t label, float max, float logsum,
                      float lse, float gl, float zl, float* g);

}  // namespace replica

#include "ops/cpu/aten_gemm.h"

#include <algorithm>
#include <vector>

#include "ops/cpu/parallel.h"

namespace replica {
namespace {

float AtenDot(const float* a, const float* b, int64_t K) {
  float acc[64] = {};
  const int64_t main = K - K % 64;
  for (int64_t k0 = 0; k0 < main; k0 += 64)
    for (int e = 0; e < 64; ++e) acc[e] += a[k0 + e] * b[k0 + e];
  for (int width = 32; width >= 1; width /= 2)
    for (int e = 0; e < width; ++e) acc[e] = acc[e] + acc[e + width];
  float sum = acc[0];
  float tail[8] = {};
  const int64_t chunks = K - K % 16;
  for (int64_t k0 = main; k0 < chunks; k0 += 16) {
    for (int e = 0; e < 8; ++e) tail[e] += a[k0 + e] * b[k0 + e];
    for (int e = 0; e < 8; ++e) tail[e] += a[k0 + 8 + e] * b[k0 + 8 + e];
  }
  for (int width = 4; width >= 1; width /= 2)
    for (int e = 0; e < width; ++e) tail[e] = tail[e] + tail[e + width];
  sum += tail[0];
  for (int64_t k = chunks; k < K; ++k) sum += a[k] * b[k];
  return sum;
}

}  // namespace

void AtenDotGemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                 int64_t ldb, float* C, int64_t ldc) {
#pragma omp parallel for schedule(static) if (M * N * K >= kMinParallelWork)
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = AtenDot(A + i * lda, B + j * ldb, K);
}

void AtenIlp4Gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float* C, int64_t ldc) {
  const int64_t groups = K - K % 4;
#pragma omp parallel for schedule(static) if (M * N * K >= kMinParallelWork)
  for (int64_t i = 0; i < M; ++i) {
    std::vector<float> part(static_cast<size_t>(4 * N), 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[i * lda + k];
      const float* bk = B + k * ldb;
      float* acc = part.data() + (k < groups ? k % 4 : 0) * N;
      for (int64_t j = 0; j < N; ++j) acc[j] += a * bk[j];
    }
    float* ci = C + i * ldc;
    for (int64_t j = 0; j < N; ++j)
      ci[j] = ((part[j] + part[N + j]) + part[2 * N + j]) + part[3 * N + j];
  }
}

void AtenSeqGemmTnAccumulate(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                             const float* B, int64_t ldb, float* C, int64_t ldc) {
#pragma omp parallel for schedule(static) if (M * N * K >= kMinParallelWork)
  for (int64_t i = 0; i < M; ++i) {
    float* ci = C + i * ldc;
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[k * lda + i];
      const float* bk = B + k * ldb;
      for (int64_t j = 0; j < N; ++j) ci[j] += a * bk[j];
    }
  }
}

}  // namespace replica

#include "ops/cpu/embedding.h"
#include "core/error.h"
#include "core/half.h"
#include "core/profile.h"
#include "ops/cpu/parallel.h"

#include <omp.h>

#include <cstring>

namespace replica {

void EmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D, float* out) {
  ProfileScope profile_scope(ProfileCategory::kEmbedding);
#pragma omp parallel for schedule(static) if (N * D >= kMinParallelWork)
  for (int64_t i = 0; i < N; ++i) {
    std::memcpy(out + i * D, table + static_cast<int64_t>(tokens[i]) * D, D * sizeof(float));
  }
}

void EmbeddingForwardStored(const StoredMatrix& table, const int32_t* tokens, int64_t N,
                            float* out) {
  ProfileScope profile_scope(ProfileCategory::kEmbedding);
  const int64_t D = table.cols;
  if (table.dtype == DType::kF32)
    return EmbeddingForward(static_cast<const float*>(table.data), tokens, N, D, out);
  Require(table.dtype == DType::kBF16 || table.dtype == DType::kF16,
          "embedding: a table stored as {} cannot be read (F32, BF16 or F16)",
          DTypeName(table.dtype));
  const bool bf16 = table.dtype == DType::kBF16;
  const auto* bits = static_cast<const uint16_t*>(table.data);
#pragma omp parallel for schedule(static) if (N * D >= kMinParallelWork)
  for (int64_t i = 0; i < N; ++i) {
    const uint16_t* row = bits + static_cast<int64_t>(tokens[i]) * D;
    float* o = out + i * D;
    for (int64_t j = 0; j < D; ++j) o[j] = bf16 ? Bf16ToF32(row[j]) : F16ToF32(row[j]);
  }
}

void EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V, int64_t D,
                       float* dtable) {
  ProfileScope profile_scope(ProfileCategory::kEmbedding);
#pragma omp parallel if (N * D >= kMinParallelWork)
  {
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    const int64_t v0 = V * id / nt, v1 = V * (id + 1) / nt;
    for (int64_t i = 0; i < N; ++i) {
      const int64_t tok = tokens[i];
      if (tok < v0 || tok >= v1) continue;
      float* row = dtable + tok * D;
      const float* g = dout + i * D;
      for (int64_t j = 0; j < D; ++j) row[j] += g[j];
    }
  }
}

void EmbeddingBackwardReference(const int32_t* tokens, const float* dout, int64_t N, int64_t D,
                                float* dtable) {
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < D; ++j) dtable[static_cast<int64_t>(tokens[i]) * D + j] += dout[i * D + j];
}

}  // namespace replica

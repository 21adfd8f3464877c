// Token embedding lookup and its gradient. The backward is a scatter-add made deterministic without
// atomics: each thread owns a fixed range of vocabulary rows and adds the positions holding its
// tokens in ascending position order, so a token repeated in the batch is summed in one fixed order
// whatever the thread count. Outputs must not alias the table or the incoming gradient.
#pragma once
#include <cstdint>

#include "ops/stored_matrix.h"

namespace replica {

// table [V, D]; tokens [N] (each in [0, V), checked by the caller); out [N, D]
//   out[i, :] = table[tokens[i], :]
void EmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D, float* out);
// The same lookup from a table kept as stored (F32, BF16 or F16; Error otherwise), each element
// widened to fp32 exactly: table [V, D] = [table.rows, table.cols].
void EmbeddingForwardStored(const StoredMatrix& table, const int32_t* tokens, int64_t N,
                            float* out);
// Backward of EmbeddingForward; accumulates (+=) into dtable [V, D].
//   dtable[tokens[i], :] += dout[i, :]   for i = 0 .. N-1 in order
void EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V, int64_t D,
                       float* dtable);

// Plain scalar reference of the backward (single thread, position order).
void EmbeddingBackwardReference(const int32_t* tokens, const float* dout, int64_t N, int64_t D,
                                float* dtable);

}  // namespace replica

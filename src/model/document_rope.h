// RoPE over packed rows (Olmo3Model with cu_doc_lens). OLMo-core's RotaryEmbedding, given
// cu_doc_lens, rotates flat position p of document [c_d, c_{d+1}) by position p - c_d: positions
// restart at 0 in every document (ops/document_mask.h). RoPE is relative, so within a document
// this changes q·k only by the rounding of the cos/sin table entries used; with the restart, every
// rotated q and k is bit for bit what the document alone would give.
#pragma once
#include <cstdint>

#include "ops/backend.h"

namespace replica {

// x [B, T, heads, hd] rotated in place: by t within its row when cu_doc_lens is null, else by
// its position within its document (one RopeForward per non-empty document). cu_doc_lens must
// be valid for B rows of T (ValidateDocumentLengths).
void DocumentRopeForward(const Backend& ops, const RopeTable& rope, const int32_t* cu_doc_lens,
                         int64_t num_cu_doc_lens, float* x, int64_t B, int64_t T, int64_t heads);
// The backward of the line above: accumulates into dx (dx != dy).
void DocumentRopeBackward(const Backend& ops, const RopeTable& rope, const int32_t* cu_doc_lens,
                          int64_t num_cu_doc_lens, const float* dy, int64_t B, int64_t T,
                          int64_t heads, float* dx);

}  // namespace replica

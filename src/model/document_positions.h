// RoPE positions over packed rows (Olmo3Model with cu_doc_lens). OLMo-core's RotaryEmbedding,
// given cu_doc_lens, rotates flat position p of document [c_d, c_{d+1}) by position p - c_d:
// positions restart at 0 in every document (ops/document_mask.h). RoPE is relative, so within a
// document this changes q·k only by the rounding of the cos/sin table entries used; with the
// restart, every rotated q and k is bit for bit what the document alone would give. The positions
// go to Backend::RopeForward / RopeBackward, which rotate all rows in one call.
#pragma once
#include <cstdint>
#include <vector>

namespace replica {

// positions[p] = p - (the start of the document holding flat position p), for p < B·T.
// cu_doc_lens must be valid for B rows of T (ValidateDocumentLengths).
std::vector<int32_t> DocumentPositions(const int32_t* cu_doc_lens, int64_t num_cu_doc_lens,
                                       int64_t B, int64_t T);

}  // namespace replica

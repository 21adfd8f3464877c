// Intra-document masking: the per-position bounds that OLMo-core's cu_doc_lens implies
// (attention_shape.h). Positions are flattened over [B, T]; a document [c_d, c_{d+1}) lies in one
// row b (no document crosses a row start b·T). Key j is visible to query i (same row) iff
//   start(i) <= j <= i  and, with a window W > 0, i - W < j,
// where start(i) is the in-row position of the first token of i's document; equivalently query i
// sees key j iff j <= i < end(j), end(j) one past the last in-row position of j's document.
// RoPE restarts at 0 in every document (OLMo-core's RotaryEmbedding with cu_doc_lens), so the
// rotary position of flat position p is p - c_d for p in [c_d, c_{d+1}).
#pragma once
#include <cstdint>

namespace replica {

// Throws Error unless cu_doc_lens[0, n) describes documents over B·T positions as above:
// n >= 2, cu[0] = 0, cu[n-1] = B·T, non-decreasing (empty documents allowed), and every row
// start b·T (0 < b < B) one of the entries.
void ValidateDocumentLengths(const int32_t* cu_doc_lens, int64_t n, int64_t B, int64_t T);

// start[p], end[p] for every flat position p < B·T: the in-row positions [start, end) of the
// document holding p. cu_doc_lens must be valid (ValidateDocumentLengths).
void DocumentBounds(const int32_t* cu_doc_lens, int64_t n, int64_t B, int64_t T, int32_t* start,
                    int32_t* end);

}  // namespace replica

// The shape of one attention call (Backend::AttentionForward / AttentionBackward): batch B,
// sequence T, query heads H, key/value heads KV (H a multiple of KV), head dim hd, and the
// sliding window (0 = full causal). Layouts: q, out [B, T, H, hd]; k, v [B, T, KV, hd];
// lse [B, H, T].
//
// Intra-document masking (OLMo-core's cu_doc_lens): when cu_doc_lens is set, it holds the
// num_cu_doc_lens cumulative document lengths over the B·T flattened positions (0 first, B·T
// last, non-decreasing, every row start b·T among them: no document crosses a row), and a query
// sees only the keys of its own document, within the window as before (ops/document_mask.h).
// Null = one document per row; every result is then the same as before masking existed.
#pragma once
#include <cstdint>

namespace replica {

struct AttentionShape {
  int64_t B, T, H, KV, hd;
  int64_t window;  // 0 = full causal
  const int32_t* cu_doc_lens = nullptr;  // [num_cu_doc_lens], or null (no masking)
  int64_t num_cu_doc_lens = 0;
};

// One decoding step's attention (Backend::AttentionDecode): the query of position `pos`, q [H, hd],
// against one layer's key/value cache of `capacity` slots, k and v [capacity, KV, hd], where
// position p sits in slot p mod capacity. The query sees positions max(0, pos - window + 1) .. pos
// (window 0: every position from 0), all of which the cache must still hold: capacity >= the
// visible count. out [H, hd].
struct DecodeAttentionShape {
  int64_t H, KV, hd;
  int64_t window;    // 0 = full causal
  int64_t capacity;  // cache slots
  int64_t pos;       // the query's position
};

}  // namespace replica

// The shape of one attention call (Backend::AttentionForward / AttentionBackward): batch B,
// sequence T, query heads H, key/value heads KV (H a multiple of KV), head dim hd, and the
// sliding window (0 = full causal). Layouts: q, out [B, T, H, hd]; k, v [B, T, KV, hd];
// lse [B, H, T].
#pragma once
#include <cstdint>

namespace replica {

struct AttentionShape {
  int64_t B, T, H, KV, hd;
  int64_t window;  // 0 = full causal
};

}  // namespace replica

#include "model/document_rope.h"

namespace replica {

void DocumentRopeForward(const Backend& ops, const RopeTable& rope, const int32_t* cu,
                         int64_t n, float* x, int64_t B, int64_t T, int64_t heads) {
  if (cu == nullptr) return ops.RopeForward(rope, x, B, T, heads, x);
  const int64_t width = heads * rope.head_dim;
  for (int64_t d = 0; d + 1 < n; ++d) {
    const int64_t c0 = cu[d], len = cu[d + 1] - c0;
    if (len > 0) ops.RopeForward(rope, x + c0 * width, 1, len, heads, x + c0 * width);
  }
}

void DocumentRopeBackward(const Backend& ops, const RopeTable& rope, const int32_t* cu,
                          int64_t n, const float* dy, int64_t B, int64_t T, int64_t heads,
                          float* dx) {
  if (cu == nullptr) return ops.RopeBackward(rope, dy, B, T, heads, dx);
  const int64_t width = heads * rope.head_dim;
  for (int64_t d = 0; d + 1 < n; ++d) {
    const int64_t c0 = cu[d], len = cu[d + 1] - c0;
    if (len > 0) ops.RopeBackward(rope, dy + c0 * width, 1, len, heads, dx + c0 * width);
  }
}

}  // namespace replica

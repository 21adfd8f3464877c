// Overflow-checked int64 arithmetic for sizes computed from user input (config.json fields, shapes,
// header fields): a product or sum that does not fit is an Error naming what was being computed
// (`what`, e.g. "'head_dim' * 'num_attention_heads'"), never a wrapped value that passes a check.
#pragma once
#include <cstdint>
#include <string_view>

#include "core/error.h"

namespace replica {

inline int64_t CheckedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    Fail("{}: {} * {} overflows a 64-bit integer", what, a, b);
  return r;
}

inline int64_t CheckedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    Fail("{}: {} + {} overflows a 64-bit integer", what, a, b);
  return r;
}

}  // namespace replica

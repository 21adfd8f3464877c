// Rounding fp32 values to bfloat16 precision (round to nearest even, NaN stays NaN) while keeping
// them in fp32 storage: the result is exactly the fp32 value of the bf16 number, so a product of
// two rounded values is exact in fp32 (8 × 8 significant bits) and an fp32 GEMM over rounded
// operands is a bf16-input, fp32-accumulate matmul. Element-wise, so any thread split gives the
// same bits.
#pragma once
#include <cstdint>
#include <cstring>

namespace replica {

// The fp32 value of the nearest bf16 (ties to even); NaN stays a (quiet) NaN, ±Inf stays.
inline float RoundToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const uint32_t nan = (u | 0x00400000u) & 0xffff0000u;
  u = (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// The bf16 bits of RoundToBf16(f): its upper 16 bits.
inline uint16_t Bf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u | 0x00400000u) >> 16;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// dst[i] = RoundToBf16(src[i]) for i < n (dst may equal src).
void RoundToBf16(const float* src, float* dst, int64_t n);
// The same on a rows × cols block with leading dimensions ld_src, ld_dst.
void RoundToBf16(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows,
                 int64_t cols);
// To bf16 storage (uint16 bits) on a rows × cols block.
void ConvertToBf16(const float* src, int64_t ld_src, uint16_t* dst, int64_t ld_dst, int64_t rows,
                   int64_t cols);

}  // namespace replica

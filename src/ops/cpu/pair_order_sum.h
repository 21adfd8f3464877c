// The order oneDNN's bf16 dot product (vdpbf16ps) adds the terms of a bf16-output GEMM, which
// bf16-fsdp follows (fsdp_bf16.h): one fp32 accumulator, the terms in pairs, each pair's odd
// index first: 1, 0, 3, 2, ... (a last odd term alone); each add rounded.
#pragma once
#include <cstdint>

namespace replica {

// Σ term(t) for t < n in that order; term(t) gives the t-th product.
template <typename Term>
float PairOrderSum(int64_t n, Term term) {
  // One add per iteration at index t ^ 1: GCC 12 -O2 vectorizes a loop body of two adds into one
  // accumulator into a wrong sum, so the pair order is spelled through the index.
  const int64_t last = n % 2 == 1 ? n - 1 : -1;
  float acc = 0;
  for (int64_t t = 0; t < n; ++t) acc += term(t == last ? t : (t ^ 1));
  return acc;
}

}  // namespace replica

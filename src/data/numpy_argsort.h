// numpy's np.argsort(values) with the default kind ("quicksort") on int64, as numpy 2.4.6 computes
// it on its scalar path: an introsort over the index array (median-of-three quicksort, insertion
// sort on runs of at most 16, heapsort once the depth budget 2 * floor(log2 n) is spent). The
// sort is not stable, so the order of equal values is part of what is reproduced.
//
// numpy picks an AVX-512 or AVX2 kernel (x86-simd-sort) at run time where the CPU has one, and
// those order ties differently; OLMo-core's packing (InstancePacker, np.argsort of the negated
// document lengths) therefore matches this only when numpy runs with
// NPY_DISABLE_CPU_FEATURES="AVX512_SPR AVX512_ICL X86_V4 X86_V3" (docs/data.md, "Packing").
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace replica::data {

// The permutation p with values[p[0]] <= values[p[1]] <= ..., ties as numpy's scalar introsort
// leaves them.
std::vector<int64_t> NumpyArgsort(std::span<const int64_t> values);

}  // namespace replica::data

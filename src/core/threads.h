// Threads for non-GEMM work (OpenMP, static partition) and the BLAS thread count, set together.
// Determinism (docs/design.md §2.3): every output element is written by exactly one thread, and any
// reduction runs in a fixed order that does not depend on the number of threads.
#pragma once
#include <cstdint>

namespace replica {

// The most threads a command or train.threads accepts (a larger count is a typo, and libgomp fails
// inside its own start-up on one).
inline constexpr int kMaxThreads = 1024;

// Sets OpenMP's thread count (n <= 0 means "all cores") and keeps OpenBLAS single-threaded:
// GEMMs get their threads from OpenMP through ops/cpu/gemm.h, which is deterministic.
void SetNumThreads(int n);
int NumThreads();

}  // namespace replica

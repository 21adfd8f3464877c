// When an op's loop is worth OpenMP threads. Every op computes each output element the same way
// whichever thread runs it, so skipping threads for small loops changes no bit; it only avoids
// fork/join cost that dominates tiny shapes (decode, T = 1, test models).
#pragma once
#include <cstdint>

namespace replica {

// Elements (or multiply-adds) below which a loop runs on the calling thread.
constexpr int64_t kMinParallelWork = int64_t{1} << 15;

}  // namespace replica

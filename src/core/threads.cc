#include "core/threads.h"

#include <omp.h>

#include <thread>

extern "C" void openblas_set_num_threads(int);

namespace replica {
namespace {
int g_threads = 0;
}

void SetNumThreads(int n) {
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  g_threads = n;
  omp_set_num_threads(n);
  // OpenBLAS's own threading is not bit-identical across thread counts; GEMMs are parallelised by
  // replica's shape-determined tiling instead (ops/cpu/gemm.h), each tile on one BLAS thread.
  openblas_set_num_threads(1);
}

int NumThreads() {
  if (g_threads == 0) SetNumThreads(0);
  return g_threads;
}

}  // namespace replica

// A streaming-read benchmark of main memory: what bounds one-token decoding, which reads every
// weight byte once per token. The figure is the best of `repeats` passes over a buffer of `bytes`
// (much larger than the caches, in huge-page memory: core/huge_pages.h), all threads reading
// disjoint contiguous ranges.
#pragma once
#include <cstddef>

namespace replica {

// Bytes per second.
double MeasureReadBandwidth(size_t bytes = size_t{2} << 30, int repeats = 5);

}  // namespace replica

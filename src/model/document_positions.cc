#include "model/document_positions.h"

#include <cstddef>

namespace replica {

std::vector<int32_t> DocumentPositions(const int32_t* cu, int64_t n, int64_t B, int64_t T) {
  std::vector<int32_t> positions(static_cast<size_t>(B * T));
  for (int64_t d = 0; d + 1 < n; ++d)
    for (int32_t p = cu[d]; p < cu[d + 1]; ++p) positions[p] = p - cu[d];
  return positions;
}

}  // namespace replica

#include "ops/document_mask.h"

#include "core/error.h"

namespace replica {

void ValidateDocumentLengths(const int32_t* cu, int64_t n, int64_t B, int64_t T) {
  Require(cu != nullptr, "document lengths: {} entries but no cu_doc_lens", n);
  Require(n >= 2, "document lengths: cu_doc_lens needs at least 2 entries (0 and B*T), got {}", n);
  Require(cu[0] == 0, "document lengths: cu_doc_lens must start at 0, got {}", cu[0]);
  Require(cu[n - 1] == B * T,
          "document lengths: cu_doc_lens must end at B*T = {} (B={}, T={}), got {}", B * T, B, T,
          cu[n - 1]);
  int64_t next_row = T;  // the next row start b·T that must appear
  for (int64_t d = 0; d + 1 < n; ++d) {
    Require(cu[d] <= cu[d + 1], "document lengths: cu_doc_lens decreases at entry {} ({} > {})",
            d + 1, cu[d], cu[d + 1]);
    if (cu[d + 1] > next_row) {
      Fail("document lengths: the document [{}, {}) crosses the start of row {} (position {}); "
           "documents must not span rows",
           cu[d], cu[d + 1], next_row / T, next_row);
    }
    if (cu[d + 1] == next_row) next_row += T;
  }
}

void DocumentBounds(const int32_t* cu, int64_t n, int64_t B, int64_t T, int32_t* start,
                    int32_t* end) {
  for (int64_t d = 0; d + 1 < n; ++d) {
    const int64_t lo = cu[d], hi = cu[d + 1];
    if (lo == hi) continue;
    const int64_t row0 = lo / T * T;  // the document's row start (it lies in one row)
    for (int64_t p = lo; p < hi; ++p) {
      start[p] = static_cast<int32_t>(lo - row0);
      end[p] = static_cast<int32_t>(hi - row0);
    }
  }
}

}  // namespace replica

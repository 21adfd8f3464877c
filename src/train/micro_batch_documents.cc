#include "train/micro_batch_documents.h"

#include <algorithm>

#include "core/error.h"
#include "ops/document_mask.h"

namespace replica {

void GatherDocumentLengths(const int32_t* cu, int64_t num, int64_t rows, int64_t T,
                           const int64_t* rows_of, int64_t n, std::vector<int32_t>& out) {
  ValidateDocumentLengths(cu, num, rows, T);
  out.assign(1, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows_of[i];
    Require(r >= 0 && r < rows, "micro-batch documents: row {} outside the batch of {} rows", r,
            rows);
    // The row's entries after its start, up to and including its end (both are entries).
    const int32_t* first = std::upper_bound(cu, cu + num, static_cast<int32_t>(r * T));
    const int32_t* last = std::upper_bound(first, cu + num, static_cast<int32_t>((r + 1) * T));
    for (const int32_t* e = first; e != last; ++e) {
      out.push_back(static_cast<int32_t>(*e - r * T + i * T));
    }
  }
}

}  // namespace replica

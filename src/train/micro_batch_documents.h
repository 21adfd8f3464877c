// The document lengths of one micro-batch, cut from those of the rank batch it is gathered from.
// A rank batch of `rows` instances [rows, T] may come with OLMo-core's cu_doc_lens over all its
// rows·T positions (ops/document_mask.h: no document crosses a row, so every row start is an
// entry); micro-batch row i is batch row rows_of[i] (train_step.h), and its documents are that
// row's, shifted to start at i·T.
#pragma once
#include <cstdint>
#include <vector>

namespace replica {

// Writes into `out` the cu_doc_lens of the micro-batch of rows rows_of[0, n) (0 first, n·T last).
// Throws Error unless cu_doc_lens[0, num) is valid for `rows` rows of T and every rows_of[i] is a
// row.
void GatherDocumentLengths(const int32_t* cu_doc_lens, int64_t num, int64_t rows, int64_t T,
                           const int64_t* rows_of, int64_t n, std::vector<int32_t>& out);

}  // namespace replica

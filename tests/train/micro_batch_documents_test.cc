// GatherDocumentLengths: a micro-batch's cu_doc_lens are its rows' documents, in its row order,
// shifted to its own positions; empty documents inside a row are kept; bad input is an error.
#include "train/micro_batch_documents.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace replica {
namespace {

TEST(MicroBatchDocuments, RowsKeepTheirDocumentsInTheMicroBatchOrder) {
  // 4 rows of T = 5: [2, 3], [5], [1, 1, 3], [4, 0, 1].
  const std::vector<int32_t> cu{0, 2, 5, 10, 11, 12, 15, 19, 19, 20};
  std::vector<int32_t> out;
  const int64_t rows_of[] = {2, 0};
  GatherDocumentLengths(cu.data(), static_cast<int64_t>(cu.size()), 4, 5, rows_of, 2, out);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 1, 2, 5, 7, 10}));
  const int64_t last[] = {3, 1};
  GatherDocumentLengths(cu.data(), static_cast<int64_t>(cu.size()), 4, 5, last, 2, out);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 4, 4, 5, 10}));
}

TEST(MicroBatchDocuments, BadInputIsAnError) {
  std::vector<int32_t> out;
  const int64_t row[] = {0};
  const std::vector<int32_t> crossing{0, 7, 10};  // crosses the row start 5
  EXPECT_THROW(GatherDocumentLengths(crossing.data(), 3, 2, 5, row, 1, out), Error);
  const std::vector<int32_t> ok{0, 5, 10};
  const int64_t outside[] = {2};
  EXPECT_THROW(GatherDocumentLengths(ok.data(), 3, 2, 5, outside, 1, out), Error);
}

}  // namespace
}  // namespace replica

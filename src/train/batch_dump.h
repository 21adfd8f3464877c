// `replica train --dump-batches DIR`: what the trainer fed, one JSON line per step and rank in
// DIR/rank-<r>.jsonl, written from the same buffer the training step reads:
//   {"step": s, "rank": r, "world": R, "instances": [...], "input_ids_sha256": "...",
//    "doc_lens": [[...], ...]}
// `instances` are this rank's dataset instance indices in row order (G[s - 1, r::R] for a run
// that started at step 1), `input_ids_sha256` the sha256 of its [rows, seq_len] input ids as
// little-endian int32. `doc_lens`, only when the run has document lengths (packed instances,
// data.generate_doc_lengths), holds per row the lengths of that row's documents: the batch's
// cu_doc_lens as the step's attention receives them, differenced and cut at the row starts, so
// each row's lengths sum to seq_len (a packed row's padding counts in its last lengths, as
// get_document_lengths splits it: docs/data.md). A resumed run appends its steps to the same
// files.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace replica {

class BatchDump {
 public:
  // Creates DIR if needed; Error naming the path when it cannot be created or opened.
  BatchDump(const std::string& dir, int64_t rank, int64_t world);
  ~BatchDump();
  BatchDump(const BatchDump&) = delete;
  BatchDump& operator=(const BatchDump&) = delete;

  // One line, flushed; Error naming the file when the write fails. cu_doc_lens: the batch's
  // (data/loader.h RankBatch), empty when it has none.
  void Write(int64_t step, const std::vector<uint32_t>& instances, const int32_t* input_ids,
             int64_t rows, int64_t seq_len, const std::vector<int32_t>& cu_doc_lens);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  int64_t rank_, world_;
};

}  // namespace replica

// `replica train --dump-batches DIR`: what the trainer fed, one JSON line per step and rank in
// DIR/rank-<r>.jsonl, written from the same buffer the training step reads:
//   {"step": s, "rank": r, "world": R, "instances": [...], "input_ids_sha256": "..."}
// `instances` are this rank's dataset instance indices in row order (G[s - 1, r::R] for a run
// that started at step 1), `input_ids_sha256` the sha256 of its [rows, seq_len] input ids as
// little-endian int32. A resumed run appends its steps to the same files.
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

  // One line, flushed; Error naming the file when the write fails.
  void Write(int64_t step, const std::vector<uint32_t>& instances, const int32_t* input_ids,
             int64_t rows, int64_t seq_len);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  int64_t rank_, world_;
};

}  // namespace replica

#include "train/batch_dump.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/checksum.h"
#include "core/error.h"

namespace replica {

BatchDump::BatchDump(const std::string& dir, int64_t rank, int64_t world)
    : rank_(rank), world_(world) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  Require(!ec, "--dump-batches {}: cannot create the directory: {}", dir, ec.message());
  path_ = (std::filesystem::path(dir) / ("rank-" + std::to_string(rank) + ".jsonl")).string();
  file_ = std::fopen(path_.c_str(), "a");
  Require(file_ != nullptr, "--dump-batches: cannot open {}: {}", path_, std::strerror(errno));
}

BatchDump::~BatchDump() {
  if (file_) std::fclose(file_);
}

namespace {

// Per row, the lengths of its documents: cu_doc_lens (0, ..., rows·T, every row start an entry)
// differenced; a document starting at c belongs to row c / T.
std::vector<std::vector<int32_t>> RowDocumentLengths(const std::vector<int32_t>& cu, int64_t rows,
                                                     int64_t seq_len) {
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(rows));
  for (size_t k = 0; k + 1 < cu.size(); ++k) {
    const int64_t row = std::min<int64_t>(cu[k] / seq_len, rows - 1);
    out[static_cast<size_t>(row)].push_back(cu[k + 1] - cu[k]);
  }
  return out;
}

}  // namespace

void BatchDump::Write(int64_t step, const std::vector<uint32_t>& instances,
                      const int32_t* input_ids, int64_t rows, int64_t seq_len,
                      const std::vector<int32_t>& cu_doc_lens) {
  // int32 is stored little-endian on every target replica builds for (x86-64).
  const std::string digest =
      Sha256Hex(input_ids, static_cast<size_t>(rows * seq_len) * sizeof(int32_t));
  nlohmann::json line = {{"step", step},
                         {"rank", rank_},
                         {"world", world_},
                         {"instances", instances},
                         {"input_ids_sha256", digest}};
  if (!cu_doc_lens.empty()) line["doc_lens"] = RowDocumentLengths(cu_doc_lens, rows, seq_len);
  const std::string text = line.dump() + "\n";
  Require(std::fwrite(text.data(), 1, text.size(), file_) == text.size() &&
              std::fflush(file_) == 0,
          "--dump-batches: cannot write {}: {}", path_, std::strerror(errno));
}

}  // namespace replica

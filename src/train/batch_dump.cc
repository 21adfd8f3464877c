#include "train/batch_dump.h"

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

void BatchDump::Write(int64_t step, const std::vector<uint32_t>& instances,
                      const int32_t* input_ids, int64_t rows, int64_t seq_len) {
  // int32 is stored little-endian on every target replica builds for (x86-64).
  const std::string digest =
      Sha256Hex(input_ids, static_cast<size_t>(rows * seq_len) * sizeof(int32_t));
  const nlohmann::json line = {{"step", step},           {"rank", rank_},
                               {"world", world_},        {"instances", instances},
                               {"input_ids_sha256", digest}};
  const std::string text = line.dump() + "\n";
  Require(std::fwrite(text.data(), 1, text.size(), file_) == text.size() &&
              std::fflush(file_) == 0,
          "--dump-batches: cannot write {}: {}", path_, std::strerror(errno));
}

}  // namespace replica

#include "data/fsl_dataset.h"

#include <algorithm>
#include <filesystem>

#include "core/checksum.h"
#include "core/error.h"
#include "data/data_order.h"

namespace replica::data {

NumpyFslDataset::NumpyFslDataset(const FslDatasetOptions& options,
                                 std::optional<DocumentBoundary> document_boundary)
    : seq_len_(options.seq_len), vocab_size_(options.vocab_size), boundary_(document_boundary) {
  Require(options.seq_len >= 2, "dataset: sequence length {} too small; need at least 2",
          options.seq_len);
  Require(!options.paths.empty(), "dataset: no token files given");
  Require(!boundary_ || boundary_->eos_token_id >= 0,
          "dataset: document lengths need an EOS token id, got {}",
          boundary_ ? boundary_->eos_token_id : 0);
  uint64_t seq = static_cast<uint64_t>(options.seq_len);
  files_.reserve(options.paths.size());
  first_instance_.push_back(0);
  // Fingerprint text: one line per field; files by base name so a moved corpus still resumes.
  Sha256 fp;
  fp.Update(fmt::format("replica.numpy_fsl.v1\nseq_len={}\ndtype={}\nvocab_size={}\n", seq,
                        DtypeName(options.dtype), options.vocab_size));
  for (const auto& path : options.paths) {
    files_.push_back(TokenFile::Open(path, options.dtype, options.vocab_size));
    const TokenFile& f = files_.back();
    first_instance_.push_back(first_instance_.back() + f.num_tokens() / seq);
    fp.Update(fmt::format("file={}\tbytes={}\txxh3={:016x}\n",
                          std::filesystem::path(path).filename().string(), f.size_bytes(),
                          f.content_hash()));
  }
  num_instances_ = first_instance_.back();
  Require(num_instances_ > 0,
          "dataset: {} token file(s) hold no complete instance of {} tokens (first: {})",
          files_.size(), seq, options.paths.front());
  Require(num_instances_ <= kMaxInstances, "dataset: {} instances; at most {} are supported",
          num_instances_, kMaxInstances);
  fingerprint_ = fp.HexDigest();
}

InstanceLocation NumpyFslDataset::Locate(uint64_t index) const {
  Require(index < num_instances_, "dataset: instance {} out of range; the dataset has {}", index,
          num_instances_);
  // Last file whose first instance is <= index; files with no instance share a start and are
  // skipped by taking the last one.
  auto it = std::upper_bound(first_instance_.begin(), first_instance_.end(), index);
  size_t f = static_cast<size_t>(it - first_instance_.begin()) - 1;
  return {f, (index - first_instance_[f]) * static_cast<uint64_t>(seq_len_)};
}

void NumpyFslDataset::ReadInstance(uint64_t index, int32_t* out) const {
  InstanceLocation loc = Locate(index);
  files_[loc.file].Read(loc.token_offset, static_cast<uint64_t>(seq_len_), out);
}

}  // namespace replica::data

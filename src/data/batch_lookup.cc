#include "data/batch_lookup.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/checksum.h"
#include "core/error.h"
#include "data/data_order.h"

namespace replica::data {
namespace {

// Reads `count` tokens starting at token `offset` of `path` as int32, touching only that range.
std::vector<int32_t> ReadTokens(const std::string& path, TokenDtype dtype, uint64_t offset,
                                uint64_t count) {
  const size_t item = DtypeSize(dtype);
  std::ifstream in(path, std::ios::binary);
  Require(in.good(), "{}: cannot open for reading", path);
  in.seekg(static_cast<std::streamoff>(offset * item));
  std::vector<uint8_t> bytes(count * item);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  Require(static_cast<size_t>(in.gcount()) == bytes.size(),
          "{}: short read of tokens [{}, {}) (the file changed size?)", path, offset,
          offset + count);
  std::vector<int32_t> out(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (dtype == TokenDtype::kUint16) {
      uint16_t v;
      std::memcpy(&v, bytes.data() + 2 * i, 2);
      out[i] = v;
    } else {
      uint32_t v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = static_cast<int32_t>(v);
    }
  }
  return out;
}

std::string PyOptional(int64_t v) {
  return v < 0 ? std::string("None") : std::to_string(v);
}

}  // namespace

BatchLookup LookupGlobalBatch(const BatchLookupOptions& o, uint64_t global_batch) {
  Require(!o.paths.empty(), "batch lookup: no token files given");
  Require(o.seq_len >= 2, "batch lookup: sequence length {} too small; need at least 2", o.seq_len);
  Require(o.global_batch_instances > 0,
          "batch lookup: the global batch must be at least 1 instance");
  const uint64_t item = DtypeSize(o.dtype);
  const uint64_t seq = static_cast<uint64_t>(o.seq_len);
  BatchLookup r;
  r.global_batch = global_batch;
  std::vector<uint64_t> first{0};  // first instance of each file, plus the total
  for (const std::string& path : o.paths) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    Require(!ec, "{}: cannot read the file size: {}", path, ec.message());
    Require(size % item == 0,
            "{}: size {} bytes is not a multiple of {} ({} token ids); wrong dtype or a truncated "
            "file?",
            path, size, item, DtypeName(o.dtype));
    r.file_sizes.push_back(size);
    first.push_back(first.back() + size / (item * seq));
  }
  r.num_instances = first.back();
  Require(r.num_instances > 0,
          "batch lookup: {} token file(s) hold no complete instance of {} tokens", o.paths.size(),
          seq);
  r.batches_per_epoch = r.num_instances / o.global_batch_instances;
  Require(
      r.batches_per_epoch > 0,
      "batch lookup: the global batch of {} instances is larger than the dataset ({} instances)",
      o.global_batch_instances, r.num_instances);
  r.epoch = 1 + global_batch / r.batches_per_epoch;
  r.batch_in_epoch = global_batch % r.batches_per_epoch;
  const GlobalOrder order(r.num_instances, o.seed, r.epoch, o.global_batch_instances);
  const uint64_t head = std::min<uint64_t>(o.head_tokens, seq);
  for (uint32_t g : order.Batch(r.batch_in_epoch)) {
    BatchInstance b;
    b.instance = g;
    auto it = std::upper_bound(first.begin(), first.end(), static_cast<uint64_t>(g));
    b.file = static_cast<size_t>(it - first.begin()) - 1;
    b.token_offset = (g - first[b.file]) * seq;
    if (o.document_boundary) {
      const std::vector<int32_t> ids = ReadTokens(o.paths[b.file], o.dtype, b.token_offset, seq);
      b.doc_lens = DocumentLengths(ids.data(), o.seq_len, *o.document_boundary);
      b.head.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(head));
      r.files_opened.insert(b.file);
    } else if (head > 0) {
      b.head = ReadTokens(o.paths[b.file], o.dtype, b.token_offset, head);
      r.files_opened.insert(b.file);
    }
    r.instances.push_back(std::move(b));
  }
  return r;
}

std::string OlmoCoreFslFingerprint(const std::vector<std::string>& paths,
                                   const std::vector<uint64_t>& file_sizes, TokenDtype dtype,
                                   const OlmoCoreFingerprintFields& f) {
  Require(paths.size() == file_sizes.size(), "fingerprint: {} paths but {} sizes", paths.size(),
          file_sizes.size());
  Sha256 h;
  h.Update("class=NumpyFSLDataset");
  h.Update(fmt::format("vocab_size={},", f.vocab_size));
  h.Update(fmt::format("pad_token_id={},", PyOptional(f.pad_token_id)));
  h.Update(fmt::format("eos_token_id={},", PyOptional(f.eos_token_id)));
  h.Update(fmt::format("dtype=<class 'numpy.{}'>,", DtypeName(dtype)));
  h.Update(fmt::format("max_target_sequence_length={},", PyOptional(f.max_target_sequence_length)));
  h.Update(fmt::format("bos_token_id={},", PyOptional(f.bos_token_id)));
  for (size_t i = 0; i < paths.size(); ++i)
    h.Update(fmt::format("path={},size={},", std::filesystem::path(paths[i]).filename().string(),
                         file_sizes[i]));
  return h.HexDigest();
}

}  // namespace replica::data

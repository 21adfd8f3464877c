#include "data/packed_dataset.h"

#include <algorithm>
#include <filesystem>

#include "core/checksum.h"
#include "core/error.h"
#include "data/data_order.h"

namespace replica::data {

std::string_view LongDocStrategyName(LongDocStrategy s) {
  return s == LongDocStrategy::kTruncate ? "truncate" : "fragment";
}

LongDocStrategy ParseLongDocStrategy(std::string_view name, std::string_view what) {
  if (name == "truncate") return LongDocStrategy::kTruncate;
  if (name == "fragment") return LongDocStrategy::kFragment;
  Fail("{}: unknown long-document strategy '{}' (OLMo-core's LongDocStrategy: 'truncate' or "
       "'fragment')",
       what, name);
}

std::vector<DocumentSpan> FileDocuments(const TokenFile& file, int64_t eos, int64_t bos,
                                        int64_t seq_len, LongDocStrategy strategy) {
  const uint64_t n = file.num_tokens();
  const uint64_t cap = static_cast<uint64_t>(seq_len);
  std::vector<DocumentSpan> docs;
  auto add = [&](uint64_t start, uint64_t end) {
    if (end - start <= cap) {
      docs.push_back({start, end});
    } else if (strategy == LongDocStrategy::kTruncate) {
      docs.push_back({start, start + cap});
    } else {
      for (uint64_t s = start; s < end; s += cap) docs.push_back({s, std::min(end, s + cap)});
    }
  };
  // Read in blocks so a large file is not copied whole; one token of look-ahead for the BOS test.
  constexpr uint64_t kBlock = uint64_t{1} << 20;
  std::vector<int32_t> buf;
  uint64_t start = 0;
  int32_t prev = 0;
  for (uint64_t off = 0; off < n; off += kBlock) {
    const uint64_t count = std::min(kBlock, n - off);
    buf.resize(count);
    file.Read(off, count, buf.data());
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t t = off + i;
      const int32_t cur = buf[i];
      if (bos < 0) {
        if (cur == eos) {
          add(start, t + 1);
          start = t + 1;
        }
      } else if (t > 0 && prev == eos && cur == bos) {
        add(start, t);  // the EOS at t - 1 ends a document
        start = t;
      }
      prev = cur;
    }
  }
  if (bos >= 0 && n > 0 && prev == eos) add(start, n);
  return docs;
}

PackedDataset::PackedDataset(const PackedDatasetOptions& o) : options_(o) {
  Require(!o.paths.empty(), "packed dataset: no token files given");
  Require(o.seq_len >= 2 && (o.seq_len & (o.seq_len - 1)) == 0,
          "packed dataset: sequence length {} is not a power of two (OLMo-core's OBFD packer "
          "requires one)",
          o.seq_len);
  Require(o.source_group_size >= 1, "packed dataset: source_group_size {} must be at least 1",
          o.source_group_size);
  Require(o.eos_token_id >= 0 && o.pad_token_id >= 0,
          "packed dataset: EOS ({}) and padding ({}) token ids must be set", o.eos_token_id,
          o.pad_token_id);
  Sha256 fp;
  fp.Update(fmt::format(
      "replica.numpy_packed.v1\nseq_len={}\ndtype={}\nvocab_size={}\neos={}\nbos={}\npad={}\n"
      "long_doc_strategy={}\nsource_group_size={}\n",
      o.seq_len, DtypeName(o.dtype), o.vocab_size, o.eos_token_id, o.bos_token_id, o.pad_token_id,
      LongDocStrategyName(o.long_doc_strategy), o.source_group_size));
  files_.reserve(o.paths.size());
  for (const auto& path : o.paths) {
    files_.push_back(TokenFile::Open(path, o.dtype, o.vocab_size));
    const TokenFile& f = files_.back();
    Require(f.num_tokens() > 0, "packed dataset: token file {} is empty", path);
    fp.Update(fmt::format("file={}\tbytes={}\txxh3={:016x}\n",
                          std::filesystem::path(path).filename().string(), f.size_bytes(),
                          f.content_hash()));
  }
  const size_t G = static_cast<size_t>(o.source_group_size);
  group_first_.push_back(0);
  for (size_t first = 0; first < files_.size(); first += G) {
    Group g;
    g.first_file = first;
    std::vector<DocumentSpan> docs;
    uint64_t offset = 0;
    for (size_t f = first; f < std::min(files_.size(), first + G); ++f) {
      g.file_start.push_back(offset);
      for (DocumentSpan d : FileDocuments(files_[f], o.eos_token_id, o.bos_token_id, o.seq_len,
                                          o.long_doc_strategy))
        docs.push_back({d.start + offset, d.end + offset});
      offset += files_[f].num_tokens();
    }
    PackedInstances packed = PackDocuments(docs, o.seq_len);
    g.documents = std::move(packed.documents);
    g.instance_offset.push_back(0);
    for (const auto& inst : packed.instances) {
      g.doc_ids.insert(g.doc_ids.end(), inst.begin(), inst.end());
      g.instance_offset.push_back(g.doc_ids.size());
    }
    total_tokens_ += packed.total_tokens;
    num_documents_ += g.documents.size();
    group_first_.push_back(group_first_.back() + packed.instances.size());
    groups_.push_back(std::move(g));
  }
  Require(num_instances() > 0,
          "packed dataset: {} token file(s) hold no document (a document ends with EOS token {}; "
          "tokens after a file's last EOS are dropped; first file: {})",
          files_.size(), o.eos_token_id, o.paths.front());
  Require(num_instances() <= kMaxInstances, "packed dataset: {} instances; at most {} are supported",
          num_instances(), kMaxInstances);
  fingerprint_ = fp.HexDigest();
}

std::pair<const PackedDataset::Group*, uint64_t> PackedDataset::Find(uint64_t index) const {
  Require(index < num_instances(), "packed dataset: instance {} out of range; the dataset has {}",
          index, num_instances());
  auto it = std::upper_bound(group_first_.begin(), group_first_.end(), index);
  const size_t g = static_cast<size_t>(it - group_first_.begin()) - 1;
  return {&groups_[g], index - group_first_[g]};
}

std::vector<PackedDataset::Piece> PackedDataset::InstancePieces(uint64_t index) const {
  auto [g, k] = Find(index);
  std::vector<Piece> out;
  for (uint64_t i = g->instance_offset[k]; i < g->instance_offset[k + 1]; ++i) {
    const DocumentSpan& d = g->documents[g->doc_ids[i]];
    // The last file of the group whose start is <= the document's start.
    auto it = std::upper_bound(g->file_start.begin(), g->file_start.end(), d.start);
    const size_t f = static_cast<size_t>(it - g->file_start.begin()) - 1;
    out.push_back({g->first_file + f, d.start - g->file_start[f], d.length()});
  }
  return out;
}

uint64_t PackedDataset::InstanceTokens(uint64_t index) const {
  auto [g, k] = Find(index);
  uint64_t n = 0;
  for (uint64_t i = g->instance_offset[k]; i < g->instance_offset[k + 1]; ++i)
    n += g->documents[g->doc_ids[i]].length();
  return n;
}

void PackedDataset::ReadInstance(uint64_t index, int32_t* out) const {
  uint64_t at = 0;
  for (const Piece& p : InstancePieces(index)) {
    files_[p.file].Read(p.offset, p.length, out + at);
    at += p.length;
  }
  std::fill(out + at, out + options_.seq_len, static_cast<int32_t>(options_.pad_token_id));
}

void PackedDataset::ReadLabelMask(uint64_t index, uint8_t* out) const {
  const uint64_t used = InstanceTokens(index);
  std::fill(out, out + used, uint8_t{1});
  std::fill(out + used, out + options_.seq_len, uint8_t{0});
}

std::optional<DocumentBoundary> PackedDataset::document_boundary() const {
  if (!options_.generate_doc_lengths) return std::nullopt;
  return DocumentBoundary{options_.eos_token_id, options_.bos_token_id};
}

std::string OlmoCorePackedFingerprint(const PackedDatasetOptions& o,
                                      const std::vector<uint64_t>& file_sizes) {
  Require(o.paths.size() == file_sizes.size(), "fingerprint: {} paths but {} sizes",
          o.paths.size(), file_sizes.size());
  auto py = [](int64_t v) { return v < 0 ? std::string("None") : std::to_string(v); };
  Sha256 h;
  h.Update("class=NumpyPackedFSLDataset");
  h.Update(fmt::format("vocab_size={},pad_token_id={},eos_token_id={},dtype=<class "
                       "'numpy.{}'>,long_doc_strategy={},bos_token_id={},sequence_length={},",
                       o.vocab_size, py(o.pad_token_id), py(o.eos_token_id), DtypeName(o.dtype),
                       LongDocStrategyName(o.long_doc_strategy), py(o.bos_token_id), o.seq_len));
  if (o.source_group_size > 1) h.Update(fmt::format("source_group_size={},", o.source_group_size));
  for (size_t i = 0; i < o.paths.size(); ++i)
    h.Update(fmt::format("path={},size={},", std::filesystem::path(o.paths[i]).filename().string(),
                         file_sizes[i]));
  return h.HexDigest();
}

}  // namespace replica::data

#include "tokenizer/tokenizer_batch.h"

#include <sys/resource.h>

#include "core/clock.h"
#include "core/error.h"

namespace replica {

std::vector<std::vector<uint32_t>> EncodeBatch(const Tokenizer& tokenizer,
                                               std::span<const std::string_view> texts,
                                               size_t chunk_bytes,
                                               const std::function<std::string(size_t)>& where) {
  struct Work {
    size_t text;
    std::string_view chunk;
  };
  std::vector<Work> work;
  work.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].empty()) continue;
    for (std::string_view c : tokenizer.SplitForParallelEncode(texts[i], chunk_bytes)) {
      work.push_back({i, c});
    }
  }
  std::vector<std::vector<uint32_t>> parts(work.size());
  std::vector<std::string> errors(work.size());
  const int64_t n = static_cast<int64_t>(work.size());
  // Each work item owns its output vector; dynamic scheduling only changes who computes it.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t w = 0; w < n; ++w) {
    try {
      // Encode into a vector on this thread's stack, then move it into place: appending to
      // parts[w] directly would rewrite its end pointer per token, on a cache line shared with
      // the neighbouring items' headers that the other threads are writing (false sharing halved
      // the two-thread rate).
      std::vector<uint32_t> ids;
      tokenizer.Encode(work[w].chunk, &ids);
      parts[w] = std::move(ids);
    } catch (const std::exception& e) {
      errors[w] = e.what();
    }
  }
  for (size_t w = 0; w < work.size(); ++w) {
    if (!errors[w].empty()) {
      size_t i = work[w].text;
      Fail("{}: {}", where ? where(i) : fmt::format("text #{}", i), errors[w]);
    }
  }
  std::vector<std::vector<uint32_t>> ids(texts.size());
  for (size_t w = 0; w < work.size(); ++w) {
    std::vector<uint32_t>& out = ids[work[w].text];
    if (out.empty()) {
      out = std::move(parts[w]);
    } else {
      out.insert(out.end(), parts[w].begin(), parts[w].end());
    }
    std::vector<uint32_t>().swap(parts[w]);
  }
  return ids;
}

}  // namespace replica

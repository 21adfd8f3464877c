#include "eval/decon.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>

#include "core/clock.h"
#include "core/error.h"
#include "core/mmap.h"

namespace replica::eval {
namespace {

std::vector<uint32_t> ToU32(const std::vector<int32_t>& v) { return {v.begin(), v.end()}; }

constexpr size_t kChunkTokens = size_t{1} << 20;

}  // namespace

NgramIndex BuildDeconIndex(const std::vector<EvalSet>& sets, const TextEncoder& encoder,
                           const DeconOptions& options) {
  std::vector<IndexedItem> items;
  for (const EvalSet& set : sets) {
    if (set.kind == SetKind::kPerplexity) {
      for (const PplDoc& d : set.docs) {
        items.push_back({set.path, d.id, options.ngram_ppl,
                         ToU32(d.tokens.empty() ? encoder.Encode(d.text) : d.tokens)});
      }
    } else {
      for (const McItem& m : set.items) {
        items.push_back({set.path, m.id, options.ngram_mc,
                         ToU32(encoder.Encode(m.context + m.choices[m.gold]))});
      }
    }
  }
  std::vector<NgramIndex::TableSpec> specs{{options.ngram_ppl, options.stride_ppl}};
  if (options.ngram_mc != options.ngram_ppl) specs.push_back({options.ngram_mc, options.stride_mc});
  return NgramIndex(std::move(items), specs);
}

ItemVerdict JudgeItem(const IndexedItem& item, const std::vector<Match>& matches,
                      const DeconOptions& options) {
  ItemVerdict v;
  std::vector<std::pair<uint64_t, uint64_t>> iv;
  for (const Match& m : matches) {
    iv.push_back({m.eval_offset, m.eval_offset + m.length});
    v.longest = std::max(v.longest, m.length);
  }
  std::sort(iv.begin(), iv.end());
  uint64_t covered = 0, cur_b = 0, cur_e = 0;
  bool open = false;
  for (const auto& [b, e] : iv) {
    if (open && b <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (open) covered += cur_e - cur_b;
    cur_b = b;
    cur_e = e;
    open = true;
  }
  if (open) covered += cur_e - cur_b;
  v.coverage = item.tokens.empty() ? 0.0 : static_cast<double>(covered) / item.tokens.size();
  // One contiguous span decides, not the union: short n-grams of common phrases can tile much of
  // a short item without it ever having been copied (the leak guard uses the same per-span rule).
  v.contaminated = !matches.empty() &&
                   (static_cast<double>(v.longest) >= options.min_coverage * item.tokens.size() ||
                    static_cast<int64_t>(v.longest) >= options.min_span);
  return v;
}

std::vector<Match> ScanStream(const NgramIndex& index, const uint32_t* tokens, size_t count,
                              int stride_override, uint64_t* probes) {
  std::vector<Match> out;
  uint64_t p = index.Scan(tokens, count, 0, count, &out, stride_override);
  if (probes) *probes += p;
  return out;
}

DeconReport ScanTokenFiles(const NgramIndex& index, const std::vector<std::string>& files,
                           int token_bytes, const ScanProgressFn& progress) {
  Require(token_bytes == 2 || token_bytes == 4, "token width must be 2 or 4 bytes (got {})", token_bytes);
  uint64_t total_tokens = 0;  // for progress only: a missing file is refused when it is opened
  for (const std::string& f : files) {
    std::error_code ec;
    const uintmax_t bytes = std::filesystem::file_size(f, ec);
    if (!ec) total_tokens += bytes / static_cast<uintmax_t>(token_bytes);
  }
  DeconReport report;
  report.train_files = files;
  report.threads = omp_get_max_threads();
  double seconds = 0;
  for (uint32_t f = 0; f < files.size(); ++f) {
    MappedFile file = MappedFile::Open(files[f]);
    Require(file.size() % static_cast<size_t>(token_bytes) == 0,
            "{}: size {} bytes is not a whole number of {}-byte tokens", files[f], file.size(),
            token_bytes);
    const size_t count = file.size() / static_cast<size_t>(token_bytes);
    std::vector<uint32_t> widened;
    const uint32_t* tokens = reinterpret_cast<const uint32_t*>(file.data());
    if (token_bytes == 2) {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(file.data());
      widened.assign(src, src + count);
      tokens = widened.data();
    }
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t chunks = static_cast<int64_t>((count + kChunkTokens - 1) / kChunkTokens);
    std::vector<std::vector<Match>> found(static_cast<size_t>(chunks));
    std::vector<uint64_t> probes(static_cast<size_t>(chunks), 0);
    std::vector<double> cpu(static_cast<size_t>(chunks), 0.0);
    std::atomic<uint64_t> scanned{0};
    if (progress) progress(report.train_tokens, total_tokens, files[f]);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const double c0 = ThreadCpuSeconds();
      const size_t b = static_cast<size_t>(c) * kChunkTokens, e = std::min(count, b + kChunkTokens);
      probes[c] = index.Scan(tokens, count, b, e, &found[c]);
      cpu[c] = ThreadCpuSeconds() - c0;
      const uint64_t done = scanned.fetch_add(e - b) + (e - b);
      if (progress && omp_get_thread_num() == 0)
        progress(report.train_tokens + done, total_tokens, files[f]);
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int64_t c = 0; c < chunks; ++c) {
      report.cpu_seconds += cpu[c];
      report.probes += probes[c];
      for (const Match& m : found[c]) report.hits.push_back({f, m});
    }
    report.train_tokens += count;
  }
  report.scan_seconds = seconds;
  // A span that crosses a chunk boundary is found from both chunks; maximal extension makes the
  // two copies identical, so sorting and dropping exact duplicates leaves each once.
  auto key = [](const TrainHit& h) {
    return std::tuple(h.match.item, h.file, h.match.train_offset, h.match.eval_offset, h.match.length);
  };
  std::sort(report.hits.begin(), report.hits.end(),
            [&](const TrainHit& a, const TrainHit& b) { return key(a) < key(b); });
  report.hits.erase(std::unique(report.hits.begin(), report.hits.end(),
                                [&](const TrainHit& a, const TrainHit& b) { return key(a) == key(b); }),
                    report.hits.end());
  return report;
}

int64_t DeconReport::ContaminatedItems(const NgramIndex& index, const DeconOptions& options) const {
  int64_t n = 0;
  for (size_t i = 0; i < hits.size();) {
    size_t j = i;
    std::vector<Match> ms;
    while (j < hits.size() && hits[j].match.item == hits[i].match.item) ms.push_back(hits[j++].match);
    n += JudgeItem(index.items()[hits[i].match.item], ms, options).contaminated;
    i = j;
  }
  return n;
}

nlohmann::json DeconReport::ToJson(const NgramIndex& index, const DeconOptions& options,
                                   size_t max_hits_per_item) const {
  nlohmann::json items = nlohmann::json::array();
  int64_t contaminated = 0;
  for (size_t i = 0; i < hits.size();) {
    size_t j = i;
    std::vector<Match> ms;
    nlohmann::json jh = nlohmann::json::array();
    while (j < hits.size() && hits[j].match.item == hits[i].match.item) {
      const TrainHit& h = hits[j++];
      ms.push_back(h.match);
      if (jh.size() < max_hits_per_item) {
        jh.push_back({{"train_file", train_files[h.file]},
                      {"offset", h.match.train_offset},
                      {"length", h.match.length},
                      {"eval_offset", h.match.eval_offset}});
      }
    }
    const IndexedItem& item = index.items()[hits[i].match.item];
    const ItemVerdict v = JudgeItem(item, ms, options);
    contaminated += v.contaminated;
    items.push_back({{"eval_file", item.file},
                     {"id", item.id},
                     {"tokens", item.tokens.size()},
                     {"coverage", v.coverage},
                     {"longest", v.longest},
                     {"contaminated", v.contaminated},
                     {"hits_total", ms.size()},
                     {"hits", jh}});
    i = j;
  }
  nlohmann::json unindexed = nlohmann::json::array();
  for (uint32_t u : index.unindexed()) {
    unindexed.push_back({{"eval_file", index.items()[u].file}, {"id", index.items()[u].id},
                         {"tokens", index.items()[u].tokens.size()}});
  }
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : index.tables()) {
    tables.push_back({{"ngram", t.ngram}, {"stride", t.stride}, {"guaranteed_span", t.ngram + t.stride - 1}});
  }
  const double tps = scan_seconds > 0 ? static_cast<double>(train_tokens) / scan_seconds : 0.0;
  return {{"eval_items", index.items().size()},
          {"contaminated_items", contaminated},
          {"items_with_overlap", items.size()},
          {"items", items},
          {"unindexed_items", unindexed},
          {"train_files", train_files},
          {"train_tokens", train_tokens},
          {"probes", probes},
          {"index", {{"ngrams", index.num_ngrams()}, {"bloom_bytes", index.bloom_bytes()},
                     {"table_bytes", index.table_bytes()}, {"tables", tables}}},
          {"rule", {{"min_coverage", options.min_coverage}, {"min_span", options.min_span}}},
          {"scan_seconds", scan_seconds},
          {"threads", threads},
          {"tokens_per_s", tps},
          {"tokens_per_s_per_thread", tps / std::max(1, threads)},
          {"scan_cpu_seconds", cpu_seconds},
          {"tokens_per_cpu_s", cpu_seconds > 0 ? static_cast<double>(train_tokens) / cpu_seconds : 0.0}};
}

}  // namespace replica::eval

#include "eval/ngram_index.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.h"

namespace replica::eval {

uint64_t NgramFingerprint(const uint32_t* tokens, int n) {
  return XXH3_64bits(tokens, static_cast<size_t>(n) * sizeof(uint32_t));
}

NgramIndex::NgramIndex(std::vector<IndexedItem> items, const std::vector<TableSpec>& strides)
    : items_(std::move(items)) {
  Require(items_.size() < (size_t{1} << 32), "too many eval items to index ({})", items_.size());
  for (const TableSpec& spec : strides) {
    Require(spec.ngram >= 1 && spec.stride >= 1, "n-gram length and stride must be >= 1 (got {}, {})",
            spec.ngram, spec.stride);
    for (const Table& t : tables_) Require(t.ngram != spec.ngram, "n-gram length {} given twice", spec.ngram);
    Table t;
    t.ngram = spec.ngram;
    t.stride = spec.stride;
    tables_.push_back(std::move(t));
  }
  for (Table& t : tables_) {
    std::vector<std::pair<uint64_t, Loc>> entries;
    for (uint32_t i = 0; i < items_.size(); ++i) {
      const IndexedItem& it = items_[i];
      if (it.ngram != t.ngram || it.tokens.size() < static_cast<size_t>(t.ngram)) continue;
      Require(it.tokens.size() < (size_t{1} << 32), "eval item {} is too long to index", it.id);
      for (size_t p = 0; p + t.ngram <= it.tokens.size(); ++p) {
        entries.push_back({NgramFingerprint(it.tokens.data() + p, t.ngram), Loc{i, static_cast<uint32_t>(p)}});
      }
    }
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first
                                : (a.second.item != b.second.item ? a.second.item < b.second.item
                                                                  : a.second.pos < b.second.pos);
    });
    t.bloom = BlockedBloom(entries.size());
    t.fps.reserve(entries.size());
    t.locs.reserve(entries.size());
    for (const auto& [fp, loc] : entries) {
      t.bloom.Insert(fp);
      t.fps.push_back(fp);
      t.locs.push_back(loc);
    }
  }
  for (uint32_t i = 0; i < items_.size(); ++i) {
    const IndexedItem& it = items_[i];
    bool has_table = false;
    for (const Table& t : tables_) has_table |= t.ngram == it.ngram;
    Require(has_table, "eval item {} uses {}-grams but no stride was given for them", it.id, it.ngram);
    if (it.tokens.size() < static_cast<size_t>(it.ngram)) unindexed_.push_back(i);
  }
}

size_t NgramIndex::num_ngrams() const {
  size_t n = 0;
  for (const Table& t : tables_) n += t.fps.size();
  return n;
}
size_t NgramIndex::bloom_bytes() const {
  size_t n = 0;
  for (const Table& t : tables_) n += t.bloom.bytes();
  return n;
}
size_t NgramIndex::table_bytes() const {
  size_t n = 0;
  for (const Table& t : tables_) n += t.fps.size() * (sizeof(uint64_t) + sizeof(Loc));
  return n;
}

std::vector<NgramIndex::TableSpec> NgramIndex::tables() const {
  std::vector<TableSpec> out;
  for (const Table& t : tables_) out.push_back({t.ngram, t.stride});
  return out;
}

uint64_t NgramIndex::Scan(const uint32_t* tokens, size_t count, size_t begin, size_t end,
                          std::vector<Match>* out, int stride_override) const {
  uint64_t probes = 0;
  for (const Table& t : tables_) {
    if (t.fps.empty()) continue;
    ScanTable(t, tokens, count, begin, end, stride_override > 0 ? stride_override : t.stride, out,
              &probes);
  }
  return probes;
}

void NgramIndex::ScanTable(const Table& t, const uint32_t* tokens, size_t count, size_t begin,
                           size_t end, int stride, std::vector<Match>* out, uint64_t* probes) const {
  const size_t n = static_cast<size_t>(t.ngram);
  if (count < n) return;
  const size_t s = static_cast<size_t>(stride);
  const size_t stop = std::min(end, count - n + 1);
  size_t p = (begin + s - 1) / s * s;
  // Matches already reported: a later probe on the same item and diagonal inside one of them
  // would only rediscover it. Kept short by dropping those that end before the probe position.
  std::vector<Match> active;
  constexpr int kBatch = 16;
  uint64_t fps[kBatch];
  size_t pos[kBatch];
  while (p < stop) {
    int nb = 0;
    for (; nb < kBatch && p < stop; ++nb, p += s) {
      pos[nb] = p;
      fps[nb] = NgramFingerprint(tokens + p, t.ngram);
      t.bloom.Prefetch(fps[nb]);
    }
    *probes += static_cast<uint64_t>(nb);
    for (int b = 0; b < nb; ++b) {
      if (!t.bloom.MayContain(fps[b])) continue;
      auto lo = std::lower_bound(t.fps.begin(), t.fps.end(), fps[b]);
      for (auto it = lo; it != t.fps.end() && *it == fps[b]; ++it) {
        const Loc& loc = t.locs[static_cast<size_t>(it - t.fps.begin())];
        const IndexedItem& item = items_[loc.item];
        const uint64_t q = pos[b], e = loc.pos;
        bool seen = false;
        for (const Match& m : active) {
          if (m.item == loc.item && m.train_offset - m.eval_offset == q - e && q >= m.train_offset &&
              q < m.train_offset + m.length) {
            seen = true;
            break;
          }
        }
        if (seen) continue;
        if (std::memcmp(tokens + q, item.tokens.data() + e, n * sizeof(uint32_t)) != 0) continue;
        uint64_t left = 0;
        while (left < q && left < e && tokens[q - left - 1] == item.tokens[e - left - 1]) ++left;
        uint64_t right = n;
        while (q + right < count && e + right < item.tokens.size() &&
               tokens[q + right] == item.tokens[e + right])
          ++right;
        Match m{loc.item, e - left, q - left, left + right};
        out->push_back(m);
        active.push_back(m);
      }
    }
    const size_t next = p;
    std::erase_if(active, [next](const Match& m) { return m.train_offset + m.length <= next; });
  }
}

}  // namespace replica::eval

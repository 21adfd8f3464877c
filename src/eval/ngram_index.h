// The contamination index: every n-gram position of every registered eval item, as a 64-bit
// fingerprint (XXH3-64 of the n token ids as little-endian uint32) in a blocked Bloom filter and a
// sorted (fingerprint -> item, position) table. One table per n-gram length in use (13 for
// perplexity documents, 8 for question + gold answer).
//
// Scan() probes positions p = 0, s, 2s, ... of a token stream (s = the table's stride). Because
// ALL n-gram positions of the items are indexed, any span shared verbatim by the stream and an
// item of length >= n + s - 1 contains a probed n-gram and is found. A Bloom hit is looked up in
// the table and confirmed by comparing the actual tokens, so a reported match is never a hash
// collision; each confirmed match is extended left and right to the maximal shared span.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "eval/blocked_bloom.h"

namespace replica::eval {

// One indexed eval item: the tokens as they would appear in training text.
struct IndexedItem {
  std::string file;  // eval set path
  std::string id;
  int ngram = 13;    // n-gram length used for this item
  std::vector<uint32_t> tokens;
};

// A maximal verbatim span shared by the scanned stream and one item.
struct Match {
  uint32_t item = 0;
  uint64_t eval_offset = 0;   // token offset in the item
  uint64_t train_offset = 0;  // token offset in the scanned stream
  uint64_t length = 0;
  bool operator==(const Match&) const = default;
};

uint64_t NgramFingerprint(const uint32_t* tokens, int n);

class NgramIndex {
 public:
  struct TableSpec {
    int ngram;
    int stride;
  };
  // Items shorter than their n-gram length cannot be indexed; they are listed by unindexed().
  // `strides` gives the probe stride per n-gram length (every length used by an item needs one).
  NgramIndex(std::vector<IndexedItem> items, const std::vector<TableSpec>& strides);

  const std::vector<IndexedItem>& items() const { return items_; }
  const std::vector<uint32_t>& unindexed() const { return unindexed_; }
  size_t num_ngrams() const;
  size_t bloom_bytes() const;
  size_t table_bytes() const;

  // Probes the positions p in [begin, end) with p % stride == 0 (p + n <= count) of
  // tokens[0, count); matches may extend over the whole [0, count). Appends confirmed maximal
  // matches in probe order, each once. `stride_override` > 0 replaces every table's stride.
  // Returns the number of probes made.
  uint64_t Scan(const uint32_t* tokens, size_t count, size_t begin, size_t end,
                std::vector<Match>* out, int stride_override = 0) const;

  // The guaranteed-found span length n + s - 1 per table, for reports.
  std::vector<TableSpec> tables() const;

 private:
  struct Loc {
    uint32_t item;
    uint32_t pos;
  };
  struct Table {
    int ngram = 13, stride = 1;
    BlockedBloom bloom;
    std::vector<uint64_t> fps;  // sorted
    std::vector<Loc> locs;      // parallel to fps
  };
  void ScanTable(const Table& t, const uint32_t* tokens, size_t count, size_t begin, size_t end,
                 int stride, std::vector<Match>* out, uint64_t* probes) const;

  std::vector<IndexedItem> items_;
  std::vector<uint32_t> unindexed_;
  std::vector<Table> tables_;
};

}  // namespace replica::eval

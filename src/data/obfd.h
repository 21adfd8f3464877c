// OLMo-core's InstancePacker (olmo_core/data/utils.py): Optimized Best-Fit Decreasing bin packing
// of documents into instances of capacity C = max_sequence_length (arXiv 2404.10830, appendix B).
//
//   order = np.argsort(-lengths)            # numpy's unstable introsort (data/numpy_argsort.h)
//   for document d in that order:           # d counts 0, 1, ... in sorted order
//     c = the smallest remaining space >= len(d) that some open bin has, else C (a new bin)
//     bin = the new bin, or the bin that has had space c the longest (FIFO per space)
//     append d to bin; its space becomes c - len(d) (a full bin leaves the tables)
//
// The reference finds c with a max segment tree over C leaves (leaf k holds k + 1 while some bin
// has k + 1 spaces left, leaf C - 1 always holds C), which is why C must be a power of two.
// Instances are the bins in the order they were opened, each a list of sorted-document ids in the
// order they went in.
#pragma once
#include <cstdint>
#include <vector>

namespace replica::data {

struct DocumentSpan {
  uint64_t start = 0, end = 0;  // token range [start, end) in the source group
  uint64_t length() const { return end - start; }
};

struct PackedInstances {
  std::vector<DocumentSpan> documents;          // in sorted (packing) order
  std::vector<std::vector<uint64_t>> instances;  // ids into documents
  uint64_t total_tokens = 0;                     // sum of document lengths
};

// Error unless capacity is a power of two >= 2 and every document has 1..capacity tokens.
PackedInstances PackDocuments(const std::vector<DocumentSpan>& documents, int64_t capacity);

}  // namespace replica::data

#include "data/obfd.h"

#include <algorithm>
#include <deque>

#include "core/error.h"
#include "data/numpy_argsort.h"

namespace replica::data {
namespace {

// Max segment tree over capacity leaves in heap layout (node 1 the root, leaves at C + k), the
// layout the reference builds breadth-first.
class SpaceTree {
 public:
  explicit SpaceTree(uint64_t capacity) : c_(capacity), w_(2 * capacity, 0) { Set(c_ - 1, c_); }

  void Set(uint64_t leaf, uint64_t weight) {
    uint64_t node = c_ + leaf;
    w_[node] = weight;
    for (node /= 2; node >= 1; node /= 2) w_[node] = std::max(w_[2 * node], w_[2 * node + 1]);
  }
  // The leftmost leaf whose weight is >= need (the root always qualifies: leaf C - 1 holds C).
  uint64_t Query(uint64_t need) const {
    uint64_t node = 1;
    while (node < c_) node = need <= w_[2 * node] ? 2 * node : 2 * node + 1;
    return node - c_;
  }

 private:
  uint64_t c_;
  std::vector<uint64_t> w_;
};

}  // namespace

PackedInstances PackDocuments(const std::vector<DocumentSpan>& documents, int64_t capacity) {
  Require(capacity >= 2 && (capacity & (capacity - 1)) == 0,
          "packing: sequence length {} is not a power of two (OLMo-core's OBFD packer requires "
          "one)",
          capacity);
  const uint64_t C = static_cast<uint64_t>(capacity);
  std::vector<int64_t> negated(documents.size());
  for (size_t i = 0; i < documents.size(); ++i) {
    const uint64_t len = documents[i].length();
    Require(documents[i].end >= documents[i].start && len >= 1 && len <= C,
            "packing: document {} has {} tokens; need 1..{}", i, len, C);
    negated[i] = -static_cast<int64_t>(len);
  }
  const std::vector<int64_t> order = NumpyArgsort(negated);

  PackedInstances out;
  out.documents.reserve(documents.size());
  for (int64_t i : order) out.documents.push_back(documents[static_cast<size_t>(i)]);

  SpaceTree tree(C);
  std::vector<std::deque<uint64_t>> bins_with_space(C);  // index: spaces left, 1..C-1
  for (uint64_t d = 0; d < out.documents.size(); ++d) {
    const uint64_t len = out.documents[d].length();
    const uint64_t fit = tree.Query(len) + 1;
    uint64_t bin;
    if (fit == C) {
      bin = out.instances.size();
      out.instances.emplace_back();
    } else {
      std::deque<uint64_t>& q = bins_with_space[fit];
      bin = q.front();
      q.pop_front();
      if (q.empty()) tree.Set(fit - 1, 0);
    }
    out.instances[bin].push_back(d);
    const uint64_t left = fit - len;
    if (left > 0) {
      std::deque<uint64_t>& q = bins_with_space[left];
      if (q.empty()) tree.Set(left - 1, left);
      q.push_back(bin);
    }
    out.total_tokens += len;
  }
  return out;
}

}  // namespace replica::data

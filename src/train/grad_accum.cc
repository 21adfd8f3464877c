#include "train/grad_accum.h"

#include "core/pairwise_tree.h"
#include "core/profile.h"
#include "core/error.h"

namespace replica {
namespace {

void EvensFirst(const std::vector<int64_t>& in, std::vector<int64_t>& out) {
  if (in.size() <= 1) {
    out.insert(out.end(), in.begin(), in.end());
    return;
  }
  std::vector<int64_t> evens, odds;
  for (size_t i = 0; i < in.size(); ++i) (i % 2 == 0 ? evens : odds).push_back(in[i]);
  EvensFirst(evens, out);
  EvensFirst(odds, out);
}

}  // namespace

std::vector<int64_t> MicroBatchOrder(int64_t m) {
  Require(m >= 1, "micro-batch order: need at least one micro-batch, got {}", m);
  std::vector<int64_t> ids(static_cast<size_t>(m)), out;
  for (int64_t j = 0; j < m; ++j) ids[static_cast<size_t>(j)] = j;
  out.reserve(ids.size());
  EvensFirst(ids, out);
  return out;
}

std::vector<int64_t> MicroBatchPositions(int64_t j, int64_t m, int64_t mu) {
  std::vector<int64_t> pos(static_cast<size_t>(mu));
  for (int64_t i = 0; i < mu; ++i) pos[static_cast<size_t>(i)] = j + m * i;
  return pos;
}

void AddInto(FlatBuffer& a, const FlatBuffer& b, const Backend& backend) {
  ProfileScope profile_scope(ProfileCategory::kReduce);
  Require(a.size() == b.size(), "gradient sum: buffer sizes differ ({} vs {})", a.size(), b.size());
  backend.AddInto(a.data(), b.data(), static_cast<int64_t>(a.size()));
}

TreeAccumulator::TreeAccumulator(size_t floats, int64_t count, const Backend& backend)
    : floats_(floats), backend_(&backend) {
  Reset(count);
}

void TreeAccumulator::Reset(int64_t count) {
  Require(count >= 1, "gradient accumulation: need at least one micro-batch, got {}", count);
  count_ = count;
  added_ = 0;
  stack_.clear();
  // Exactly the spare buffers the tree of `count` leaves holds at once, allocated now.
  const size_t need = static_cast<size_t>(PairwiseTreeSpareBuffers(count));
  while (pool_.size() < need) pool_.push_back(backend_->AllocateFloats(floats_));
  free_.clear();
  for (size_t b = pool_.size(); b-- > 0;) free_.push_back(b);
}

size_t TreeAccumulator::TakeBuffer() {
  Require(!free_.empty(), "gradient accumulation: the tree of {} leaves needs more than its {} "
          "spare buffers", count_, pool_.size());
  const size_t b = free_.back();
  free_.pop_back();
  return b;
}

TreeAccumulator::Scalars TreeAccumulator::Add(FlatBuffer& g, Scalars s) {
  Require(added_ < count_, "gradient accumulation: more than {} micro-batches added", count_);
  Require(g.size() == floats_, "gradient accumulation: buffer has {} floats, expected {}",
          g.size(), floats_);
  const bool last = added_ + 1 == count_;
  int level = 0;
  // Merge completed left siblings (binary counter), then on the last leaf fold what remains.
  while (!stack_.empty() && (last || stack_.back().level == level)) {
    Node left = stack_.back();
    stack_.pop_back();
    AddInto(g, pool_[left.buffer], *backend_);
    for (int k = 0; k < kScalars; ++k) s[k] = left.scalars[k] + s[k];
    free_.push_back(left.buffer);
    ++level;
  }
  ++added_;
  if (!last) {
    size_t b = TakeBuffer();
    {
      ProfileScope profile_scope(ProfileCategory::kReduce);
      backend_->MoveAndZero(pool_[b].data(), g.data(), static_cast<int64_t>(floats_));
    }
    stack_.push_back({level, b, s});
  }
  return s;
}

}  // namespace replica

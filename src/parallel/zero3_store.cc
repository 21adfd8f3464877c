#include "parallel/zero3_store.h"

#include <algorithm>

#include "core/clock.h"
#include "core/error.h"
#include "core/profile.h"
#include "parallel/owner_collectives.h"

namespace replica::parallel {

Zero3ParamStore::Zero3ParamStore(const ParamLayout& layout, int64_t num_layers,
                                 Communicator& comm, const Backend& backend)
    : comm_(comm),
      backend_(backend),
      plan_(layout.total_floats(), comm.world()),
      bounds_(UnitBounds(layout, num_layers)),
      master_(plan_.size(comm.rank())),
      accumulator_(plan_.size(comm.rank())) {
  for (size_t u = 0; u + 1 < bounds_.size(); ++u)
    unit_floats_ = std::max(unit_floats_, bounds_[u + 1] - bounds_[u]);
}

Zero3ParamStore::Slot* Zero3ParamStore::Find(std::vector<Slot>& slots, int unit) {
  for (Slot& s : slots)
    if (s.unit == unit) return &s;
  return nullptr;
}

float* Zero3ParamStore::Take(std::vector<Slot>& slots, int unit) {
  Slot* s = Find(slots, -1);
  if (s == nullptr) {
    slots.push_back({-1, FlatBuffer(unit_floats_)});
    s = &slots.back();
  }
  s->unit = unit;
  return s->buffer.data();
}

const float* Zero3ParamStore::Acquire(int unit) {
  Require(Find(weights_, unit) == nullptr && !Held(unit), "ZeRO-3: unit {} acquired twice", unit);
  const Clock::time_point t0 = Clock::now();
  const float* out;
  if (lo(unit) >= owned_begin() && hi(unit) <= owned_end()) {
    // Wholly owned here: the others receive it from the master copy, which this rank reads in
    // place (nothing changes it before the optimizer step).
    float* mine = master_.data() + (lo(unit) - owned_begin());
    if (comm_.world() > 1 && hi(unit) > lo(unit))
      GatherRange(comm_, plan_, lo(unit), hi(unit), master_.data(), mine);
    direct_.push_back(unit);
    out = mine;
  } else {
    float* buf = Take(weights_, unit);
    GatherRange(comm_, plan_, lo(unit), hi(unit), master_.data(), buf);
    out = buf;
  }
  gather_s_ += SecondsSince(t0);
  return out;
}

bool Zero3ParamStore::Held(int unit) const {
  return std::find(direct_.begin(), direct_.end(), unit) != direct_.end();
}

void Zero3ParamStore::Release(int unit) {
  if (auto it = std::find(direct_.begin(), direct_.end(), unit); it != direct_.end()) {
    direct_.erase(it);
    return;
  }
  Slot* s = Find(weights_, unit);
  Require(s != nullptr, "ZeRO-3: unit {} released but not acquired", unit);
  s->unit = -1;
}

float* Zero3ParamStore::Grads(int unit) {
  if (Slot* s = Find(grads_, unit)) return s->buffer.data();
  float* buf = Take(grads_, unit);
  ProfileScope profile_scope(ProfileCategory::kZero);
  backend_.Zero(buf, static_cast<int64_t>(hi(unit) - lo(unit)));
  return buf;
}

void Zero3ParamStore::GradsDone(int unit) {
  Slot* s = Find(grads_, unit);
  Require(s != nullptr, "ZeRO-3: gradients of unit {} done but never asked for", unit);
  if (recv_.size() == 0 && comm_.world() > 1) recv_ = FlatBuffer(unit_floats_);
  const Clock::time_point t0 = Clock::now();
  OrderedFoldRange(comm_, plan_, lo(unit), hi(unit), s->buffer.data(), accumulator_.data(),
                   recv_.data(), backend_);
  fold_s_ += SecondsSince(t0);
  s->unit = -1;
}

void Zero3ParamStore::BeginStep() {
  ProfileScope profile_scope(ProfileCategory::kZero);
  backend_.Zero(accumulator_.data(), static_cast<int64_t>(accumulator_.size()));
}

}  // namespace replica::parallel

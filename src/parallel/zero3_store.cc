#include "parallel/zero3_store.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "core/half.h"
#include "core/profile.h"
#include "parallel/owner_collectives.h"

namespace replica::parallel {

namespace {

// dst[0, n) = the fp32 values of the bf16 numbers at src[0, 2n). src may overlap dst at or after
// dst + i for element i (the in-place widening): each chunk is read whole before it is written.
void Widen(const unsigned char* src, float* dst, size_t n) {
  constexpr size_t kChunk = 1024;
  uint16_t h[kChunk];
  uint32_t w[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    const size_t m = std::min(kChunk, n - i);
    std::memcpy(h, src + 2 * i, 2 * m);
#pragma omp simd
    for (size_t j = 0; j < m; ++j) w[j] = static_cast<uint32_t>(h[j]) << 16;  // Bf16ToF32
    std::memcpy(dst + i, w, 4 * m);
  }
}

// dst[0, 2n) = src[0, n) as bf16, rounded to nearest even (F32ToBf16, core/half.h, branch-free).
void Narrow(const float* src, unsigned char* dst, size_t n) {
  constexpr size_t kChunk = 1024;
  uint32_t u[kChunk];
  uint16_t h[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    const size_t m = std::min(kChunk, n - i);
    std::memcpy(u, src + i, 4 * m);
#pragma omp simd
    for (size_t j = 0; j < m; ++j) {
      const uint32_t x = u[j];
      const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
      const uint32_t nan = (x >> 16) | 0x40u;  // a quiet NaN
      h[j] = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
    }
    std::memcpy(dst + 2 * i, h, 2 * m);
  }
}

}  // namespace

Zero3ParamStore::Zero3ParamStore(const ParamLayout& layout, int64_t num_layers,
                                 Communicator& comm, const Backend& backend, Options options)
    : comm_(comm),
      backend_(backend),
      options_(options),
      plan_(layout.total_floats(), comm.world()),
      bounds_(UnitBounds(layout, num_layers)),
      master_(backend.AllocateFloats(plan_.size(comm.rank()))),
      accumulator_(backend.AllocateFloats(plan_.size(comm.rank()))) {
  const size_t units = bounds_.size() - 1;
  unit_floats_ = LargestUnitFloats(bounds_);
  for (size_t u = 0; u < units; ++u) {
    const size_t a = std::max(bounds_[u], owned_begin()), b = std::min(bounds_[u + 1], owned_end());
    if (a < b) fold_floats_ = std::max(fold_floats_, b - a);
  }
  // Each tensor's span runs to the next tensor (its padding travels with it).
  spans_.resize(units);
  wire_bytes_.assign(units, 0);
  const std::vector<ParamView>& views = layout.views();
  for (size_t i = 0; i < views.size(); ++i) {
    const size_t a = views[i].offset;
    const size_t b = i + 1 < views.size() ? views[i + 1].offset : layout.total_floats();
    const size_t u = static_cast<size_t>(
        std::upper_bound(bounds_.begin(), bounds_.end(), a) - bounds_.begin() - 1);
    Require(u < units && b <= bounds_[u + 1], "ZeRO-3: tensor {} crosses a unit boundary",
            views[i].name);
    const bool bf16 = options_.bf16_matmul_weights && views[i].matmul_weight;
    spans_[u].push_back({a, b, bf16, wire_bytes_[u]});
    wire_bytes_[u] += (b - a) * (bf16 ? 2 : 4);
  }
  for (size_t u = 0; u < units; ++u)
    Require(spans_[u].empty() ? bounds_[u] == bounds_[u + 1]
                              : spans_[u].front().lo == bounds_[u] &&
                                    spans_[u].back().hi == bounds_[u + 1],
            "ZeRO-3: unit {} is not covered by its tensors", u);
}

Zero3ParamStore::~Zero3ParamStore() {
  if (std::uncaught_exceptions() > 0) return;
  try {
    Drain();
  } catch (const std::exception&) {
    // Another rank failed: the job ends with its error.
  }
}

Zero3ParamStore::Slot* Zero3ParamStore::Find(std::vector<Slot>& slots, int unit) {
  for (Slot& s : slots)
    if (s.unit == unit) return &s;
  return nullptr;
}

float* Zero3ParamStore::Take(std::vector<Slot>& slots, int unit) {
  Slot* s = Find(slots, -1);
  if (s == nullptr) {
    slots.push_back({-1, backend_.AllocateFloats(unit_floats_)});
    s = &slots.back();
  }
  s->unit = unit;
  return s->buffer.data();
}

bool Zero3ParamStore::Open(int unit) const {
  return std::find(open_.begin(), open_.end(), unit) != open_.end();
}

size_t Zero3ParamStore::WireAt(int unit, size_t e) const {
  for (const Span& s : spans_.at(static_cast<size_t>(unit)))
    if (e < s.hi) return s.wire + (e - s.lo) * (s.bf16 ? 2 : 4);
  return wire_bytes(unit);
}

Zero3ParamStore::Gather Zero3ParamStore::StartGather(int unit) {
  ProfileScope profile_scope(ProfileCategory::kReduce);
  Gather g;
  g.unit = unit;
  const size_t a0 = lo(unit), b0 = hi(unit), n = b0 - a0;
  g.in_place = a0 >= owned_begin() && b0 <= owned_end();
  // Wholly owned here: the others receive it from the master copy, which this rank reads in
  // place (nothing changes it before the next Drain).
  g.out = g.in_place ? master_.data() + (a0 - owned_begin()) : Take(weights_, unit);
  const int me = comm_.rank(), world = comm_.world();
  if (world == 1 || n == 0) return g;
  const bool packed = wire_bytes(unit) < 4 * n;
  // The wire image sits at the end of the unit buffer (at its start when it is all fp32); on a
  // backend whose memory is not the host's it is received into a host buffer instead.
  const bool host = backend_.is_host();
  if (!host) g.host_image.resize(wire_bytes(unit));
  unsigned char* image = host ? reinterpret_cast<unsigned char*>(g.out) + (4 * n - wire_bytes(unit))
                              : g.host_image.data();
  const size_t k = options_.prefetch ? static_cast<size_t>(gathers_++ % 2) : 0;
  comm_.WaitAll(sends_[k]);
  for (int o = 0; o < world; ++o) {
    const size_t a = std::max(a0, plan_.begin(o)), b = std::min(b0, plan_.end(o));
    if (a >= b) continue;
    const size_t wa = WireAt(unit, a), bytes = WireAt(unit, b) - wa;
    if (o != me) {
      g.recvs.push_back(comm_.Irecv(image + wa, bytes, o, kGatherTag));
      continue;
    }
    const float* mine = master_.data() + (a - owned_begin());
    if (!host) {
      std::vector<float>& own = own_[k];
      own.resize(b - a);
      backend_.CopyToHost(own.data(), mine, (b - a) * sizeof(float));
      mine = own.data();
    }
    const void* send = mine;
    if (packed) {
      std::vector<unsigned char>& stage = stage_[k];
      if (stage.size() < bytes) stage.resize(bytes);
      for (const Span& s : spans_[static_cast<size_t>(unit)]) {
        const size_t x = std::max(a, s.lo), y = std::min(b, s.hi);
        if (x >= y) continue;
        unsigned char* dst = stage.data() + (WireAt(unit, x) - wa);
        const float* src = mine + (x - a);
        if (s.bf16) {
          Narrow(src, dst, y - x);
        } else {
          std::memcpy(dst, src, (y - x) * sizeof(float));
        }
      }
      send = stage.data();
    }
    for (int r = 0; r < world; ++r)
      if (r != me) sends_[k].push_back(comm_.Isend(send, bytes, r, kGatherTag));
  }
  return g;
}

const float* Zero3ParamStore::FinishGather(Gather& g) {
  ProfileScope profile_scope(ProfileCategory::kReduce);
  comm_.WaitAll(g.recvs);
  const int unit = g.unit;
  g.unit = -1;
  if (g.in_place) return g.out;
  const size_t a0 = lo(unit), b0 = hi(unit), n = b0 - a0;
  // A reused unit buffer now holds another unit: its bf16 copies are stale.
  backend_.NoteWeightsWritten(g.out, n * sizeof(float));
  const size_t ma = std::clamp(owned_begin(), a0, b0), mb = std::clamp(owned_end(), a0, b0);
  // On a backend whose memory is not the host's the unit is assembled on the host from the
  // received image and copied in.
  const bool host = backend_.is_host();
  std::vector<float> staged;
  if (!host) staged.resize(n);
  float* out = host ? g.out : staged.data();
  unsigned char* image = host ? reinterpret_cast<unsigned char*>(g.out) + (4 * n - wire_bytes(unit))
                              : g.host_image.data();
  if (wire_bytes(unit) < 4 * n) {
    // Forward, in place: the floats of elements before e never reach e's wire bytes.
    auto unpack = [&](const Span& s, size_t x, size_t y) {
      if (x >= y) return;
      const unsigned char* src = image + WireAt(unit, x);
      float* dst = out + (x - a0);
      if (s.bf16) {
        Widen(src, dst, y - x);
      } else {
        std::memmove(dst, src, (y - x) * sizeof(float));
      }
    };
    for (const Span& s : spans_[static_cast<size_t>(unit)]) {
      unpack(s, s.lo, std::min(s.hi, ma));
      unpack(s, std::max(s.lo, mb), s.hi);
    }
  } else if (!host) {
    std::memcpy(out, image, n * sizeof(float));  // all fp32: the image is the unit
  }
  if (ma < mb) {
    float* dst = out + (ma - a0);
    const float* src = master_.data() + (ma - owned_begin());
    if (host) {
      std::memcpy(dst, src, (mb - ma) * sizeof(float));
    } else {
      backend_.CopyToHost(dst, src, (mb - ma) * sizeof(float));
    }
  }
  if (!host) backend_.CopyFromHost(g.out, out, n * sizeof(float));
  return g.out;
}

void Zero3ParamStore::Discard(Gather& g) {
  comm_.WaitAll(g.recvs);
  if (!g.in_place) Find(weights_, g.unit)->unit = -1;
  g.unit = -1;
}

int Zero3ParamStore::Predict(int before, int unit) const {
  if (auto it = next_.find({before, unit}); it != next_.end()) return it->second;
  const int units = static_cast<int>(bounds_.size()) - 1;
  if (before < 0 || unit > before) return unit + 1 < units ? unit + 1 : unit - 1;
  return unit > 0 ? unit - 1 : (units > 1 ? 1 : -1);
}

const float* Zero3ParamStore::Acquire(int unit) {
  Require(unit >= 0 && static_cast<size_t>(unit) + 1 < bounds_.size(),
          "ZeRO-3: no unit {}", unit);
  Require(!Open(unit), "ZeRO-3: unit {} acquired twice", unit);
  const Clock::time_point t0 = Clock::now();
  ++acquires_;
  const float* out;
  if (pending_.unit == unit) {
    ++prefetch_hits_;
    out = FinishGather(pending_);
  } else {
    if (pending_.unit >= 0) Discard(pending_);
    Gather g = StartGather(unit);
    out = FinishGather(g);
  }
  open_.push_back(unit);
  // Learn the sequence and prefetch what should come next (the same on every rank).
  if (last_ >= 0) next_[{before_last_, last_}] = unit;
  before_last_ = last_;
  last_ = unit;
  if (options_.prefetch && comm_.world() > 1) {
    const int next = Predict(before_last_, last_);
    if (next >= 0 && !Open(next)) pending_ = StartGather(next);
  }
  gather_s_ += SecondsSince(t0);
  return out;
}

void Zero3ParamStore::Release(int unit) {
  auto it = std::find(open_.begin(), open_.end(), unit);
  Require(it != open_.end(), "ZeRO-3: unit {} released but not acquired", unit);
  open_.erase(it);
  if (Slot* s = Find(weights_, unit)) s->unit = -1;  // none when it was read in place
}

void Zero3ParamStore::Drain() {
  const Clock::time_point t0 = Clock::now();
  if (pending_.unit >= 0) Discard(pending_);
  comm_.WaitAll(sends_[0]);
  comm_.WaitAll(sends_[1]);
  gather_s_ += SecondsSince(t0);
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
  // The fold receives other ranks' pieces of this rank's part of a unit only.
  if (recv_.size() < fold_floats_ && comm_.world() > 1) recv_ = backend_.AllocateFloats(fold_floats_);
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

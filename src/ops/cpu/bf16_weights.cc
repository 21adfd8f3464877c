#include "ops/cpu/bf16_weights.h"

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "core/profile.h"
#include "ops/cpu/bf16_round.h"

namespace replica {
namespace {

struct Key {
  const float* W;
  int64_t ld, rows, cols;
  bool operator<(const Key& o) const {
    return std::tie(W, ld, rows, cols) < std::tie(o.W, o.ld, o.rows, o.cols);
  }
};

struct Copy {
  std::thread::id thread;  // the thread whose scope made it
  uint64_t scope = 0;      // that scope's serial; 0 = stale
  uint64_t epoch = 0;      // NoteWeightsUpdated's count when made
  std::vector<uint16_t> bits;
};

std::mutex mu;
std::map<Key, Copy>& Table() {
  static std::map<Key, Copy> table;
  return table;
}
std::atomic<uint64_t> epoch{1};
std::atomic<uint64_t> scope_serials{0};
std::atomic<int64_t> conversions{0};
thread_local int scope_depth = 0;
thread_local uint64_t scope_serial = 0;

}  // namespace

Bf16WeightScope::Bf16WeightScope() {
  if (scope_depth++ == 0) scope_serial = ++scope_serials;
}

Bf16WeightScope::~Bf16WeightScope() {
  if (--scope_depth > 0) return;
  // Drop the copies this scope did not use (a model that is gone, a shape no longer run); keep
  // the buffers of the others, stale, so the next scope refills them without allocating.
  const std::thread::id me = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(mu);
  std::map<Key, Copy>& table = Table();
  for (auto it = table.begin(); it != table.end();) {
    if (it->second.thread != me) {
      ++it;
    } else if (it->second.scope != scope_serial) {
      it = table.erase(it);
    } else {
      it->second.scope = 0;
      ++it;
    }
  }
  scope_serial = 0;
}

bool Bf16WeightScopeOpen() {
  return scope_depth > 0;
}

const uint16_t* Bf16WeightCopy(const float* W, int64_t ld, int64_t rows, int64_t cols) {
  if (scope_depth == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu);
  Copy& c = Table()[Key{W, ld, rows, cols}];
  const uint64_t now = epoch.load();
  if (c.scope == scope_serial && c.epoch == now && c.thread == std::this_thread::get_id())
    return c.bits.data();
  ProfileScope profile_scope(ProfileCategory::kCast);
  c.bits.resize(Bf16WeightCopyBytes(rows, cols) / sizeof(uint16_t));
  ConvertToBf16(W, ld, c.bits.data(), cols, rows, cols);
  c.thread = std::this_thread::get_id();
  c.scope = scope_serial;
  c.epoch = now;
  ++conversions;
  return c.bits.data();
}

void NoteWeightsUpdated() {
  ++epoch;
}

void NoteWeightsWritten(const void* begin, size_t bytes) {
  const char* lo = static_cast<const char*>(begin);
  const char* hi = lo + bytes;
  std::lock_guard<std::mutex> lock(mu);
  for (auto& [key, c] : Table()) {
    const char* a = reinterpret_cast<const char*>(key.W);
    const char* b = a + sizeof(float) * static_cast<size_t>((key.rows - 1) * key.ld + key.cols);
    if (a < hi && lo < b) c.scope = 0;
  }
}

uint64_t Bf16WeightCopyBytes(int64_t rows, int64_t cols) {
  return sizeof(uint16_t) * static_cast<uint64_t>(rows * cols);
}

uint64_t Bf16WeightCopiesHeldBytes() {
  std::lock_guard<std::mutex> lock(mu);
  uint64_t bytes = 0;
  for (const auto& [key, c] : Table()) bytes += sizeof(uint16_t) * c.bits.capacity();
  return bytes;
}

int64_t Bf16WeightConversions() {
  return conversions.load();
}

}  // namespace replica

// The two lookup tables behind byte-level BPE, as open-addressing hash tables built once and then
// only read (safe to share between threads):
//   TokenIndex  token bytes -> id, over a caller-owned arena (the whole-piece lookup);
//   PairTable   (left id, right id) -> (merge rank, merged id) packed in one uint64 (the merge loop).
// Both keep the load factor at or below 1/2 so that a miss ends after a probe or two.
#pragma once
#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace replica {

class TokenIndex {
 public:
  static constexpr uint32_t kNotFound = 0xFFFFFFFFu;

  // `arena` + `offsets` (size n+1) describe token i as arena[offsets[i], offsets[i+1]); empty
  // tokens are holes and are not indexed. Both must outlive the index and stay unchanged.
  void Build(const char* arena, const uint32_t* offsets, uint32_t n);

  uint32_t Find(const void* data, size_t size) const {
    if (slots_.empty()) return kNotFound;
    const uint64_t h = XXH3_64bits(data, size);
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) return kNotFound;
      const uint32_t id = static_cast<uint32_t>(s);
      if (static_cast<uint32_t>(s >> 32) == tag && offsets_[id + 1] - offsets_[id] == size &&
          std::memcmp(arena_ + offsets_[id], data, size) == 0) {
        return id;
      }
    }
  }
  uint32_t Find(std::string_view s) const { return Find(s.data(), s.size()); }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  std::vector<uint64_t> slots_;  // (hash tag << 32) | id
  size_t mask_ = 0;
  const char* arena_ = nullptr;
  const uint32_t* offsets_ = nullptr;
};

class PairTable {
 public:
  static constexpr uint64_t kNone = ~0ull;  // compares above every real (rank, id) value

  static uint64_t Pack(uint32_t rank, uint32_t merged) {
    return (static_cast<uint64_t>(rank) << 32) | merged;
  }
  static uint32_t Rank(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
  static uint32_t Merged(uint64_t v) { return static_cast<uint32_t>(v); }

  void Reserve(size_t count);
  // Later inserts of the same pair overwrite earlier ones (as a Hugging Face merges map does).
  void Insert(uint32_t left, uint32_t right, uint64_t value);
  size_t size() const { return count_; }

  // Packed (rank, merged id), or kNone when the pair never merges.
  uint64_t Find(uint32_t left, uint32_t right) const {
    const uint64_t key = (static_cast<uint64_t>(left) << 32) | right;
    for (size_t i = Slot(key);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.key == key) return e.value;
      if (e.key == kEmptyKey) return kNone;
    }
  }

 private:
  struct Entry {
    uint64_t key;
    uint64_t value;
  };
  static constexpr uint64_t kEmptyKey = ~0ull;  // ids are < 2^32 - 1, so never a real key
  size_t Slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }
  void Grow(size_t capacity);

  std::vector<Entry> entries_ = std::vector<Entry>(2, Entry{kEmptyKey, 0});
  size_t mask_ = 1;
  int shift_ = 63;
  size_t count_ = 0;
};

}  // namespace replica

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

  static uint64_t Hash(const void* data, size_t size) { return XXH3_64bits(data, size); }

  uint32_t Find(const void* data, size_t size) const {
    return Find(data, size, Hash(data, size));
  }
  // With h == Hash(data, size), for callers that reuse the hash.
  uint32_t Find(const void* data, size_t size, uint64_t h) const {
    if (slots_.empty() || size == 0) return kNotFound;
    const uint32_t check = Check(h, size);
    const uint64_t head = Head(data, size);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kNotFound) return kNotFound;
      // Most tokens are at most 8 bytes: then the slot alone decides, without touching the arena.
      if (s.check == check && s.head == head &&
          (size <= 8 || ((size < 256 || offsets_[s.id + 1] - offsets_[s.id] == size) &&
                         std::memcmp(arena_ + offsets_[s.id] + 8,
                                     static_cast<const char*>(data) + 8, size - 8) == 0))) {
        return s.id;
      }
    }
  }
  uint32_t Find(std::string_view s) const { return Find(s.data(), s.size()); }

 private:
  struct Slot {
    uint64_t head;   // the first 8 bytes, zero-padded
    uint32_t id;     // kNotFound when empty
    uint32_t check;  // 24 bits of hash, the low 8 bits of the length
  };
  static uint64_t Head(const void* data, size_t size) {
    uint64_t head = 0;
    std::memcpy(&head, data, size < 8 ? size : 8);
    return head;
  }
  static uint32_t Check(uint64_t hash, size_t size) {
    return (static_cast<uint32_t>(hash >> 40) << 8) | static_cast<uint32_t>(size & 0xFF);
  }
  std::vector<Slot> slots_;
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

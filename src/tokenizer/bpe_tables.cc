#include "tokenizer/bpe_tables.h"

#include <bit>

namespace replica {

void TokenIndex::Build(const char* arena, const uint32_t* offsets, uint32_t n) {
  arena_ = arena;
  offsets_ = offsets;
  size_t capacity = std::bit_ceil(static_cast<size_t>(n) * 2 + 2);
  slots_.assign(capacity, Slot{0, kNotFound, 0});
  mask_ = capacity - 1;
  for (uint32_t id = 0; id < n; ++id) {
    const size_t len = offsets[id + 1] - offsets[id];
    if (len == 0) continue;
    const uint64_t h = XXH3_64bits(arena + offsets[id], len);
    size_t i = h & mask_;
    while (slots_[i].id != kNotFound) i = (i + 1) & mask_;
    slots_[i] = Slot{Head(arena + offsets[id], len), id, Check(h, len)};
  }
}

void PairTable::Reserve(size_t count) {
  if (count * 2 > entries_.size()) Grow(std::bit_ceil(count * 2));
}

void PairTable::Grow(size_t capacity) {
  std::vector<Entry> old = std::move(entries_);
  entries_.assign(capacity, Entry{kEmptyKey, 0});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  count_ = 0;
  for (const Entry& e : old) {
    if (e.key != kEmptyKey) Insert(static_cast<uint32_t>(e.key >> 32), static_cast<uint32_t>(e.key), e.value);
  }
}

void PairTable::Insert(uint32_t left, uint32_t right, uint64_t value) {
  if ((count_ + 1) * 2 > entries_.size()) Grow(entries_.size() * 2);
  const uint64_t key = (static_cast<uint64_t>(left) << 32) | right;
  size_t i = Slot(key);
  while (entries_[i].key != kEmptyKey && entries_[i].key != key) i = (i + 1) & mask_;
  if (entries_[i].key == kEmptyKey) ++count_;
  entries_[i] = Entry{key, value};
}

}  // namespace replica

#include "tokenizer/bpe.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <queue>

#include "core/error.h"

namespace replica {
namespace {

// Pieces up to this many bytes merge in a flat array on the stack (quadratic but cache-friendly:
// real pieces are a few bytes); longer ones use a heap over a linked list (n log n), so a
// megabyte-long "word" cannot stall the tokenizer.
constexpr size_t kLoopMaxBytes = 128;

// Per-thread direct-mapped cache: piece (up to 16 bytes) -> its ids (up to 4). Entries carry the
// model's serial, so several models can share a thread without clearing anything. 32768 entries
// measured best on the SOTU text (4096: -25%; 65536: no better).
struct PieceCacheEntry {
  uint64_t model;  // 0 = empty
  uint32_t hash_check;
  uint8_t len, count, unused[2];
  char bytes[16];
  uint32_t ids[4];
};
constexpr size_t kCacheMaxBytes = 16, kCacheMaxIds = 4, kCacheEntries = 32768;

PieceCacheEntry* ThreadPieceCache() {
  thread_local std::unique_ptr<PieceCacheEntry[]> cache;
  if (!cache) {
    cache = std::make_unique<PieceCacheEntry[]>(kCacheEntries);
    std::memset(cache.get(), 0, kCacheEntries * sizeof(PieceCacheEntry));
  }
  return cache.get();
}

uint64_t NextSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

}  // namespace

BpeModel::BpeModel() : serial_(NextSerial()) {}

void BpeModel::SetVocab(const std::vector<std::pair<std::string_view, uint32_t>>& vocab) {
  uint32_t limit = 0;
  size_t total = 0;
  for (const auto& [bytes, id] : vocab) {
    Require(id != 0xFFFFFFFFu, "BPE vocabulary: id {} is out of range", id);
    Require(!bytes.empty(), "BPE vocabulary: token {} is empty", id);
    limit = std::max(limit, id + 1);
    total += bytes.size();
  }
  Require(total < 0xFFFFFFFFull, "BPE vocabulary: {} bytes of token text is too large", total);
  std::vector<std::string_view> by_id(limit);
  for (const auto& [bytes, id] : vocab) {
    Require(by_id[id].empty(), "BPE vocabulary: id {} is given twice", id);
    by_id[id] = bytes;
  }
  arena_.clear();
  arena_.reserve(total);
  offsets_.assign(limit + 1, 0);
  for (uint32_t id = 0; id < limit; ++id) {
    arena_.insert(arena_.end(), by_id[id].begin(), by_id[id].end());
    offsets_[id + 1] = static_cast<uint32_t>(arena_.size());
    max_token_len_ = std::max(max_token_len_, by_id[id].size());
  }
  num_tokens_ = vocab.size();
  index_.Build(arena_.data(), offsets_.data(), limit);
  for (uint32_t id = 0; id < limit; ++id) {
    if (by_id[id].empty()) continue;
    uint32_t found = index_.Find(by_id[id]);
    Require(found == id, "BPE vocabulary: ids {} and {} have the same bytes", found, id);
  }
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    uint32_t id = index_.Find(&c, 1);
    Require(id != TokenIndex::kNotFound,
            "BPE vocabulary lacks the single byte 0x{:02X}; byte-level BPE needs all 256 bytes", b);
    byte_id_[b] = id;
  }
}

BpeModel BpeModel::FromRanks(const std::vector<std::string>& tokens, bool whole_piece_first) {
  BpeModel m;
  m.whole_piece_first_ = whole_piece_first;
  std::vector<std::pair<std::string_view, uint32_t>> vocab;
  vocab.reserve(tokens.size());
  for (size_t r = 0; r < tokens.size(); ++r) vocab.emplace_back(tokens[r], static_cast<uint32_t>(r));
  m.SetVocab(vocab);
  // Parts are always tokens, so "bytes(a)+bytes(b) is a token of rank r" is the pair (a, b) -> r
  // for every way of cutting a token into two tokens.
  m.pairs_.Reserve(tokens.size() * 5 / 2);  // cl100k: 233,378 pairs for 100,256 tokens
  for (uint32_t r = 0; r < tokens.size(); ++r) {
    std::string_view t = tokens[r];
    for (size_t k = 1; k < t.size(); ++k) {
      uint32_t a = m.index_.Find(t.substr(0, k));
      if (a == TokenIndex::kNotFound) continue;
      uint32_t b = m.index_.Find(t.substr(k));
      if (b == TokenIndex::kNotFound) continue;
      m.pairs_.Insert(a, b, PairTable::Pack(r, r));
    }
  }
  return m;
}

BpeModel BpeModel::FromMerges(const std::vector<std::pair<std::string, uint32_t>>& vocab,
                              const std::vector<std::pair<std::string, std::string>>& merges,
                              bool whole_piece_first) {
  BpeModel m;
  m.whole_piece_first_ = whole_piece_first;
  std::vector<std::pair<std::string_view, uint32_t>> views;
  views.reserve(vocab.size());
  for (const auto& [bytes, id] : vocab) views.emplace_back(bytes, id);
  m.SetVocab(views);
  m.pairs_.Reserve(merges.size());
  std::string joined;
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [left, right] = merges[i];
    uint32_t a = m.index_.Find(left), b = m.index_.Find(right);
    Require(a != TokenIndex::kNotFound && b != TokenIndex::kNotFound,
            "BPE merges[{}]: a side of the pair is not in the vocabulary", i);
    joined.assign(left).append(right);
    uint32_t merged = m.index_.Find(joined);
    Require(merged != TokenIndex::kNotFound,
            "BPE merges[{}]: the merged token is not in the vocabulary", i);
    Require(i < 0xFFFFFFFFull, "BPE merges: too many merges");
    m.pairs_.Insert(a, b, PairTable::Pack(static_cast<uint32_t>(i), merged));
  }
  return m;
}

void BpeModel::EncodePiece(std::string_view piece, std::vector<uint32_t>* out) const {
  const size_t n = piece.size();
  if (n == 1) {
    out->push_back(byte_id_[static_cast<uint8_t>(piece[0])]);
    return;
  }
  const uint64_t h = TokenIndex::Hash(piece.data(), n);
  if (n > kCacheMaxBytes) return EncodeUncached(piece, h, out);
  PieceCacheEntry& e = ThreadPieceCache()[(h >> 20) & (kCacheEntries - 1)];
  const uint32_t check = static_cast<uint32_t>(h);
  if (e.model == serial_ && e.hash_check == check && e.len == n &&
      std::memcmp(e.bytes, piece.data(), n) == 0) {
    if (e.count == 1) {
      out->push_back(e.ids[0]);  // the common case; avoids a range insert per piece
    } else {
      out->insert(out->end(), e.ids, e.ids + e.count);
    }
    return;
  }
  const size_t before = out->size();
  EncodeUncached(piece, h, out);
  const size_t count = out->size() - before;
  if (count <= kCacheMaxIds) {
    e.model = serial_;
    e.hash_check = check;
    e.len = static_cast<uint8_t>(n);
    e.count = static_cast<uint8_t>(count);
    std::memcpy(e.bytes, piece.data(), n);
    std::memcpy(e.ids, out->data() + before, count * sizeof(uint32_t));
  }
}

void BpeModel::EncodeUncached(std::string_view piece, uint64_t hash,
                              std::vector<uint32_t>* out) const {
  const size_t n = piece.size();
  if (whole_piece_first_ && n <= max_token_len_) {
    uint32_t id = index_.Find(piece.data(), n, hash);
    if (id != TokenIndex::kNotFound) {
      out->push_back(id);
      return;
    }
  }
  if (n <= kLoopMaxBytes) {
    EncodePieceByLoop(piece, out);
  } else {
    EncodePieceByHeap(piece, out);
  }
}

void BpeModel::EncodePieceByLoop(std::string_view piece, std::vector<uint32_t>* out) const {
  const size_t n0 = piece.size();
  if (n0 > kLoopMaxBytes) return EncodePieceByHeap(piece, out);
  uint32_t ids[kLoopMaxBytes];
  uint64_t pair[kLoopMaxBytes];  // pair[i]: packed (rank, merged) of parts i and i+1
  size_t n = n0;
  for (size_t i = 0; i < n; ++i) ids[i] = byte_id_[static_cast<uint8_t>(piece[i])];
  for (size_t i = 0; i + 1 < n; ++i) pair[i] = pairs_.Find(ids[i], ids[i + 1]);
  while (n > 1) {
    // Packed values order by rank first; equal ranks are the same pair, and the strict < keeps
    // the leftmost of them.
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (pair[i] < pair[best]) best = i;
    }
    if (pair[best] == PairTable::kNone) break;
    ids[best] = PairTable::Merged(pair[best]);
    for (size_t i = best + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
    for (size_t i = best + 1; i + 2 < n; ++i) pair[i] = pair[i + 1];
    --n;
    if (best > 0) pair[best - 1] = pairs_.Find(ids[best - 1], ids[best]);
    if (best + 1 < n) pair[best] = pairs_.Find(ids[best], ids[best + 1]);
  }
  out->insert(out->end(), ids, ids + n);
}

void BpeModel::EncodePieceByHeap(std::string_view piece, std::vector<uint32_t>* out) const {
  const uint32_t n = static_cast<uint32_t>(piece.size());
  if (n == 0) return;
  constexpr uint32_t kNil = 0xFFFFFFFFu;
  struct Node {
    uint32_t id, prev, next, gen;  // gen changes whenever the node's id changes or it dies
  };
  struct Candidate {
    uint64_t value;  // packed (rank, merged)
    uint32_t left, left_gen, right, right_gen;
    // Lowest rank first, then leftmost: the order the flat loop merges in.
    bool operator>(const Candidate& o) const {
      uint32_t r = PairTable::Rank(value), ro = PairTable::Rank(o.value);
      return r != ro ? r > ro : left > o.left;
    }
  };
  std::vector<Node> nodes(n);
  for (uint32_t i = 0; i < n; ++i) {
    nodes[i] = {byte_id_[static_cast<uint8_t>(piece[i])], i == 0 ? kNil : i - 1,
                i + 1 == n ? kNil : i + 1, 0};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push = [&](uint32_t left) {
    uint32_t right = nodes[left].next;
    uint64_t v = pairs_.Find(nodes[left].id, nodes[right].id);
    if (v != PairTable::kNone) heap.push({v, left, nodes[left].gen, right, nodes[right].gen});
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    Node& left = nodes[c.left];
    if (left.gen != c.left_gen || left.next != c.right || nodes[c.right].gen != c.right_gen) {
      continue;  // stale: one side merged since this pair was seen
    }
    Node& right = nodes[c.right];
    left.id = PairTable::Merged(c.value);
    ++left.gen;
    ++right.gen;
    left.next = right.next;
    if (right.next != kNil) nodes[right.next].prev = c.left;
    if (left.prev != kNil) push(left.prev);
    if (left.next != kNil) push(c.left);
  }
  for (uint32_t i = 0; i != kNil; i = nodes[i].next) out->push_back(nodes[i].id);
}

}  // namespace replica

// Byte-level BPE model: turns the UTF-8 bytes of one pre-tokenised piece into token ids. A piece
// starts as one part per byte; the adjacent pair with the lowest merge rank is merged (the leftmost
// on ties) until no adjacent pair merges. Both ways of describing the merges reduce to one table
// (left id, right id) -> (rank, merged id):
//   FromRanks  a tiktoken rank file: id == rank, and parts a, b merge iff bytes(a)+bytes(b) is a
//              token, with that token's rank (what tiktoken and the dolma2 oracle do);
//   FromMerges a Hugging Face merges list: the pair at index i has rank i.
// With `whole_piece_first`, a piece that is itself a token is emitted without merging (tiktoken's
// shortcut; exact for cl100k, where every token merges back to itself, and what Hugging Face's
// `ignore_merges` means). Immutable after construction; Encode is safe from many threads. Each
// thread keeps a direct-mapped cache of recent short pieces and their ids (32768 entries, 1.5 MiB):
// frequent words then skip the lookups in the vocabulary and merge tables (4 + 8 MiB for cl100k),
// which are mostly cache misses. Measured on the SOTU text: ~1.3x overall.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/bpe_tables.h"

namespace replica {

class BpeModel {
 public:
  // tokens[r] = bytes of the token of rank r. Every single byte must be a token; tokens must be
  // non-empty and distinct. Errors name the rank.
  static BpeModel FromRanks(const std::vector<std::string>& tokens, bool whole_piece_first = true);

  // vocab: (bytes, id) pairs, ids distinct (holes allowed); merges in priority order as
  // (left bytes, right bytes), each side and their concatenation in the vocab. Every single byte
  // must be in the vocab. Errors name the offending entry.
  static BpeModel FromMerges(const std::vector<std::pair<std::string, uint32_t>>& vocab,
                             const std::vector<std::pair<std::string, std::string>>& merges,
                             bool whole_piece_first);

  // Appends the ids of `piece` (non-empty) to `out`.
  void EncodePiece(std::string_view piece, std::vector<uint32_t>* out) const;

  // Same result by the two merge strategies, without the whole-piece shortcut; for tests.
  void EncodePieceByLoop(std::string_view piece, std::vector<uint32_t>* out) const;
  void EncodePieceByHeap(std::string_view piece, std::vector<uint32_t>* out) const;

  // One past the largest id; ids below it may be holes (Has() false).
  uint32_t id_limit() const { return static_cast<uint32_t>(offsets_.size() - 1); }
  bool Has(uint32_t id) const { return id < id_limit() && offsets_[id + 1] > offsets_[id]; }
  std::string_view TokenBytes(uint32_t id) const {
    return {arena_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]};
  }
  // Id of the token with exactly these bytes, or TokenIndex::kNotFound.
  uint32_t Find(std::string_view bytes) const { return index_.Find(bytes); }
  size_t num_tokens() const { return num_tokens_; }
  size_t num_merges() const { return pairs_.size(); }
  bool whole_piece_first() const { return whole_piece_first_; }

  // Moves keep the index valid: it points into vector buffers, which a move hands over.
  BpeModel(BpeModel&&) noexcept = default;
  BpeModel& operator=(BpeModel&&) noexcept = default;
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

 private:
  BpeModel();
  // Appends the ids of a piece of 2+ bytes, bypassing the piece cache.
  void EncodeUncached(std::string_view piece, uint64_t hash, std::vector<uint32_t>* out) const;
  // Fills arena_/offsets_/index_/byte_id_ from (bytes, id) pairs.
  void SetVocab(const std::vector<std::pair<std::string_view, uint32_t>>& vocab);

  std::vector<char> arena_;
  std::vector<uint32_t> offsets_ = {0};
  TokenIndex index_;
  PairTable pairs_;
  uint32_t byte_id_[256] = {};
  size_t num_tokens_ = 0;
  size_t max_token_len_ = 0;
  bool whole_piece_first_ = true;
  uint64_t serial_ = 0;  // distinguishes models in the per-thread piece cache
};

}  // namespace replica

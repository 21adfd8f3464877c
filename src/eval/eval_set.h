// Held-out evaluation sets as read from JSONL (docs/design.md §4). One file is one set, named by its
// file name without the .jsonl[.zst|.gz] suffix. Every line is one of:
//   perplexity document      {"id": ..., "text": "..."}            (or "tokens": [ids] instead of text)
//   multiple-choice item     {"id": ..., "context": "...", "choices": ["...", ...], "gold": k}
// and all lines of a file must be of the same kind. Loading promises: every malformed line is an
// Error naming "file:line" and the field; empty files, empty texts, fewer than two choices, a gold
// index out of range and duplicate ids are Errors too. Blank lines are skipped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace replica::eval {

enum class SetKind { kPerplexity, kMultipleChoice };

struct PplDoc {
  std::string id;
  std::string text;             // empty when the document came pre-tokenized
  std::vector<int32_t> tokens;  // set only for pre-tokenized documents ("tokens" field)
  int64_t line = 0;             // 1-based line in the file, for error messages
};

struct McItem {
  std::string id;
  std::string context;
  std::vector<std::string> choices;  // continuations exactly as scored, leading space included
  int64_t gold = 0;
  int64_t line = 0;
};

struct EvalSet {
  std::string name;  // file stem
  std::string path;
  SetKind kind = SetKind::kPerplexity;
  std::vector<PplDoc> docs;    // kind == kPerplexity
  std::vector<McItem> items;   // kind == kMultipleChoice
  size_t size() const { return kind == SetKind::kPerplexity ? docs.size() : items.size(); }
};

// Reads a whole text file, decompressing .zst and .gz by suffix. Errors name the path.
std::string ReadTextFile(const std::string& path);

// The set name for a path: "data/eval/sotu_cloze.jsonl" -> "sotu_cloze".
std::string SetNameFromPath(const std::string& path);

EvalSet LoadEvalSet(const std::string& path);
// Parses JSONL text already in memory; `source` names it in errors.
EvalSet ParseEvalSet(const std::string& text, const std::string& source);

const char* KindName(SetKind kind);  // "perplexity" / "multiple_choice"

}  // namespace replica::eval

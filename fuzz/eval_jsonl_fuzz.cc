// Fuzzes held-out evaluation sets (eval::LoadEvalSet) in all three containers. The first input
// byte picks how the rest reaches the reader:
//   0: as a plain .jsonl file          1: gzip-compressed, as .jsonl.gz
//   2: zstd-compressed, as .jsonl.zst  3: raw bytes named .jsonl.gz    4: raw bytes named .jsonl.zst
// so both the JSONL parser and the decompressors' handling of corrupt streams are exercised.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "eval/eval_set.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string bytes = rest, suffix = ".jsonl";
  switch (data[0] % 5) {
    case 0: break;
    case 1: bytes = replica::fuzz::Gzip(rest); suffix = ".jsonl.gz"; break;
    case 2: bytes = replica::fuzz::Zstd(rest); suffix = ".jsonl.zst"; break;
    case 3: suffix = ".jsonl.gz"; break;
    case 4: suffix = ".jsonl.zst"; break;
  }
  const std::string path = replica::fuzz::WriteTempFile(
      reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), suffix);
  try {
    const replica::eval::EvalSet set = replica::eval::LoadEvalSet(path);
    (void)set.size();
  } catch (const replica::Error&) {
  }
  return 0;
}

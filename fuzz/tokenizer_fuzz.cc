// Fuzzes the dolma2 tokenizer on arbitrary input text, as `replica tokenize` meets it. The first
// input byte picks the path:
//   even: Encode the rest directly; for accepted (valid UTF-8) text, Decode(Encode(x)) must be x
//         and the parallel split must encode to the same ids
//   odd:  write the rest to a file and read it line by line with TextReader (plain, gzip or zstd,
//         by magic bytes), encoding each line
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/text_reader.h"
#include "tokenizer/tokenizer_registry.h"

namespace {

const replica::Tokenizer& Dolma2() { return replica::SharedTokenizer("dolma2"); }

void EncodeRoundTrip(std::string_view text) {
  std::vector<uint32_t> ids;
  try {
    Dolma2().Encode(text, &ids);
  } catch (const replica::Error&) {
    return;  // invalid UTF-8
  }
  if (Dolma2().Decode(ids) != text) std::abort();
  std::vector<uint32_t> joined;
  for (std::string_view part : Dolma2().SplitForParallelEncode(text, 16)) Dolma2().Encode(part, &joined);
  if (joined != ids) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)Dolma2();  // loads the 100k-entry rank file once
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    EncodeRoundTrip(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
    return 0;
  }
  const std::string path = replica::fuzz::WriteTempFile(data + 1, size - 1, ".txt");
  try {
    replica::TextReader reader(path);
    std::string line;
    while (reader.ReadLine(&line)) EncodeRoundTrip(line);
  } catch (const replica::Error&) {
  }
  return 0;
}

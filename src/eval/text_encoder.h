// Text -> token ids for evaluation and decontamination. The evaluators and the scanner only need
// `Encode` plus the EOS and padding ids, so they take this small interface rather than a concrete
// tokenizer: "dolma2" (the training tokenizer, EOS 100257, pad 100277) for real models, and
// "bytes" (one token per UTF-8 byte, ids 0..255, EOS/pad given by the model config) for the tiny
// test models whose vocabulary is a few hundred ids.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace replica::eval {

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  virtual std::vector<int32_t> Encode(std::string_view text) const = 0;
  virtual int32_t eos_id() const = 0;
  virtual int32_t pad_id() const = 0;
  virtual std::string name() const = 0;
};

// One token per byte; eos and pad must lie outside 0..255.
std::unique_ptr<TextEncoder> MakeByteEncoder(int32_t eos_id, int32_t pad_id);

// By name: "dolma2" or "bytes". For "bytes", eos/pad come from the arguments (pass the model
// config's ids); they are ignored for dolma2. Error naming the value for unknown names.
std::unique_ptr<TextEncoder> MakeTextEncoder(const std::string& name, int32_t eos_id = -1,
                                             int32_t pad_id = -1);

}  // namespace replica::eval

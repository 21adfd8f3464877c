#include "eval/text_encoder.h"

#include "core/error.h"
#include "tokenizer/tokenizer_dolma2.h"
#include "tokenizer/tokenizer_registry.h"

namespace replica::eval {
namespace {

class ByteEncoder : public TextEncoder {
 public:
  ByteEncoder(int32_t eos, int32_t pad) : eos_(eos), pad_(pad) {}
  std::vector<int32_t> Encode(std::string_view text) const override {
    std::vector<int32_t> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
  }
  int32_t eos_id() const override { return eos_; }
  int32_t pad_id() const override { return pad_; }
  std::string name() const override { return "bytes"; }

 private:
  int32_t eos_, pad_;
};

// dolma2 through the data pipeline's tokenizer, so eval text is tokenized exactly as training text.
class Dolma2Encoder : public TextEncoder {
 public:
  Dolma2Encoder() : tok_(SharedTokenizer("dolma2")) {}
  std::vector<int32_t> Encode(std::string_view text) const override {
    std::vector<uint32_t> ids = tok_.Encode(text);
    return {ids.begin(), ids.end()};
  }
  int32_t eos_id() const override { return static_cast<int32_t>(kDolma2EosId); }
  int32_t pad_id() const override { return static_cast<int32_t>(kDolma2PadId); }
  std::string name() const override { return "dolma2"; }

 private:
  const Tokenizer& tok_;
};

}  // namespace

std::unique_ptr<TextEncoder> MakeByteEncoder(int32_t eos_id, int32_t pad_id) {
  Require(eos_id > 255 && pad_id > 255,
          "the bytes tokenizer needs eos and pad ids above 255 (got eos {}, pad {})", eos_id, pad_id);
  return std::make_unique<ByteEncoder>(eos_id, pad_id);
}

std::unique_ptr<TextEncoder> MakeTextEncoder(const std::string& name, int32_t eos_id,
                                             int32_t pad_id) {
  if (name == "bytes") return MakeByteEncoder(eos_id, pad_id);
  if (name == "dolma2") return std::make_unique<Dolma2Encoder>();
  Fail("--tokenizer: unknown tokenizer \"{}\" (expected dolma2 or bytes)", name);
}

}  // namespace replica::eval

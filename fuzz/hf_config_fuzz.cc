// Fuzzes the Hugging Face config.json reader (ModelConfig::FromHfFile) and, for every config it
// accepts, what is derived from it before any weight is read: the parameter layout, the parameter
// count and the FLOP count.
#include <cstdint>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = replica::fuzz::WriteTempFile(data, size, "-config.json");
  try {
    const replica::ModelConfig c = replica::ModelConfig::FromHfFile(path);
    (void)c.NumParams();
    (void)c.BuildLayout();
    (void)c.FlopsPerToken(c.max_position_embeddings > 0 ? c.max_position_embeddings : 1);
    (void)replica::ModelConfig::FromHfJson(c.ToHfJson(), path + " (round trip)");
  } catch (const replica::Error&) {
  }
  return 0;
}

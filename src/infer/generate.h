// Generating a continuation of one prompt: prefill, then sample and step until the token budget
// is spent, the end-of-sequence token comes (it is not emitted), or the context is full. Each new
// token is handed to on_token as soon as it is chosen, for streaming.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "infer/decoder.h"
#include "infer/sampler.h"

namespace replica {

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  int64_t eos_token_id = -1;  // -1 = never stop early
  SamplingOptions sampling;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // the continuation, EOS excluded
  bool stopped_at_eos = false;
  double prefill_s = 0, decode_s = 0;  // wall time of the prefill and of all Step calls
  int64_t steps = 0;                   // Step calls (tokens whose logits were computed one by one)
};

// Error when the prompt plus max_new_tokens does not fit the decoder's context.
GenerateResult Generate(Decoder& decoder, std::span<const int32_t> prompt,
                        const GenerateOptions& options,
                        const std::function<void(int32_t token)>& on_token = {});

}  // namespace replica

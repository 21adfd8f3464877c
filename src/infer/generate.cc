#include "infer/generate.h"

#include <chrono>

#include "core/error.h"

namespace replica {

GenerateResult Generate(Decoder& decoder, std::span<const int32_t> prompt,
                        const GenerateOptions& o, const std::function<void(int32_t)>& on_token) {
  using Clock = std::chrono::steady_clock;
  const int64_t P = static_cast<int64_t>(prompt.size());
  Require(o.max_new_tokens >= 0, "--max-new-tokens must be >= 0, got {}", o.max_new_tokens);
  Require(P + o.max_new_tokens <= decoder.max_context(),
          "generate: the prompt has {} tokens; with --max-new-tokens {} that is {} positions, more "
          "than the context of {}", P, o.max_new_tokens, P + o.max_new_tokens,
          decoder.max_context());
  GenerateResult r;
  Sampler sampler(o.sampling);
  auto t0 = Clock::now();
  std::span<const float> logits = decoder.Prefill(prompt);
  auto t1 = Clock::now();
  r.prefill_s = std::chrono::duration<double>(t1 - t0).count();
  for (int64_t i = 0; i < o.max_new_tokens; ++i) {
    const int32_t next = sampler.Next(logits);
    if (next == o.eos_token_id) {
      r.stopped_at_eos = true;
      break;
    }
    r.tokens.push_back(next);
    if (on_token) on_token(next);
    if (i + 1 == o.max_new_tokens) break;  // no logits needed after the last token
    logits = decoder.Step(next);
    ++r.steps;
  }
  r.decode_s = std::chrono::duration<double>(Clock::now() - t1).count();
  return r;
}

}  // namespace replica

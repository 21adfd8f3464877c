// replica convert --from A --to B [--dtype bf16|f32] [--max-shard-size BYTES] [--tokenizer T] [--json]:
// checkpoint -> Hugging Face directory, or Hugging Face directory -> weights-only checkpoint
// (checkpoint/convert.h). The direction follows from what A is.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/validators.h"
#include "core/error.h"
#include "core/precision_spelling.h"
#include "checkpoint/convert.h"

namespace {

struct ConvertArgs {
  std::string from, to, dtype = "f32", tokenizer = "auto";
  uint64_t max_shard = 5000ull * 1000 * 1000;
  bool json = false, no_progress = false;
};

replica::cli::CommandRegistration reg(
    "convert", "checkpoint -> Hugging Face directory (bf16/f32), or HF directory -> checkpoint",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto args = std::make_shared<ConvertArgs>();
      app.add_option("--from", args->from,
                     "checkpoint dir (step-N/), run dir (newest valid checkpoint) or HF dir")
          ->required();
      app.add_option("--to", args->to, "output directory")->required();
      app.add_option("--dtype", args->dtype,
                     "stored dtype of exported weights: f32 (exact) or bf16; fp32, float32 and "
                     "bfloat16 are accepted too")
          ->transform(CLI::Validator(
              [](std::string& s) -> std::string {
                const std::string p = replica::CanonicalPrecision(s);
                if (p.empty())
                  return std::string("expected ") + replica::kPrecisionSpellings + ", got '" + s +
                         "'";
                s = p == "fp32" ? "f32" : "bf16";  // the safetensors spelling, as printed
                return "";
              },
              "f32|bf16"));
      app.add_option("--max-shard-size", args->max_shard,
                     "export: bytes of tensor data per shard (default 5e9, as transformers)")
          ->check(replica::cli::AtLeast(1));
      app.add_option("--tokenizer", args->tokenizer,
                     "export: tokenizer files to write beside the weights: auto (dolma2 when the "
                     "vocabulary holds its ids), dolma2, none, or a tokenizer.json path")
          ->capture_default_str();
      app.add_flag("--json", args->json, "print the summary as JSON on stdout");
      app.add_flag("--no-progress", args->no_progress,
                   "no progress line on stderr (megabytes read and written, ETA)");
      return [args] {
        replica::ConvertOptions o;
        o.from = args->from;
        o.to = args->to;
        o.dtype = args->dtype == "bf16" ? replica::DType::kBF16 : replica::DType::kF32;
        o.max_shard_bytes = args->max_shard;
        o.tokenizer = args->tokenizer;
        o.progress = !args->no_progress;
        replica::ConvertResult r = replica::Convert(o);
        const bool to_hf = r.direction == replica::ConvertDirection::kCheckpointToHf;
        if (args->json) {
          nlohmann::json j = {{"direction", to_hf ? "checkpoint-to-hf" : "hf-to-checkpoint"},
                              {"from", r.source}, {"to", o.to}, {"dtype", args->dtype},
                              {"tensors", r.tensors}, {"parameters", r.parameters},
                              {"files", r.files}};
          j["step"] = r.step;
          std::printf("%s\n", j.dump(2).c_str());
        } else if (to_hf) {
          std::printf("exported %s (step %lld, %lld tensors, %lld parameters) to %s as %s\n",
                      r.source.c_str(), static_cast<long long>(r.step),
                      static_cast<long long>(r.tensors), static_cast<long long>(r.parameters),
                      o.to.c_str(), args->dtype.c_str());
        } else {
          std::printf("imported %s (%lld tensors, %lld parameters) to checkpoint %s\n",
                      r.source.c_str(), static_cast<long long>(r.tensors),
                      static_cast<long long>(r.parameters), o.to.c_str());
        }
        return 0;
      };
    });

}  // namespace

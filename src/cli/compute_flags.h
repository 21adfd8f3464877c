// --precision and --isa, the command-line form of a run config's `compute` section
// (docs/precision.md), shared by the subcommands that run the model. Apply() checks both values
// (exit 2 naming the flag), selects the backend, applies the ISA cap on its device (ops/device.h)
// and logs what is in use.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "core/log.h"
#include "core/precision_spelling.h"
#include "ops/device.h"
#include "ops/registry.h"

namespace replica::cli {

struct ComputeFlags {
  std::string device = "cpu";  // the registered backend (ops/registry.h); no flag: only cpu today
  std::string precision = "fp32";
  std::string isa = "auto";
  std::string torch_cpu = "auto";

  void Add(CLI::App& app) {
    app.add_option("--precision", precision,
                   "fp32 | bf16 (bf16-rounded matmul inputs, fp32 accumulation) | bf16-fsdp "
                   "(every tensor bf16 as torch rounds it under OLMo-core's FSDP bf16); f32, "
                   "float32 and bfloat16 are accepted too")
        ->capture_default_str();
    app.add_option("--isa", isa, "cap on the CPU's instruction set: auto | avx2 | avx512 | amx")
        ->capture_default_str();
    app.add_option("--torch-cpu", torch_cpu,
                   "bf16-fsdp: the CPU kind whose torch kernels it follows: auto (this "
                   "machine's) | avx2 | avx512 (the kind the reference was made on)")
        ->capture_default_str();
  }

  // --precision in any accepted spelling (exit 2 naming the flag otherwise).
  Precision ParsedPrecision() const {
    const std::string canonical = CanonicalPrecision(precision);
    return ParsePrecision(canonical.empty() ? precision : canonical, "--precision");
  }

  ComputeSettings Apply() const {
    const Precision p = ParsedPrecision();
    ComputeRequest request;
    request.precision = p;
    request.isa = isa;
    request.isa_what = "--isa";
    request.torch_cpu = torch_cpu;
    request.torch_cpu_what = "--torch-cpu";
    ComputeSettings s = replica::SelectBackend(device, p).device().Configure(request);
    REPLICA_LOG_INFO("compute: {}", s.Describe());
    return s;
  }

  // The backend for these settings (Apply()'s result).
  const Backend& SelectBackend(const ComputeSettings& s) const {
    return replica::SelectBackend(device, s.precision);
  }
};

}  // namespace replica::cli

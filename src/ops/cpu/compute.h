// A run's compute settings, `compute.precision` and `compute.isa` in a run config or --precision
// and --isa on the command line (docs/precision.md): parsed, checked against this CPU, applied to
// the process (the ISA cap) and described for logs, metrics and checkpoints.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "ops/cpu/isa.h"
#include "ops/precision.h"

namespace replica {

struct ComputeSettings {
  Precision precision = Precision::kFp32;
  Isa isa = Isa::kAvx2;  // the cap in use

  // {"precision", "isa", "bf16_matmul": "onednn-amx" | "onednn-avx512bf16" | "emulated",
  //  "cpu": {...features}}
  nlohmann::json ToJson() const;
  // One line naming only what the precision uses: "precision fp32, cpu ...; using avx512; fp32
  // matmuls OpenBLAS sgemm (SKYLAKEX)" or "precision bf16, cpu ...; bf16 matmuls onednn-amx".
  std::string Describe() const;
};

// Parses both values (Errors name `precision_what` / `isa_what`, e.g. "--precision" or "config
// key 'compute.isa'"), applies the ISA cap to the process (ApplyIsaCap) and returns the settings.
ComputeSettings ConfigureCompute(const std::string& precision, const std::string& isa,
                                 const std::string& precision_what, const std::string& isa_what);

}  // namespace replica

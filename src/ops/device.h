// The machine a backend's ops run on, as a run sees it: what `compute.isa` means there (the cap a
// run puts on the instruction sets, checked against this machine and applied to the process), the
// settings logs, metrics and checkpoints record, and the two MFU denominators (a measured matmul
// rate and a nominal one). Every Backend names its Device (Backend::device()); callers reach the
// machine through the backend they selected, never through an implementation folder, so a second
// device brings its own answers from its own folder.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "ops/precision.h"

namespace replica {

// A run's compute settings once applied: the precision and the cap in use, with the device's own
// description of them.
struct ComputeSettings {
  Precision precision = Precision::kFp32;
  std::string isa;          // the cap in use, in the device's spelling (cpu: avx2, avx512, amx)
  std::string torch_cpu;    // bf16-fsdp: the CPU kind whose torch kernels are followed; else ""
  nlohmann::json json;      // {"precision", "isa", ...what the device adds}
  std::string description;  // one line naming only what the precision uses

  nlohmann::json ToJson() const { return json; }
  std::string Describe() const { return description; }
};

// What a run asks of the device: the precision, compute.isa, and for bf16-fsdp the CPU kind whose
// torch kernels it follows (compute.torch_cpu), each with the name an error gives it.
struct ComputeRequest {
  Precision precision = Precision::kFp32;
  std::string isa = "auto";
  std::string isa_what = "compute.isa";
  std::string torch_cpu = "auto";
  std::string torch_cpu_what = "compute.torch_cpu";
};

// The measured MFU denominator: the rate of the matmul the mode uses, on this machine.
struct PeakRate {
  double flops_per_s = 0;
  std::string text;  // how it was measured, for the run log
};

// The nominal MFU denominator: FLOP/cycle/core of the unit doing the mode's math × clock × cores.
struct NominalRate {
  double flops_per_s = 0;
  double flops_per_cycle_per_core = 0;
  double clock_hz = 0;
  int cores = 0;
  std::string clock_text;  // the clock used and its references
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const char* name() const = 0;  // "cpu"

  // Checks the request's cap (compute.isa: "auto" or a name this device knows) against this
  // machine and its torch_cpu against what the device knows, an Error naming the setting
  // otherwise; applies them to the process and returns the settings in use. The first call
  // fixes the cap; a later call with another value is an Error.
  virtual ComputeSettings Configure(const ComputeRequest& request) const = 0;
  ComputeSettings Configure(Precision precision, const std::string& cap,
                            const std::string& what) const {
    ComputeRequest request;
    request.precision = precision;
    request.isa = cap;
    request.isa_what = what;
    return Configure(request);
  }
  // The fastest rate of the mode's matmul on an n × n × n problem with the threads in use
  // (cached per machine where the device keeps a cache).
  virtual PeakRate MeasurePeak(Precision precision, int64_t n) const = 0;
  // The nominal rate with `cores` cores, in the cap in use.
  virtual NominalRate MeasureNominalPeak(Precision precision, int cores) const = 0;
};

}  // namespace replica

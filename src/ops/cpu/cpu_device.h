// The CPU as a Device (ops/device.h): compute.isa is the instruction-set cap of isa.h, applied to
// the process (oneDNN's and Highway's dispatch); the settings name the CPU's features, the cap and
// the matmul route the precision uses; the measured peak is gemm_peak.h's GEMM rate (cached per
// machine) and the nominal one its FLOP/cycle/core × measured core clock × cores.
#pragma once
#include "ops/device.h"

namespace replica {

// The one instance, shared by every CPU backend.
const Device& CpuDevice();

}  // namespace replica

// Fuzzes SafetensorsFile::Open (header length, JSON header, dtypes, shapes, offsets, tiling) and
// the converting reads of every tensor it accepts.
#include <cstdint>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = replica::fuzz::WriteTempFile(data, size, ".safetensors");
  try {
    const auto file = replica::SafetensorsFile::Open(path);
    for (const replica::TensorInfo& t : file.tensors()) {
      if (t.numel() > (1 << 20)) continue;  // the reads copy; keep memory bounded
      try {
        if (t.dtype == replica::DType::kI64 || t.dtype == replica::DType::kI32) {
          (void)file.ReadI64(t.name);
        } else {
          (void)file.ReadF32(t.name);
          (void)file.ReadF64(t.name);
        }
      } catch (const replica::Error&) {
      }
    }
  } catch (const replica::Error&) {
  }
  return 0;
}

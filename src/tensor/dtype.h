// Element types of stored tensors: the one enumeration shared by in-memory buffers (buffer.h) and
// the safetensors reader and writer (io/safetensors.h), so a tensor's type never needs translating
// between the two.
#pragma once
#include <cstddef>

namespace replica {

// The element types replica holds or reads and writes. Others (BOOL, U8, I8, F8_*, ...) are
// refused by name when a file is read.
enum class DType { kF32, kBF16, kF16, kF64, kI32, kI64 };

const char* DTypeName(DType dtype);  // "F32", "BF16", ... as spelled in safetensors headers
size_t DTypeSize(DType dtype);       // bytes per element

}  // namespace replica

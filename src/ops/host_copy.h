// Host access to a backend's buffers, for code that fills or reads them on the host (weights
// widened from a file, logits handed to a caller): in place when the backend is_host(), else
// through a host staging copy and Backend::CopyFromHost / CopyToHost.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "ops/backend.h"

namespace replica {

// Writes the first `n` floats of `dst` (an fp32 buffer from `backend`) with `fill`, which is given
// a host pointer to n floats.
void FillFromHost(const Backend& backend, Buffer& dst, size_t n,
                  const std::function<void(float*)>& fill);
// The first `n` floats of `src` (an fp32 buffer from `backend`) readable on the host: src itself
// when backend.is_host(), else `staging` filled by CopyToHost.
const float* ReadOnHost(const Backend& backend, const Buffer& src, size_t n,
                        std::vector<float>& staging);

// n floats of the backend's memory at `src` into host memory at `dst`: Backend::Copy when
// is_host() (its parallel copy), else CopyToHost.
void CopyFloatsToHost(const Backend& backend, float* dst, const float* src, int64_t n);
// n floats of host memory at `src` into the backend's memory at `dst`: Backend::Copy when
// is_host(), else CopyFromHost.
void CopyFloatsFromHost(const Backend& backend, float* dst, const float* src, int64_t n);

// Writes n floats of the backend's memory at `dst` with `fill`, given a host pointer to n floats:
// dst itself when is_host(), else a staging copy then CopyFromHost.
void FillFloatsFromHost(const Backend& backend, float* dst, size_t n,
                        const std::function<void(float*)>& fill);

}  // namespace replica

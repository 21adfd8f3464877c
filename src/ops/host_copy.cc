#include "ops/host_copy.h"

#include "core/error.h"

namespace replica {

void FillFromHost(const Backend& backend, Buffer& dst, size_t n,
                  const std::function<void(float*)>& fill) {
  Require(dst.dtype() == DType::kF32 && n <= dst.size(),
          "fill from the host: {} floats into a buffer of {} {} elements", n, dst.size(),
          DTypeName(dst.dtype()));
  FillFloatsFromHost(backend, static_cast<float*>(dst.raw()), n, fill);
}

void FillFloatsFromHost(const Backend& backend, float* dst, size_t n,
                        const std::function<void(float*)>& fill) {
  if (backend.is_host()) {
    fill(dst);
    return;
  }
  std::vector<float> host(n);
  fill(host.data());
  if (n > 0) backend.CopyFromHost(dst, host.data(), n * sizeof(float));
}

const float* ReadOnHost(const Backend& backend, const Buffer& src, size_t n,
                        std::vector<float>& staging) {
  Require(src.dtype() == DType::kF32 && n <= src.size(),
          "read on the host: {} floats out of a buffer of {} {} elements", n, src.size(),
          DTypeName(src.dtype()));
  if (backend.is_host()) return src.f32();
  staging.resize(n);
  backend.CopyToHost(staging.data(), src.raw(), n * sizeof(float));
  return staging.data();
}

void CopyFloatsToHost(const Backend& backend, float* dst, const float* src, int64_t n) {
  if (backend.is_host())
    backend.Copy(dst, src, n);
  else if (n > 0)
    backend.CopyToHost(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void CopyFloatsFromHost(const Backend& backend, float* dst, const float* src, int64_t n) {
  if (backend.is_host())
    backend.Copy(dst, src, n);
  else if (n > 0)
    backend.CopyFromHost(dst, src, static_cast<size_t>(n) * sizeof(float));
}

}  // namespace replica

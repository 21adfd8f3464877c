#include "tensor/buffer.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace replica {

const char* LocationName(Location location) {
  switch (location) {
    case Location::kHost: return "host";
    case Location::kDevice: return "device";
  }
  return "?";
}

void Buffer::Free::operator()(void* p) const {
  if (release != nullptr) {
    release(p, bytes, context);
  } else {
    std::free(p);
  }
}

Buffer::Buffer(DType dtype, size_t elements, Location location)
    : size_(elements), dtype_(dtype), location_(location) {
  Require(location == Location::kHost, "buffer: cannot allocate {} memory", LocationName(location));
  const size_t elem = DTypeSize(dtype);
  Require(elements <= (SIZE_MAX - 64) / elem, "buffer: {} elements of {} overflow the address space",
          elements, DTypeName(dtype));
  size_t bytes = (elements * elem + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  void* p = std::aligned_alloc(64, bytes);
  if (!p) Fail("out of memory allocating {} bytes", bytes);
  std::memset(p, 0, bytes);
  data_.reset(p);
}

Buffer Buffer::Adopt(DType dtype, size_t elements, Location location, void* data,
                     Release release, void* context) {
  Require(data != nullptr && release != nullptr, "buffer: adopting {} storage without {}",
          LocationName(location), data == nullptr ? "data" : "a release function");
  Buffer b;
  b.size_ = elements;
  b.dtype_ = dtype;
  b.location_ = location;
  b.data_ = std::unique_ptr<void, Free>(data, Free{release, b.bytes(), context});
  return b;
}

void Buffer::CheckHost(DType want) const {
  Require(dtype_ == want, "buffer: holds {} elements, accessed as {}", DTypeName(dtype_),
          DTypeName(want));
}

float* Buffer::f32() {
  CheckHost(DType::kF32);
  return static_cast<float*>(data_.get());
}
const float* Buffer::f32() const {
  CheckHost(DType::kF32);
  return static_cast<const float*>(data_.get());
}
double* Buffer::f64() {
  CheckHost(DType::kF64);
  return static_cast<double*>(data_.get());
}
const double* Buffer::f64() const {
  CheckHost(DType::kF64);
  return static_cast<const double*>(data_.get());
}
uint16_t* Buffer::bf16() {
  CheckHost(DType::kBF16);
  return static_cast<uint16_t*>(data_.get());
}
const uint16_t* Buffer::bf16() const {
  CheckHost(DType::kBF16);
  return static_cast<const uint16_t*>(data_.get());
}

void Buffer::Zero() {
  Require(location_ == Location::kHost, "buffer: {} memory zeroed from the host",
          LocationName(location_));
  if (size_) std::memset(data_.get(), 0, bytes());
}

}  // namespace replica

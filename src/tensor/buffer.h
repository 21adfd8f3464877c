// Storage that knows its element type and where it lives: the unit a backend (ops/backend.h)
// allocates, fills and reads. FlatBuffer (flat_buffer.h) is its fp32 host case, the one the model,
// optimizer, checkpoints and collectives use today; a backend that keeps, say, bf16 copies of the
// weights holds them in a Buffer of DType::kBF16.
//
// Promises: storage is 64-byte aligned and zero-initialised; size() counts elements, bytes() is
// size() · DTypeSize(dtype()); typed access checks the element type (Error naming both types).
// Moves transfer ownership; copies are not allowed (a copy of gigabytes should be visible).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "tensor/dtype.h"

namespace replica {

// Where a buffer's storage lives. Host memory is all there is today; a device backend adds its
// own kind of storage here, and host-only code checks location() before touching data.
enum class Location { kHost };

const char* LocationName(Location location);  // "host"

class Buffer {
 public:
  Buffer() = default;
  // Zero-initialised storage for `elements` elements of `dtype` at `location`.
  Buffer(DType dtype, size_t elements, Location location = Location::kHost);
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  DType dtype() const { return dtype_; }
  Location location() const { return location_; }
  size_t size() const { return size_; }  // elements
  size_t bytes() const { return size_ * DTypeSize(dtype_); }
  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }

  // Typed views; Error unless the buffer holds that type on the host.
  float* f32();
  const float* f32() const;
  double* f64();
  const double* f64() const;
  uint16_t* bf16();  // bf16 bit patterns (core/half.h converts)
  const uint16_t* bf16() const;

  void Zero();  // every byte 0 (single-threaded; ops/backend.h Zero is the parallel one)

 protected:
  void CheckHost(DType want) const;

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
  DType dtype_ = DType::kF32;
  Location location_ = Location::kHost;
};

}  // namespace replica

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

// Where a buffer's storage lives: host memory, which any code may read and write, or a backend's
// own memory (kDevice), which only that backend's ops and its CopyFromHost / CopyToHost touch.
enum class Location { kHost, kDevice };

const char* LocationName(Location location);  // "host", "device"

class Buffer {
 public:
  Buffer() = default;
  // Zero-initialised host storage for `elements` elements of `dtype` (location must be kHost:
  // other memory comes from the backend that owns it, through Adopt).
  Buffer(DType dtype, size_t elements, Location location = Location::kHost);
  // Storage a backend allocated itself: `data` holds `elements` elements of `dtype` at `location`
  // (zeroed by the backend); when the buffer dies, release(data, bytes(), context) frees it.
  using Release = void (*)(void* data, size_t bytes, void* context);
  static Buffer Adopt(DType dtype, size_t elements, Location location, void* data,
                      Release release, void* context);
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  DType dtype() const { return dtype_; }
  Location location() const { return location_; }
  size_t size() const { return size_; }  // elements
  size_t bytes() const { return size_ * DTypeSize(dtype_); }
  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }

  // Typed pointers; Error unless the buffer holds that type. They address the buffer's location:
  // host code reads a kDevice buffer only through its backend's CopyToHost (ops/host_copy.h).
  float* f32();
  const float* f32() const;
  double* f64();
  const double* f64() const;
  uint16_t* bf16();  // bf16 bit patterns (core/half.h converts)
  const uint16_t* bf16() const;

  // Every byte 0 (single-threaded; ops/backend.h Zero is the parallel one). Error unless host.
  void Zero();

 protected:
  void CheckHost(DType want) const;

 private:
  struct Free {  // value-initialised (all null) for std::aligned_alloc storage
    Release release;  // null: std::free
    size_t bytes;
    void* context;
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
  DType dtype_ = DType::kF32;
  Location location_ = Location::kHost;
};

}  // namespace replica

// Named views into one contiguous fp32 buffer (docs/design.md §2.1). Parameters, gradients and Adam m
// and v each live in one FlatBuffer sharing one ParamLayout, so optimizers, clipping, checkpoints
// and collectives are loops over a float array while the model addresses tensors by HF name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/buffer.h"

namespace replica {

struct ParamView {
  std::string name;             // Hugging Face name, e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;   // row-major
  size_t offset = 0;            // in floats from the buffer start
  size_t numel = 0;
  bool matmul_weight = false;  // read only by matmul-bearing ops (model/layer_tensors.h)
};

// The ordered table of views. Offsets are assigned in Add() order, each view aligned to 16 floats
// (64 bytes) so SIMD loads of a tensor start on a cache line.
class ParamLayout {
 public:
  static constexpr size_t kAlignFloats = 16;
  const ParamView& Add(std::string name, std::vector<int64_t> shape, bool matmul_weight = false);
  const ParamView& Get(const std::string& name) const;  // Error naming the missing tensor
  const ParamView* Find(const std::string& name) const;
  const std::vector<ParamView>& views() const { return views_; }
  size_t total_floats() const { return total_; }     // including alignment padding
  size_t num_elements() const { return elements_; }  // sum of numel, without padding

 private:
  std::vector<ParamView> views_;
  std::unordered_map<std::string, size_t> index_;
  size_t total_ = 0, elements_ = 0;
};

// The fp32 host Buffer (buffer.h) that parameters, gradients and optimizer state live in:
// 64-byte aligned, zero-initialised; padding between views stays zero.
class FlatBuffer : public Buffer {
 public:
  FlatBuffer() = default;  // no storage: size() 0, data() null
  explicit FlatBuffer(size_t n) : Buffer(DType::kF32, n) {}
  // Takes over a buffer a backend allocated (Backend::AllocateFloats); Error unless it is F32.
  explicit FlatBuffer(Buffer&& storage);
  float* data() { return static_cast<float*>(raw()); }
  const float* data() const { return static_cast<const float*>(raw()); }
  std::span<float> View(const ParamView& v) { return {data() + v.offset, v.numel}; }
  std::span<const float> View(const ParamView& v) const { return {data() + v.offset, v.numel}; }
};

std::string ShapeString(const std::vector<int64_t>& shape);  // "[4, 16]"
int64_t NumElements(const std::vector<int64_t>& shape);

}  // namespace replica

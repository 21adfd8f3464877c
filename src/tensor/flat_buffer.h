// Named views into one contiguous fp32 buffer (docs/design.md §2.1). Parameters, gradients and Adam m
// and v each live in one FlatBuffer sharing one ParamLayout, so optimizers, clipping, checkpoints
// and collectives are loops over a float array while the model addresses tensors by HF name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace replica {

struct ParamView {
  std::string name;             // Hugging Face name, e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;   // row-major
  size_t offset = 0;            // in floats from the buffer start
  size_t numel = 0;
};

// The ordered table of views. Offsets are assigned in Add() order, each view aligned to 16 floats
// (64 bytes) so SIMD loads of a tensor start on a cache line.
class ParamLayout {
 public:
  static constexpr size_t kAlignFloats = 16;
  const ParamView& Add(std::string name, std::vector<int64_t> shape);
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

// 64-byte aligned, zero-initialised fp32 storage. Padding between views stays zero.
class FlatBuffer {
 public:
  FlatBuffer() = default;
  explicit FlatBuffer(size_t n);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  void Zero();
  std::span<float> View(const ParamView& v) { return {data_.get() + v.offset, v.numel}; }
  std::span<const float> View(const ParamView& v) const { return {data_.get() + v.offset, v.numel}; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> data_;
  size_t size_ = 0;
};

std::string ShapeString(const std::vector<int64_t>& shape);  // "[4, 16]"
int64_t NumElements(const std::vector<int64_t>& shape);

}  // namespace replica

#include "tensor/flat_buffer.h"

#include <utility>

#include "core/error.h"

namespace replica {

FlatBuffer::FlatBuffer(Buffer&& storage) : Buffer(std::move(storage)) {
  Require(dtype() == DType::kF32, "flat buffer: given {} storage, expected F32", DTypeName(dtype()));
}

const ParamView& ParamLayout::Add(std::string name, std::vector<int64_t> shape,
                                  bool matmul_weight) {
  Require(!index_.count(name), "parameter layout: duplicate tensor name '{}'", name);
  ParamView v;
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.matmul_weight = matmul_weight;
  v.numel = static_cast<size_t>(NumElements(v.shape));
  v.offset = total_;
  total_ += (v.numel + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  elements_ += v.numel;
  index_[v.name] = views_.size();
  views_.push_back(std::move(v));
  return views_.back();
}

const ParamView* ParamLayout::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &views_[it->second];
}

const ParamView& ParamLayout::Get(const std::string& name) const {
  const ParamView* v = Find(name);
  if (!v) Fail("parameter layout: no tensor named '{}'", name);
  return *v;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace replica

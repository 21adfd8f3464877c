// safetensors files (https://github.com/huggingface/safetensors): the container of every weight,
// reference dump and checkpoint replica reads or writes (docs/design.md §4).
//
// SafetensorsFile memory-maps a file and validates ALL of it up front, as the reference Rust
// implementation does: header length, JSON, every entry's dtype/shape/data_offsets, sizes, and that
// the tensors tile the data section exactly (no overlap, no hole, no trailing bytes). After Open()
// succeeds every TensorInfo points at nbytes readable bytes; any violation is an Error naming the
// file and, where there is one, the tensor. Tensor data is read with memcpy, so alignment of the
// data section does not matter.
//
// SafetensorsWriter streams a file through AtomicFileWriter: the header is padded with spaces to a
// multiple of 8 (so data is 8-byte aligned), tensors are packed in Add() order, "__metadata__"
// carries "format": "pt". It REFERENCES the caller's data (no copy: a 7B model must not be held
// twice); the pointers must stay valid until Write() returns. AddCopy() copies, for small values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mmap.h"
#include "tensor/dtype.h"

namespace replica {

// DType, DTypeName and DTypeSize come from tensor/dtype.h.
bool ParseDType(std::string_view name, DType* out);  // false for unknown or unsupported names

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;      // [] = scalar (one element)
  const uint8_t* data = nullptr;   // into the mapping; valid while the SafetensorsFile lives
  size_t nbytes = 0;               // == numel() * DTypeSize(dtype), checked at Open()
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Largest header accepted (the reference implementation's limit): guards against absurd lengths.
  static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

  static SafetensorsFile Open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  // In data-offset order, i.e. the order a writer packed them.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* Find(const std::string& name) const;  // nullptr when absent
  const TensorInfo& Get(const std::string& name) const;   // Error naming the file and tensor
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Converting reads. Each refuses (Error naming file, tensor, dtype) a dtype it cannot convert.
  std::vector<float> ReadF32(const std::string& name) const;     // from F32, BF16, F16, F64
  std::vector<double> ReadF64(const std::string& name) const;    // from F64, F32, BF16, F16
  std::vector<int64_t> ReadI64(const std::string& name) const;   // from I64, I32
  // Into caller storage; Error unless the tensor has exactly n elements.
  void ReadF32Into(const std::string& name, float* dst, size_t n) const;

 private:
  MappedFile file_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Converts info's elements to fp32 into dst (n must equal numel; F32/BF16/F16/F64 only). `source`
// names the file in errors. Shared by SafetensorsFile and HfCheckpoint.
void ConvertToF32(const TensorInfo& info, float* dst, size_t n, const std::string& source);

class SafetensorsWriter {
 public:
  // References `data` (nbytes == numel * DTypeSize(dtype), little-endian row-major) until Write().
  void Add(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data,
           size_t nbytes);
  // References fp32 data; stores it as `stored` (F32, BF16 or F16), converting while writing.
  void AddF32(const std::string& name, std::vector<int64_t> shape, const float* data,
              DType stored = DType::kF32);
  // Copies the bytes (for scalars and other small values whose storage does not outlive the call).
  void AddCopy(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data,
               size_t nbytes);
  void SetMetadata(const std::string& key, const std::string& value);

  // Writes atomically (temporary file, fsync, rename): Error naming the path on any failure (full
  // disk included), leaving no partial file. May be called more than once.
  void Write(const std::string& path) const;

  size_t size() const { return entries_.size(); }
  uint64_t data_bytes() const;  // bytes of the data section

 private:
  struct Entry {
    std::string name;
    DType dtype;            // as stored in the file
    std::vector<int64_t> shape;
    const void* data;       // in `source` dtype
    DType source;           // == dtype, or F32 converted at write time
    size_t nbytes;          // stored bytes
  };
  void AddEntry(Entry e);
  std::vector<Entry> entries_;
  std::vector<std::vector<uint8_t>> copies_;  // AddCopy storage; moving keeps buffers in place
  std::unordered_map<std::string, size_t> names_;
  std::map<std::string, std::string> metadata_ = {{"format", "pt"}};
};

}  // namespace replica

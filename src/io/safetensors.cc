#include "io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/half.h"
#include "tensor/flat_buffer.h"

namespace replica {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kMetadataKey = "__metadata__";

uint64_t ReadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Non-negative JSON integer, or an Error built by the caller's context string.
uint64_t NonNegativeInt(const json& v, const std::string& context) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) Fail("{}: {} is negative", context, v.dump());
  Fail("{}: expected a non-negative integer, got {}", context, v.dump());
}

// Element count of `shape` and its byte size for `dtype`; Error on overflow.
void CheckedSizes(const std::vector<int64_t>& shape, DType dtype, const std::string& context,
                  uint64_t* numel_out, uint64_t* nbytes_out) {
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) Fail("{}: negative dimension {} in shape", context, d);
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel) ||
        numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      Fail("{}: shape {} has too many elements", context, ShapeText(shape));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(DTypeSize(dtype)), &nbytes))
    Fail("{}: tensor byte size does not fit in 64 bits", context);
  *numel_out = numel;
  *nbytes_out = nbytes;
}

// JSON parse that rejects duplicate keys at any depth (nlohmann keeps the last one silently, which
// would let two entries claim one name).
json ParseHeaderJson(std::string_view text, const std::string& path) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  auto cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default:
        break;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    Fail("{}", JsonErrorMessage(path + ": safetensors header", text, e));
  }
  Require(duplicate.empty(), "{}: safetensors header has duplicate key '{}'", path, duplicate);
  return j;
}

}  // namespace

bool ParseDType(std::string_view name, DType* out) {
  static constexpr DType kAll[] = {DType::kF32, DType::kBF16, DType::kF16,
                                   DType::kF64, DType::kI32,  DType::kI64};
  for (DType d : kAll) {
    if (name == DTypeName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

int64_t TensorInfo::numel() const {
  for (int64_t d : shape)
    if (d == 0) return 0;  // before multiplying: validated shapes may hold huge dims next to a 0
  return NumElements(shape);
}

// ---------------------------------------------------------------------------------------------
// Reading

SafetensorsFile SafetensorsFile::Open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::Open(path);
  const uint8_t* base = f.file_.data();
  const uint64_t size = f.file_.size();
  Require(size >= 8, "{}: not a safetensors file: {} bytes, shorter than the 8-byte header length",
          path, size);
  const uint64_t header_len = ReadLe64(base);
  Require(header_len <= kMaxHeaderBytes,
          "{}: safetensors header length {} exceeds the {}-byte limit (corrupt or not a "
          "safetensors file)",
          path, header_len, kMaxHeaderBytes);
  Require(header_len <= size - 8,
          "{}: safetensors header length {} exceeds the {} bytes after the length field "
          "(truncated file?)",
          path, header_len, size - 8);
  const uint8_t* data_start = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  json header = ParseHeaderJson(
      std::string_view(reinterpret_cast<const char*>(base + 8), header_len), path);
  Require(header.is_object(), "{}: safetensors header must be a JSON object, got {}", path,
          header.type_name());

  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (auto& [key, entry] : header.items()) {
    if (key == kMetadataKey) {
      Require(entry.is_object(), "{}: __metadata__ must be an object of strings, got {}", path,
              entry.type_name());
      for (auto& [mk, mv] : entry.items()) {
        Require(mv.is_string(), "{}: __metadata__ entry '{}' must be a string, got {}", path, mk,
                mv.type_name());
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string ctx = fmt::format("{}: tensor '{}'", path, key);
    Require(entry.is_object(), "{}: entry must be an object, got {}", ctx, entry.type_name());
    TensorInfo info;
    info.name = key;

    auto dt = entry.find("dtype");
    Require(dt != entry.end(), "{}: missing 'dtype'", ctx);
    Require(dt->is_string(), "{}: 'dtype' must be a string, got {}", ctx, dt->dump());
    const std::string dname = dt->get<std::string>();
    Require(ParseDType(dname, &info.dtype),
            "{}: unsupported dtype '{}' (replica reads F32, BF16, F16, F64, I32, I64)", ctx, dname);

    auto sh = entry.find("shape");
    Require(sh != entry.end(), "{}: missing 'shape'", ctx);
    Require(sh->is_array(), "{}: 'shape' must be an array, got {}", ctx, sh->dump());
    for (const json& d : *sh) {
      uint64_t v = NonNegativeInt(d, ctx + " shape dimension");
      Require(v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
              "{}: shape dimension {} is too large", ctx, v);
      info.shape.push_back(static_cast<int64_t>(v));
    }

    auto off = entry.find("data_offsets");
    Require(off != entry.end(), "{}: missing 'data_offsets'", ctx);
    Require(off->is_array() && off->size() == 2,
            "{}: 'data_offsets' must be an array [begin, end], got {}", ctx, off->dump());
    const uint64_t begin = NonNegativeInt((*off)[0], ctx + " data_offsets begin");
    const uint64_t end = NonNegativeInt((*off)[1], ctx + " data_offsets end");
    Require(begin <= end, "{}: data_offsets [{}, {}] have begin after end", ctx, begin, end);
    Require(end <= data_size, "{}: data_offsets [{}, {}] exceed the data section of {} bytes", ctx,
            begin, end, data_size);

    uint64_t numel = 0, nbytes = 0;
    CheckedSizes(info.shape, info.dtype, ctx, &numel, &nbytes);
    Require(end - begin == nbytes,
            "{}: data_offsets [{}, {}] span {} bytes but {} {} needs {} x {} = {} bytes", ctx,
            begin, end, end - begin, dname, ShapeText(info.shape), numel, DTypeSize(info.dtype),
            nbytes);
    info.data = data_start + begin;
    info.nbytes = static_cast<size_t>(nbytes);
    ranges.push_back({begin, end, f.tensors_.size()});
    f.tensors_.push_back(std::move(info));
  }

  // The tensors must tile the data section exactly, like the reference implementation demands:
  // an overlap means two tensors alias, a hole or tail means the header does not describe the file.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const TensorInfo* prev = nullptr;
  for (const Range& r : ranges) {
    const TensorInfo& t = f.tensors_[r.index];
    if (r.begin < covered)
      Fail("{}: tensor '{}' data_offsets [{}, {}] overlap tensor '{}' (which ends at {})", path,
           t.name, r.begin, r.end, prev ? prev->name : "", covered);
    if (r.begin > covered)
      Fail("{}: bytes [{}, {}) of the data section belong to no tensor (hole before tensor '{}')",
           path, covered, r.begin, t.name);
    covered = r.end;
    prev = &t;
  }
  Require(covered == data_size,
          "{}: data section has {} bytes but the tensors cover only {} (trailing bytes)", path,
          data_size, covered);

  std::vector<TensorInfo> sorted;
  sorted.reserve(ranges.size());
  for (const Range& r : ranges) sorted.push_back(std::move(f.tensors_[r.index]));
  f.tensors_ = std::move(sorted);
  for (size_t i = 0; i < f.tensors_.size(); ++i) f.index_[f.tensors_[i].name] = i;
  return f;
}

const TensorInfo* SafetensorsFile::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafetensorsFile::Get(const std::string& name) const {
  const TensorInfo* t = Find(name);
  if (!t) Fail("{}: no tensor named '{}' ({} tensors in the file)", path(), name, tensors_.size());
  return *t;
}

void ConvertToF32(const TensorInfo& t, float* dst, size_t n, const std::string& source) {
  Require(static_cast<uint64_t>(t.numel()) == n,
          "{}: tensor '{}' has {} elements (shape {}), expected {}", source, t.name, t.numel(),
          ShapeText(t.shape), n);
  const uint8_t* p = t.data;
  switch (t.dtype) {
    case DType::kF32:
      if (n) std::memcpy(dst, p, n * 4);
      return;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = Bf16ToF32(h);
      }
      return;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = F16ToF32(h);
      }
      return;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        dst[i] = static_cast<float>(d);
      }
      return;
    default:
      Fail("{}: tensor '{}' has dtype {}, expected a floating type (F32, BF16, F16, F64)", source,
           t.name, DTypeName(t.dtype));
  }
}

std::vector<float> SafetensorsFile::ReadF32(const std::string& name) const {
  const TensorInfo& t = Get(name);
  std::vector<float> out(static_cast<size_t>(t.numel()));
  ConvertToF32(t, out.data(), out.size(), path());
  return out;
}

void SafetensorsFile::ReadF32Into(const std::string& name, float* dst, size_t n) const {
  ConvertToF32(Get(name), dst, n, path());
}

std::vector<double> SafetensorsFile::ReadF64(const std::string& name) const {
  const TensorInfo& t = Get(name);
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<double> out(n);
  if (t.dtype == DType::kF64) {
    if (n) std::memcpy(out.data(), t.data, n * 8);
    return out;
  }
  Require(t.dtype == DType::kF32 || t.dtype == DType::kBF16 || t.dtype == DType::kF16,
          "{}: tensor '{}' has dtype {}, expected a floating type (F64, F32, BF16, F16)", path(),
          name, DTypeName(t.dtype));
  std::vector<float> f(n);
  ConvertToF32(t, f.data(), n, path());  // exact: every F32/BF16/F16 value is a double
  for (size_t i = 0; i < n; ++i) out[i] = f[i];
  return out;
}

std::vector<int64_t> SafetensorsFile::ReadI64(const std::string& name) const {
  const TensorInfo& t = Get(name);
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<int64_t> out(n);
  if (t.dtype == DType::kI64) {
    if (n) std::memcpy(out.data(), t.data, n * 8);
  } else if (t.dtype == DType::kI32) {
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, t.data + 4 * i, 4);
      out[i] = v;
    }
  } else {
    Fail("{}: tensor '{}' has dtype {}, expected an integer type (I64, I32)", path(), name,
         DTypeName(t.dtype));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing

void SafetensorsWriter::AddEntry(Entry e) {
  Require(e.name != kMetadataKey, "safetensors writer: '__metadata__' is reserved, not a tensor name");
  try {
    (void)json(e.name).dump();  // strict UTF-8 check, so Write() cannot fail on the header later
  } catch (const json::exception&) {
    Fail("safetensors writer: tensor name '{}' is not valid UTF-8", e.name);
  }
  Require(!names_.count(e.name), "safetensors writer: tensor '{}' added twice", e.name);
  const std::string ctx = fmt::format("safetensors writer: tensor '{}'", e.name);
  uint64_t numel = 0, nbytes = 0;
  CheckedSizes(e.shape, e.dtype, ctx, &numel, &nbytes);
  Require(e.nbytes == nbytes, "{}: {} bytes given but {} {} needs {}", ctx, e.nbytes,
          DTypeName(e.dtype), ShapeText(e.shape), nbytes);
  Require(e.data != nullptr || nbytes == 0, "{}: null data", ctx);
  names_[e.name] = entries_.size();
  entries_.push_back(std::move(e));
}

void SafetensorsWriter::Add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                            const void* data, size_t nbytes) {
  AddEntry({name, dtype, std::move(shape), data, dtype, nbytes});
}

void SafetensorsWriter::AddF32(const std::string& name, std::vector<int64_t> shape,
                               const float* data, DType stored) {
  Require(stored == DType::kF32 || stored == DType::kBF16 || stored == DType::kF16,
          "safetensors writer: tensor '{}': fp32 data can be stored as F32, BF16 or F16, not {}",
          name, DTypeName(stored));
  int64_t numel = 1;
  for (int64_t d : shape) {
    Require(d >= 0, "safetensors writer: tensor '{}': negative dimension {}", name, d);
    Require(d == 0 || numel <= std::numeric_limits<int64_t>::max() / d,
            "safetensors writer: tensor '{}': shape too large", name);
    numel *= d;
  }
  AddEntry({name, stored, std::move(shape), data, DType::kF32,
            static_cast<size_t>(numel) * DTypeSize(stored)});
}

void SafetensorsWriter::AddCopy(const std::string& name, DType dtype, std::vector<int64_t> shape,
                                const void* data, size_t nbytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  std::vector<uint8_t> bytes(p, p + (data ? nbytes : 0));
  const void* stored = bytes.data();
  copies_.push_back(std::move(bytes));  // the vector's buffer does not move with it
  Add(name, dtype, std::move(shape), stored, nbytes);
}

void SafetensorsWriter::SetMetadata(const std::string& key, const std::string& value) {
  try {
    (void)json(key).dump();
    (void)json(value).dump();
  } catch (const json::exception&) {
    Fail("safetensors writer: metadata '{}' is not valid UTF-8", key);
  }
  metadata_[key] = value;
}

uint64_t SafetensorsWriter::data_bytes() const {
  uint64_t total = 0;
  for (const Entry& e : entries_) total += e.nbytes;
  return total;
}

void SafetensorsWriter::Write(const std::string& path) const {
  ordered_json header = ordered_json::object();
  header[std::string(kMetadataKey)] = ordered_json(metadata_);
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    ordered_json entry = ordered_json::object();
    entry["dtype"] = DTypeName(e.dtype);
    entry["shape"] = e.shape;
    entry["data_offsets"] = {offset, offset + e.nbytes};
    header[e.name] = std::move(entry);
    offset += e.nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));

  AtomicFileWriter out(path);
  out.Write(len, 8);
  out.Write(text);
  constexpr size_t kChunk = 1 << 16;  // elements converted per write when narrowing fp32
  std::vector<uint16_t> buf;
  for (const Entry& e : entries_) {
    if (e.source == e.dtype) {
      out.Write(e.data, e.nbytes);
      continue;
    }
    const float* src = static_cast<const float*>(e.data);
    const size_t n = e.nbytes / 2;
    buf.resize(std::min(n, kChunk));
    for (size_t start = 0; start < n; start += kChunk) {
      const size_t m = std::min(kChunk, n - start);
      if (e.dtype == DType::kBF16) {
        for (size_t i = 0; i < m; ++i) buf[i] = F32ToBf16(src[start + i]);
      } else {
        for (size_t i = 0; i < m; ++i) buf[i] = F32ToF16(src[start + i]);
      }
      out.Write(buf.data(), m * 2);
    }
  }
  out.Commit();
}

}  // namespace replica

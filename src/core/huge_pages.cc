#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "core/error.h"

namespace replica {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

size_t RoundUp(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

HugePageBuffer HugePageBuffer::Allocate(size_t bytes) {
  HugePageBuffer b;
  if (bytes == 0) return b;
  const size_t want = RoundUp(bytes, kHugePage);
  // Over-map by one huge page, then trim both ends so the kept range starts on a 2 MiB boundary.
  const size_t span = want + kHugePage;
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    Fail("cannot map {} bytes of anonymous memory: {}", span, std::strerror(errno));
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = RoundUp(base, kHugePage);
  if (aligned > base) ::munmap(p, aligned - base);
  const uintptr_t end = aligned + want;
  if (base + span > end) ::munmap(reinterpret_cast<void*>(end), base + span - end);
  b.data_ = reinterpret_cast<uint8_t*>(aligned);
  b.size_ = bytes;
  b.mapped_ = want;
  ::madvise(b.data_, want, MADV_HUGEPAGE);  // advice only: refused where THP is off
  return b;
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept {
  *this = std::move(other);
}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  if (data_) ::munmap(data_, mapped_);
}

size_t HugePageBuffer::huge_bytes() const {
  if (data_ == nullptr) return 0;
  std::ifstream in("/proc/self/smaps");
  const uintptr_t lo = reinterpret_cast<uintptr_t>(data_), hi = lo + mapped_;
  std::string line;
  bool inside = false;
  size_t total = 0;
  while (std::getline(in, line)) {
    uintptr_t a = 0, b = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> a >> dash >> b && dash == '-') {
      inside = a >= lo && b <= hi;  // a range of ours (the kernel may merge or split VMAs)
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      size_t kb = 0;
      std::istringstream(line.substr(14)) >> kb;
      total += kb * 1024;
    }
  }
  return total;
}

size_t AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

}  // namespace replica

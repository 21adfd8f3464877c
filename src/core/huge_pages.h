// Anonymous memory advised for transparent huge pages: for large buffers that are streamed again
// and again (the decoder's weight copy), where 4 KiB pages cost TLB misses on every pass.
// Allocate() maps `bytes` rounded up to 2 MiB at a 2 MiB-aligned address and asks the kernel for
// huge pages (madvise MADV_HUGEPAGE). The kernel may still back it with 4 KiB pages (THP set to
// "never", or no contiguous memory free): huge_pages() reads /proc/self/smaps afterwards and says
// how much actually is. Error naming the size when the mapping fails.
#pragma once
#include <cstddef>
#include <cstdint>

namespace replica {

class HugePageBuffer {
 public:
  static HugePageBuffer Allocate(size_t bytes);
  HugePageBuffer() = default;
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }  // the bytes asked for
  // Bytes of this buffer the kernel backs with huge pages now (AnonHugePages of its mapping in
  // /proc/self/smaps); 0 when unknown.
  size_t huge_bytes() const;

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;
};

// Bytes the kernel reports as available for new allocations (MemAvailable in /proc/meminfo);
// 0 when unknown.
size_t AvailableMemoryBytes();

}  // namespace replica

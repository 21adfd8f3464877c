// Read-only memory-mapped file. Open() throws Error naming the path when the file is missing or
// unreadable. An empty file maps to data() == nullptr, size() == 0.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace replica {

class MappedFile {
 public:
  static MappedFile Open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Drops this process's resident pages of a read-only file mapping that lie wholly inside
// [p, p + n) (madvise MADV_DONTNEED; the page cache keeps them, a later read faults them back in).
// Lets a reader that streams through a large mapped file keep its resident set small. Best effort:
// a failure is ignored (the pages merely stay resident).
void ReleaseMappedPages(const void* p, size_t n);

}  // namespace replica

// Helpers every test folder shares: the message of the Error a call throws, and a scratch directory
// that is unique per process and removed at scope exit (ctest -j runs cases of one binary in
// parallel processes, so a fixed name would be shared).
#pragma once
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>

#include "core/error.h"

namespace replica::test {

// The what() of the replica::Error that `f` throws, or "<no error>" when it returns normally.
template <typename F>
std::string ErrorOf(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// A fresh, empty directory under the system temp directory: <tmp>/replica-<tag>-XXXXXX.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / ("replica-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw Error("TempDir: mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // Path of `name` inside the directory (not created).
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace replica::test

#include "tokenizer/tokenizer_registry.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "tokenizer/tokenizer_dolma2.h"
#include "tokenizer/tokenizer_hf.h"

namespace replica {
namespace fs = std::filesystem;

std::vector<std::string> DataSearchDirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("REPLICA_DATA_DIR"); env != nullptr && *env != '\0') {
    dirs.emplace_back(env);
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back((exe.parent_path().parent_path() / "data").string());
    dirs.push_back((exe.parent_path().parent_path() / "share" / "replica" / "data").string());
  }
  // This file lives at <source root>/src/data/; __FILE__ is absolute in CMake builds.
  fs::path source(__FILE__);
  if (source.is_absolute()) {
    dirs.push_back((source.parent_path().parent_path().parent_path() / "data").string());
  }
  return dirs;
}

std::string FindDataFile(std::string_view name) {
  std::vector<std::string> dirs = DataSearchDirs();
  std::string tried;
  for (const std::string& dir : dirs) {
    fs::path p = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
    tried += (tried.empty() ? "" : ", ") + dir;
  }
  Fail("bundled data file '{}' not found (looked in: {}); set REPLICA_DATA_DIR to the repository's "
       "data/ folder", name, tried);
}

Tokenizer LoadTokenizer(std::string_view spec) {
  if (spec == "dolma2") return LoadDolma2Tokenizer(FindDataFile(kCl100kRankFile));
  if (spec.ends_with(".json")) {
    return LoadHfTokenizerJson(std::string(spec));
  }
  Fail("unknown tokenizer '{}': expected 'dolma2' or the path of a Hugging Face tokenizer.json",
       spec);
}

const Tokenizer& SharedTokenizer(std::string_view spec) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>, std::less<>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(spec);
  if (it == loaded.end()) {
    it = loaded.emplace(std::string(spec), std::make_unique<Tokenizer>(LoadTokenizer(spec))).first;
  }
  return *it->second;
}

}  // namespace replica

// Helpers shared by the data-order tests: oracle JSON, scratch directories, token files, and
// running Debian's numpy (/usr/bin/python3) as an independent reference.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/util.h"

namespace replica::data::testing {

inline nlohmann::json LoadOracle(const std::string& name) {
  std::ifstream in(std::string(REPLICA_TEST_DATA) + "/oracles/data-order/" + name);
  return nlohmann::json::parse(in);
}

// A fresh directory removed at scope exit.
using ScratchDir = replica::test::TempDir;

template <typename T>
void WriteTokens(const std::string& path, const std::vector<T>& ids) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(ids.data()),
            static_cast<std::streamsize>(ids.size() * sizeof(T)));
}

// Token file whose k-th token is base + k, so each token says where it came from.
inline std::string WriteCountingFile(const ScratchDir& dir, const std::string& name,
                                     uint32_t base, uint32_t count) {
  std::vector<uint32_t> ids(count);
  for (uint32_t k = 0; k < count; ++k) ids[k] = base + k;
  std::string path = dir.File(name);
  WriteTokens(path, ids);
  return path;
}

inline constexpr const char* kDebianPython = "/usr/bin/python3";

inline bool HaveDebianNumpy() {
  if (!std::filesystem::exists(kDebianPython)) return false;
  std::string cmd = std::string(kDebianPython) + " -c 'import numpy' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Runs `script` with Debian's python and returns its stdout lines.
inline std::vector<std::string> RunPython(const ScratchDir& dir, const std::string& script) {
  std::string path = dir.File("script.py");
  std::ofstream(path) << script;
  std::string cmd = std::string(kDebianPython) + " " + path;
  std::vector<std::string> lines;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return lines;
  std::string cur;
  for (int c; (c = std::fgetc(p)) != EOF;) {
    if (c == '\n') {
      lines.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(c));
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  int rc = ::pclose(p);
  if (rc != 0) lines.insert(lines.begin(), "python failed");
  return lines;
}

}  // namespace replica::data::testing

// The stub backends' training tests: the token file both train on, and what they compare with the
// CPU run (files as bytes; the loss and gradient norm of every train line of RUN/metrics.jsonl,
// as written).
#pragma once
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace replica::stub {

// 64 instances of 16 uint32 tokens below 250, at `path`.
inline void WriteTokens(const std::string& path) {
  std::vector<uint32_t> tokens(16 * 64);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>((i * 7 + i / 16) % 250);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(tokens.data()),
             static_cast<std::streamsize>(4 * tokens.size()));
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::vector<std::string> TrainLines(const std::string& run_dir) {
  std::vector<std::string> out;
  std::ifstream f(run_dir + "/metrics.jsonl");
  for (std::string line; std::getline(f, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("loss")) out.push_back(j["loss"].dump() + " " + j["grad_norm"].dump());
  }
  return out;
}

}  // namespace replica::stub

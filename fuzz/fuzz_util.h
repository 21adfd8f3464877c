// Helpers shared by the libFuzzer targets of fuzz/ (built with -DREPLICA_FUZZ=ON, run by
// `make fuzz`). Each target feeds one input format of replica arbitrary bytes and promises: bad
// input is refused with replica::Error and nothing else — no crash, no sanitizer report, no other
// exception type, no hang, no allocation beyond libFuzzer's limit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace replica::fuzz {

// Writes `size` bytes to a file private to this process (in /dev/shm when it exists) whose name
// ends with `suffix`, replacing the previous content; returns its path. The file is reused across
// inputs so a long run does not litter the disk.
std::string WriteTempFile(const uint8_t* data, size_t size, const std::string& suffix);

// gzip / zstd compressions of `text` (for targets that read compressed files).
std::string Gzip(const std::string& text);
std::string Zstd(const std::string& text);

}  // namespace replica::fuzz

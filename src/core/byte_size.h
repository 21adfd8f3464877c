// Byte counts as people write them: "24GiB", "1.5 TiB", "20GB", "512MiB", "1073741824".
// Binary units (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (kB/KB, MB, GB, TB) powers of
// 1000, "B" or no unit is bytes. Also: this machine's physical memory, and a byte count for people.
#pragma once
#include <cstdint>
#include <string>

namespace replica {

// Error naming `where` (a flag or config key) for anything else, a negative or fractional byte
// count, or a count past 2^63.
uint64_t ParseByteSize(const std::string& text, const std::string& where);
// "24.00 GiB" (GiB for >= 1 GiB, else MiB).
std::string FormatBytes(uint64_t bytes);
// sysconf(_SC_PHYS_PAGES) · page size.
uint64_t PhysicalMemoryBytes();

}  // namespace replica

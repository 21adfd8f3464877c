// Refusing NaN and ±Inf where they can only mean damage: weights and optimizer state read from a
// file, and state about to be written to a checkpoint. A model with one NaN weight evaluates to
// "ppl nan" and trains to NaN; an Error naming the file, tensor and element says why at once.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace replica {

// Index of the first NaN or ±Inf in data[0, n), or nullopt. Parallel (OpenMP), same answer for
// any thread count.
std::optional<size_t> FirstNonFinite(const float* data, size_t n);

// Index of the first value in data[0, n) that is finite but rounds to ±Inf in bf16 (|x| at or
// above 0x7f7f8000, 3.3961e38: past bf16's largest finite 3.3895e38 by more than half a step).
std::optional<size_t> FirstBf16Overflow(const float* data, size_t n);

// Error "<where>: tensor '<tensor>' holds nan at element i (of n) ..." unless all are finite.
void RequireFiniteTensor(const float* data, size_t n, const std::string& where,
                         const std::string& tensor);

}  // namespace replica

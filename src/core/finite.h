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

// Error "<where>: tensor '<tensor>' holds nan at element i (of n) ..." unless all are finite.
void RequireFiniteTensor(const float* data, size_t n, const std::string& where,
                         const std::string& tensor);

}  // namespace replica

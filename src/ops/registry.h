// Backend selection: the one place that maps a run's `compute.device` and `compute.precision` to
// an implementation of the ops table (ops/backend.h). Implementations register themselves from
// their own folder with REPLICA_REGISTER_BACKEND, at static initialisation; nothing outside that
// folder names them. Every registered backend lives for the whole process.
#pragma once
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/precision.h"

namespace replica {

// Registers `backend` as the implementation of (device, precision). Registering a pair twice is
// an Error. Returns true (so a registration can initialise a static).
bool RegisterBackend(const std::string& device, Precision precision, const Backend& backend);

// The backend registered for (device, precision). An Error naming `what` (a config key or flag)
// and the registered devices when the device is unknown; naming the precisions the device has
// when it lacks this one.
const Backend& SelectBackend(const std::string& device, Precision precision,
                             const std::string& what = "config key 'compute.device'");

// The registered devices, sorted, each once.
std::vector<std::string> RegisteredDevices();

// Every registered (device, precision) pair and its backend, sorted by device then precision.
struct RegisteredBackend {
  std::string device;
  Precision precision;
  const Backend* backend;
};
std::vector<RegisteredBackend> RegisteredBackends();

}  // namespace replica

// Registers a backend from a .cc file of its own folder: REPLICA_REGISTER_BACKEND(cpu_bf16, "cpu",
// Precision::kBf16, instance) where `instance` is an expression yielding a `const Backend&` that
// outlives the process's use of it (a function-local static's).
#define REPLICA_REGISTER_BACKEND(tag, device, precision, instance)                \
  namespace {                                                                     \
  const bool replica_backend_registered_##tag =                                   \
      ::replica::RegisterBackend((device), (precision), (instance));              \
  }

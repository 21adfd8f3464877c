#include "ops/registry.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/error.h"

namespace replica {
namespace {

// Filled during static initialisation, read afterwards; a function-local static so that
// registrations from any translation unit find it constructed.
std::map<std::pair<std::string, Precision>, const Backend*>& Table() {
  static std::map<std::pair<std::string, Precision>, const Backend*> table;
  return table;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

bool RegisterBackend(const std::string& device, Precision precision, const Backend& backend) {
  const bool inserted = Table().emplace(std::make_pair(device, precision), &backend).second;
  Require(inserted, "backend {} {} is registered twice", device, PrecisionName(precision));
  return true;
}

std::vector<std::string> RegisteredDevices() {
  std::vector<std::string> devices;
  for (const auto& [key, backend] : Table())
    if (devices.empty() || devices.back() != key.first) devices.push_back(key.first);
  return devices;
}

std::vector<RegisteredBackend> RegisteredBackends() {
  std::vector<RegisteredBackend> out;
  for (const auto& [key, backend] : Table()) out.push_back({key.first, key.second, backend});
  return out;
}

const Backend& SelectBackend(const std::string& device, Precision precision,
                             const std::string& what) {
  const auto it = Table().find(std::make_pair(device, precision));
  if (it != Table().end()) return *it->second;
  const std::vector<std::string> devices = RegisteredDevices();
  Require(std::find(devices.begin(), devices.end(), device) != devices.end(),
          "{}: unknown device '{}'; registered devices: {}", what, device, Join(devices));
  std::vector<std::string> precisions;
  for (const auto& [key, backend] : Table())
    if (key.first == device) precisions.push_back(PrecisionName(key.second));
  Fail("{}: device '{}' has no {} backend (it has {})", what, device, PrecisionName(precision),
       Join(precisions));
}

}  // namespace replica

#include "optim/update_rule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <mutex>

#include "core/error.h"
#include "optim/adamw.h"

namespace replica {
namespace {

// Every update rule by its `optim.type`.
std::map<std::string, UpdateRuleFactory>& Table() {
  static std::map<std::string, UpdateRuleFactory> table = {
      {"adamw", &MakeAdamWRule},
  };
  return table;
}

std::mutex& TableMutex() {
  static std::mutex m;
  return m;
}

}  // namespace

std::vector<std::string> UpdateRuleTypes() {
  std::lock_guard<std::mutex> lock(TableMutex());
  std::vector<std::string> types;
  for (const auto& [type, factory] : Table()) types.push_back(type);
  return types;
}

bool IsUpdateRuleType(const std::string& type) {
  std::lock_guard<std::mutex> lock(TableMutex());
  return Table().count(type) > 0;
}

void RegisterUpdateRule(const std::string& type, UpdateRuleFactory factory) {
  std::lock_guard<std::mutex> lock(TableMutex());
  Require(factory != nullptr, "update rule '{}': no factory", type);
  Require(Table().emplace(type, factory).second, "update rule '{}' is registered already", type);
}

std::unique_ptr<const UpdateRule> MakeUpdateRule(const ParamLayout& layout,
                                                 const UpdateRuleConfig& config) {
  UpdateRuleFactory factory = nullptr;
  {
    std::lock_guard<std::mutex> lock(TableMutex());
    const auto it = Table().find(config.type);
    if (it != Table().end()) factory = it->second;
  }
  Require(factory != nullptr, "config key 'optim.type': unknown update rule '{}' (known: {})",
          config.type, fmt::join(UpdateRuleTypes(), ", "));
  return factory(layout, config);
}

}  // namespace replica

#include "model/recompute.h"

#include "core/error.h"

namespace replica {

Recompute ParseRecompute(const std::string& name, const std::string& where) {
  if (name == "none") return Recompute::kNone;
  if (name == "mlp") return Recompute::kMlp;
  if (name == "full") return Recompute::kFull;
  Fail("{}: expected none, mlp or full, got '{}'", where, name);
}

const char* RecomputeName(Recompute policy) {
  switch (policy) {
    case Recompute::kNone: return "none";
    case Recompute::kMlp: return "mlp";
    case Recompute::kFull: return "full";
  }
  return "?";
}

}  // namespace replica

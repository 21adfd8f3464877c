#include "train/train_state.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace replica {
namespace {

nlohmann::json EncodeDoubles(const std::vector<double>& xs) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : xs) {
    if (std::isnan(x)) a.push_back("NaN");
    else if (std::isinf(x)) a.push_back(x > 0 ? "Infinity" : "-Infinity");
    else a.push_back(x);
  }
  return a;
}

std::vector<double> DecodeDoubles(const nlohmann::json& a, const std::string& field,
                                  const std::string& source) {
  Require(a.is_array(), "{}: field '{}': expected an array of numbers", source, field);
  std::vector<double> out;
  for (const auto& v : a) {
    if (v.is_number()) {
      out.push_back(v.get<double>());
    } else if (v == "NaN") {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (v == "Infinity" || v == "-Infinity") {
      out.push_back(v == "Infinity" ? INFINITY : -INFINITY);
    } else {
      Fail("{}: field '{}': expected numbers, got {}", source, field, v.dump());
    }
  }
  return out;
}

const nlohmann::json& Field(const nlohmann::json& j, const char* key, const std::string& source) {
  auto it = j.find(key);
  Require(it != j.end(), "{}: missing field '{}'", source, key);
  return *it;
}

int64_t IntField(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto& v = Field(j, key, source);
  Require(v.is_number_integer(), "{}: field '{}': expected an integer, got {}", source, key,
          v.dump());
  return v.get<int64_t>();
}

std::string StringField(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto& v = Field(j, key, source);
  Require(v.is_string(), "{}: field '{}': expected a string, got {}", source, key, v.dump());
  return v.get<std::string>();
}

}  // namespace

nlohmann::json TrainState::ToJson() const {
  nlohmann::json j = {
      {"format", "replica-train-state"},
      {"version", 1},
      {"step", step},
      {"tokens", tokens},
      {"loader", loader},
      {"skip_step", {{"losses", EncodeDoubles(skip_losses)},
                     {"grad_norms", EncodeDoubles(skip_grad_norms)}}},
      {"rng", {{"init_seed", init_seed}, {"draws_after_init", 0}}},
      {"config_hash", config_hash},
      {"trajectory_hash", trajectory_hash},
      {"world_size", world_size},
      {"micro_batch_instances", micro_batch_instances},
      {"adam_step", adam_step},
      {"precision", precision},
      {"isa", isa},
      {"non_finite",
       {{"total", non_finite_total},
        {"consecutive", non_finite_consecutive},
        {"first_step", non_finite_first_step}}},
  };
  if (!torch_cpu.empty()) j["torch_cpu"] = torch_cpu;  // bf16-fsdp only: other states unchanged
  return j;
}

TrainState TrainState::FromJson(const nlohmann::json& j, const std::string& source) {
  Require(j.is_object(), "{}: expected a JSON object", source);
  Require(j.value("format", "") == "replica-train-state",
          "{}: field 'format': expected \"replica-train-state\"", source);
  Require(j.value("version", 0) == 1, "{}: field 'version': expected 1", source);
  TrainState s;
  s.step = IntField(j, "step", source);
  s.tokens = IntField(j, "tokens", source);
  s.loader = Field(j, "loader", source);
  const auto& skip = Field(j, "skip_step", source);
  s.skip_losses = DecodeDoubles(Field(skip, "losses", source), "skip_step.losses", source);
  s.skip_grad_norms =
      DecodeDoubles(Field(skip, "grad_norms", source), "skip_step.grad_norms", source);
  const auto& rng = Field(j, "rng", source);
  Require(rng.is_object() && rng.contains("init_seed") && rng["init_seed"].is_number_unsigned(),
          "{}: field 'rng.init_seed': expected a non-negative integer", source);
  s.init_seed = rng["init_seed"].get<uint64_t>();
  s.config_hash = StringField(j, "config_hash", source);
  s.trajectory_hash = StringField(j, "trajectory_hash", source);
  s.world_size = IntField(j, "world_size", source);
  s.micro_batch_instances = IntField(j, "micro_batch_instances", source);
  s.adam_step = IntField(j, "adam_step", source);
  for (auto [key, field] : {std::pair{"precision", &s.precision}, std::pair{"isa", &s.isa},
                            std::pair{"torch_cpu", &s.torch_cpu}}) {
    if (!j.contains(key)) continue;
    Require(j[key].is_string(), "{}: field '{}' must be a string", source, key);
    *field = j[key].get<std::string>();
  }
  if (j.contains("non_finite")) {
    const auto& nf = j["non_finite"];
    const std::string within = source + ": field 'non_finite'";
    Require(nf.is_object(), "{}: expected an object, got {}", within, nf.dump());
    s.non_finite_total = IntField(nf, "total", within);
    s.non_finite_consecutive = IntField(nf, "consecutive", within);
    s.non_finite_first_step = IntField(nf, "first_step", within);
    Require(s.non_finite_consecutive >= 0 && s.non_finite_consecutive <= s.non_finite_total &&
                s.non_finite_total <= s.step && s.non_finite_first_step >= 0 &&
                s.non_finite_first_step <= s.step,
            "{}: field 'non_finite': inconsistent counts {}", source, nf.dump());
  }
  Require(s.step >= 0 && s.tokens >= 0 && s.adam_step >= 0,
          "{}: negative step, tokens or adam_step", source);
  return s;
}

}  // namespace replica

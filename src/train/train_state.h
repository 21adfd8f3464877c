// The trainer's resume state, stored as a checkpoint's state.json (docs/design.md §4). Together with the
// checkpoint's weights and Adam state (m, v, t) it is everything the next step depends on, so a
// resumed run continues bit for bit:
//   {"format": "replica-train-state", "version": 1,
//    "step", "tokens",                       optimizer steps taken, tokens consumed
//    "loader": LoaderState::ToJson(),        data position (global, world-size independent)
//    "skip_step": {"losses": [...], "grad_norms": [...]},   the rule's history, oldest first
//    "rng": {"init_seed": S, "draws_after_init": 0},         training draws no random numbers
//    "config_hash", "trajectory_hash",       RunConfig::Hash() / TrajectoryHash()
//    "world_size", "micro_batch_instances", "adam_step",
//    "precision", "isa",                     compute settings the state was trained in (absent
//                                            in older checkpoints: read as fp32, "")
//    "torch_cpu",                            bf16-fsdp only: the CPU kind whose torch kernels
//                                            it followed (absent otherwise: read as "")
//    "non_finite": {"total", "consecutive", "first_step"}}   NonFiniteGuard's count: steps not
//                                            applied so far, the current run of them in a row
//                                            and its first step (absent in older checkpoints: 0)
// Doubles are written with round-trip precision; non-finite history values as "NaN"/"Infinity".
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace replica {

struct TrainState {
  int64_t step = 0;
  int64_t tokens = 0;
  nlohmann::json loader;  // data::LoaderState::ToJson()
  std::vector<double> skip_losses, skip_grad_norms;
  uint64_t init_seed = 0;
  std::string config_hash, trajectory_hash;
  int64_t world_size = 1;
  int64_t micro_batch_instances = 0;
  int64_t adam_step = 0;
  std::string precision = "fp32";  // compute.precision of the run that wrote it
  std::string isa;                 // the ISA it ran on ("" when unknown)
  std::string torch_cpu;           // bf16-fsdp: the torch CPU kind followed ("" otherwise)
  int64_t non_finite_total = 0;        // steps whose update was not applied (non-finite)
  int64_t non_finite_consecutive = 0;  // of them, the run in a row ending at `step`
  int64_t non_finite_first_step = 0;   // first step of that run (0 when there is none)

  nlohmann::json ToJson() const;
  // Error naming `source` and the missing or mistyped field.
  static TrainState FromJson(const nlohmann::json& j, const std::string& source);
};

}  // namespace replica

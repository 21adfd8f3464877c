// Logit and gradient parity of replica's Olmo 3 against a reference dump (docs/design.md §4, §5): what
// `replica parity` computes. The dump is one safetensors file with input_ids [B,T] (I64/I32),
// logits [B,T,V] (F32), optional labels [B,T] (I64, aligned with logits, -100 ignored), optional
// loss (F64 scalar, mean CE) and, for gradient parity, grad.<HF name> for every parameter.
// Every statistic is computed in double. A dump that does not fit the model is an Error naming
// the tensor and the expected shape; thresholds only decide `pass`.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "ops/cpu/precision.h"

namespace replica {

struct ParityOptions {
  std::string model_dir;       // config.json + weights (single file or sharded)
  std::string reference_path;  // the dump
  bool grads = false;          // also compare every parameter gradient
  double max_kl = 1e-6;        // bound on the largest per-position KL(P_ref || P_model)
  double min_top1 = 1.0;       // bound on the fraction of positions with the same argmax
  double max_grad_rel = 1e-4;  // bound on max over parameters of ‖g − g_ref‖ / ‖g_ref‖
  Precision precision = Precision::kFp32;  // what the model's matmuls are fed
  nlohmann::json compute;      // the compute settings in use, copied into the JSON report
};

struct ParityReport {
  int64_t positions = 0;
  double kl_mean = 0, kl_max = 0;  // D_KL(P_ref ‖ P_model) per position, nats
  double top1_agreement = 0;
  double max_abs_logit_diff = 0;
  double loss = 0;      // the model's mean CE on the labels (next tokens when the dump has none)
  std::optional<double> loss_ref;  // the dump's `loss`, else the same CE of the dump's logits
  std::string loss_ref_source;     // "dump" or "logits"
  int64_t loss_tokens = 0;
  std::optional<double> grad_max_rel_err;
  std::string grad_worst_tensor;
  bool pass = false;
  ParityOptions options;

  nlohmann::ordered_json ToJson() const;  // fields in the order of docs/design.md §5, then extras
  std::string ToText() const;
};

ParityReport RunParity(const ParityOptions& options);

}  // namespace replica

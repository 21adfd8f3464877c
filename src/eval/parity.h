// Logit and gradient parity of replica's Olmo 3 against a reference dump (docs/design.md §4, §5): what
// `replica parity` computes. The dump is one safetensors file with input_ids [B,T] (I64/I32),
// logits [B,T,V] (F32), optional labels [B,T] (I64, aligned with logits, -100 ignored), optional
// loss (F64 scalar, mean CE), optional z_loss (F64 scalar, mean lse² over the labels, no multiplier)
// and, for gradient parity, grad.<HF name> for every parameter: of the mean CE, or with
// z_loss_multiplier > 0 of OLMo-core's training objective mean(CE) + z_loss_multiplier·mean(lse²),
// computed as the trainer computes it. An optional cu_doc_lens [n] (I64/I32) makes the rows packed:
// OLMo-core's cumulative document lengths over the B·T positions (ops/document_mask.h), with which
// the model computes every document alone (Olmo3Model::ForwardBackward).
// Every statistic is computed in double. A dump that does not fit the model is an Error naming
// the tensor and the expected shape; thresholds only decide `pass`.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "ops/precision.h"

namespace replica {

struct ParityOptions {
  std::string model_dir;       // config.json + weights (single file or sharded)
  std::string reference_path;  // the dump
  bool grads = false;          // also compare every parameter gradient
  // > 0: the gradients compared are of mean(CE) + z_loss_multiplier · mean(lse²), the training
  // objective (what TrainStep differentiates); 0: of the mean CE alone.
  double z_loss_multiplier = 0;
  double max_kl = 1e-6;        // bound on the largest per-position KL(P_ref || P_model)
  double min_top1 = 1.0;       // bound on the fraction of positions with the same argmax
  // Bound on max over parameters of ‖g − g_ref‖ / max(‖g_ref‖, floor), floor = grad_floor ·
  // ‖G_ref‖ (G: the whole gradient), and on ‖G − G_ref‖ / ‖G_ref‖. The floor keeps a tensor whose
  // true gradient is zero (q/k projections at T = 1) from dividing float noise by zero.
  double max_grad_rel = 1e-4;
  double grad_floor = 1e-3;
  std::string device = "cpu";              // the registered backend that computes (ops/registry.h)
  Precision precision = Precision::kFp32;  // what the model's matmuls are fed
  nlohmann::json compute;      // the compute settings in use, copied into the JSON report
  // The dump's own RoPE table (tensors rope.cos and rope.sin, [positions >= T, head_dim / 2]) in
  // place of the model's plain-RoPE entries: compares everything but the two stacks' sin and cos.
  bool reference_rope = false;
};

struct ParityReport {
  int64_t positions = 0;
  int64_t documents = 0;  // of a dump with cu_doc_lens (its entries - 1); 0 without
  double kl_mean = 0, kl_max = 0;  // D_KL(P_ref ‖ P_model) per position, nats
  double top1_agreement = 0;
  double max_abs_logit_diff = 0;
  double loss = 0;      // the model's mean CE on the labels (next tokens when the dump has none)
  std::optional<double> loss_ref;  // the dump's `loss`, else the same CE of the dump's logits
  std::string loss_ref_source;     // "dump" or "logits"
  int64_t loss_tokens = 0;
  std::optional<double> lse_sq_mean;      // the model's mean lse² over the same labels (--reference)
  std::optional<double> lse_sq_mean_ref;  // the dump's `z_loss`, else the mean lse² of its logits
  std::string lse_sq_mean_ref_source;     // "dump" or "logits"
  std::optional<double> grad_max_rel_err;     // per tensor, with the floor
  std::optional<double> grad_global_rel_err;  // ‖G − G_ref‖ / ‖G_ref‖ over all parameters
  double grad_rel_floor = 0;                  // the floor's absolute value, grad_floor · ‖G_ref‖
  std::string grad_worst_tensor;
  // --rope-table reference: how many of the model's own table entries the dump's replaced differ.
  std::optional<int64_t> rope_entries_differing;
  bool pass = false;
  std::string input;  // --against: what the tokens were ("... random token ids ..." or the file)
  std::string hint;   // a failing check's likely cause and what to do, or empty
  ParityOptions options;

  nlohmann::ordered_json ToJson() const;  // fields in the order of docs/design.md §5, then extras
  std::string ToText() const;
};

ParityReport RunParity(const ParityOptions& options);

// Two models on the same tokens (`replica parity --model A --against B`): each a Hugging Face
// directory or a replica checkpoint, memory-mapped and run layer by layer (infer/), their logits
// compared chunk by chunk so neither model's [B, T, V] logits exist whole. B plays the
// reference: KL is D_KL(P_B ‖ P_A) per position; `loss` and `loss_ref` are A's and B's mean
// next-token CE over the same positions (loss_ref_source "against").
struct ModelParityOptions {
  std::string model_dir, against_dir;
  std::string tokens_path;     // raw uint32 token file (its first batch*seq_len ids); empty: random
  uint64_t seed = 0;           // random tokens: uniform in [0, vocab_size) from std::mt19937_64(seed)
  // seq_len 0: min(512, the smaller of the two models' max_position_embeddings).
  int64_t batch = 1, seq_len = 0;
  int64_t chunk_rows = 64;     // logits rows per chunk
  double max_kl = 1e-6, min_top1 = 1.0;
  std::string device = "cpu";              // the registered backend that computes (ops/registry.h)
  Precision precision = Precision::kFp32;  // what --model's matmuls are fed (--against: fp32)
  nlohmann::json compute;      // the compute settings in use, copied into the JSON report
  bool progress = false;       // a progress line on stderr (layers of both models, logit chunks)
};
ParityReport RunParityAgainst(const ModelParityOptions& options);

}  // namespace replica

// Backend::StepScratchBytes of the CPU backends: the buffers their ops keep between calls for one
// training step, from the size functions of the code that allocates them.
#include <algorithm>

#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/cpu_bf16_fsdp_backend.h"
#include "ops/cpu/cross_entropy.h"
#include "ops/cpu/fsdp_bf16.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/linear.h"
#include "ops/lm_head_workspace.h"

namespace replica {
namespace {

int64_t LmHeadChunk(const StepShape& s) {
  return std::min(LmHeadWorkspace::ChunkRows(s.lm_head_rows, s.vocab), s.rows);
}

}  // namespace

// fp32: the LM head's workspace, with the two [chunk, D] buffers its backward uses. bf16 adds the
// GEMM's operand scratch over every GEMM of the step (each linear's three, the LM head chunk's
// three) on the route this machine takes, inside the Bf16WeightScope the trainer opens; on the
// oneDNN route, the bf16 copy of every matmul weight (the LM head's once: its chunks share it).
StepScratch CpuFp32Backend::StepScratchBytes(const StepShape& s) const {
  StepScratch out;
  out.lm_head_workspace = LmHeadWorkspace::Bytes(s.lm_head_rows, s.vocab, s.hidden, true);
  if (matmul_precision() != Precision::kBf16) return out;
  const Bf16GemmRoute route = ActiveBf16GemmRoute();
  Bf16GemmScratch scratch;
  auto add = [&](const GemmShape& g) { scratch.Grow(GemmBf16CallScratch(route, g, true)); };
  uint64_t copies = 0;
  for (const auto& [in, out_features] : s.linears) {
    const std::array<GemmShape, 3> g = LinearGemms(s.rows, in, out_features);
    for (const GemmShape& call : g) add(call);
    copies += GemmBf16WeightCopyBytes(g[0]);
  }
  const std::array<GemmShape, 3> head = LmHeadChunkGemms(LmHeadChunk(s), s.hidden, s.vocab);
  for (const GemmShape& call : head) add(call);
  copies += GemmBf16WeightCopyBytes(head[0]);
  out.operand_scratch = scratch.bytes();
  if (route == Bf16GemmRoute::kOneDnn) out.weight_copies = copies;
  return out;
}

// bf16-fsdp: the LM head's workspace without the backward buffers (its backward computes in the
// ops' own scratch), and the ops' per-thread buffers (fsdp_bf16.cc), each the largest call's:
//   a  N·in of a linear's dx product, N·width of RoPE's backward, chunk·D of the LM head's dx;
//   b  out·in of a linear's weight gradient, V·D of the LM head's summed one;
//   c  V·D, the LM head's weight gradient of one chunk (on the oneDNN path only: ATen's loops
//      continue one sum over all chunks in b);
//   w  the widest norm gain, rounded;
//   m  the largest matmul weight, rounded (the LM head's V·D included);
//   z  N, the LM head's lse² terms.
StepScratch CpuBf16FsdpBackend::StepScratchBytes(const StepShape& s) const {
  StepScratch out;
  out.lm_head_workspace = LmHeadWorkspace::Bytes(s.lm_head_rows, s.vocab, s.hidden, false);
  const uint64_t N = static_cast<uint64_t>(s.rows), D = static_cast<uint64_t>(s.hidden),
                 V = static_cast<uint64_t>(s.vocab), c = static_cast<uint64_t>(LmHeadChunk(s));
  uint64_t a = c * D, b = V * D, m = V * D, w = 0;  // floats
  for (const auto& [in, out_features] : s.linears) {
    const uint64_t weight = static_cast<uint64_t>(in * out_features);
    a = std::max(a, N * static_cast<uint64_t>(in));
    b = std::max(b, weight);
    m = std::max(m, weight);
  }
  for (int64_t width : s.rope_widths) a = std::max(a, N * static_cast<uint64_t>(width));
  for (int64_t width : s.norm_widths) w = std::max(w, static_cast<uint64_t>(width));
  const uint64_t chunk_grad = TorchCpuPathInUse() == TorchCpuPath::kOneDnn ? V * D : 0;
  const FsdpScratch f{4 * a, 4 * b, 4 * chunk_grad, 4 * w, 4 * m, 4 * N};
  out.op_scratch = f.bytes();
  return out;
}

}  // namespace replica

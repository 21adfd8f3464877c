// Where a step's wall time goes, by kind of work (docs/bench.md).
//
// A ProfileScope charges the wall time between its construction and destruction to one category,
// exclusively: time spent in a nested scope (a GEMM inside the fused LM head, say) is charged to
// the inner category only. Scopes opened inside an OpenMP parallel region, or on any thread other
// than the one that first opened a scope, are ignored, so only the thread that drives a step is
// measured and worker threads pay nothing. Cost: two steady_clock reads per scope (~50 ns); ops are
// called a few hundred times per step, so the profiler is always on.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace replica {

enum class ProfileCategory : int {
  kGemm,         // matrix multiplications (ops/cpu/gemm.h), wherever they are called from
  kAttention,    // tiled attention forward and backward (its own small GEMMs included)
  kLmHeadLoss,   // the fused LM head's softmax / cross-entropy passes (its GEMMs are kGemm)
  kNorm,         // RMSNorm forward and backward
  kRope,         // rotary embedding
  kSwiGLU,       // SwiGLU activation
  kEmbedding,    // embedding lookup and its scatter-add backward
  kZero,         // zeroing gradient scratch
  kOptimizer,    // gradient norm, clipping, AdamW
  kReduce,       // gradient accumulation sums and collectives (reduce-scatter, all-gather)
  kData,         // loader: reading and assembling a batch
  kLeakGuard,    // the contamination guard's scan of each batch
  kEval,         // in-loop evaluation
  kCheckpoint,   // checkpoint snapshot (the write itself runs in the background)
  kCast,         // rounding matmul operands to bf16 (bf16 precision, ops/cpu/gemm_bf16.h)
  kCount
};

const char* ProfileCategoryName(ProfileCategory c);

// Seconds charged to each category since the last ProfileReset(). Both act only on the thread that
// is being profiled (the first to open a scope); elsewhere the snapshot is empty.
struct ProfileTotals {
  std::array<double, static_cast<int>(ProfileCategory::kCount)> seconds{};
  double Get(ProfileCategory c) const { return seconds[static_cast<int>(c)]; }
  double Sum() const;
};

ProfileTotals ProfileSnapshot();
void ProfileReset();

class ProfileScope {
 public:
  explicit ProfileScope(ProfileCategory c);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  bool active_;
};

// A human-readable table: each category's seconds and share of `wall_seconds` (the caller's total
// for the same period), with "unattributed" for wall time in no scope.
std::string ProfileTable(const ProfileTotals& t, double wall_seconds);

}  // namespace replica

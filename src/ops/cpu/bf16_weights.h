// bf16 copies of the weights that the bf16 GEMM (gemm_bf16.h) reads as an operand, made once per
// optimizer step instead of on every GEMM call.
//
// A Bf16WeightScope, opened by whoever drives a training step (the trainer, `replica bench`), says
// that from now until it closes the model's weights change only through the writes below. Inside
// it, Bf16WeightCopy(W, ...) converts W to bf16 on its first use and returns the same copy on
// every later use (the forward's x Wᵀ, the backward's dy W, every row chunk of the LM head), until
// one of these makes it stale:
//   NoteWeightsUpdated()          every copy (the AdamW element update calls it, so any optimizer
//                                 step anywhere in the process invalidates all copies);
//   NoteWeightsWritten(p, bytes)  the copies whose source overlaps [p, p + bytes) (a ZeRO-3 gather
//                                 into a reused unit buffer calls it);
//   the scope closing             copies are tied to the scope that made them, so a weight written
//                                 between two steps (checkpoint restore, a test) is converted anew.
// Outside a scope Bf16WeightCopy returns null and the GEMM converts the operand itself, as before.
//
// A copy is the same bits as a fresh conversion (ConvertToBf16, bf16_round.h): results do not
// depend on whether the cache hit. Scopes are per thread (the thread that runs a rank's step); the
// table of copies is shared and locked, so in-process ranks (parallel/thread_group.h) each keep
// their own weights' copies. Memory: half the bytes of the weights that go through a bf16 GEMM.
#pragma once
#include <cstddef>
#include <cstdint>

namespace replica {

class Bf16WeightScope {
 public:
  Bf16WeightScope();
  ~Bf16WeightScope();
  Bf16WeightScope(const Bf16WeightScope&) = delete;
  Bf16WeightScope& operator=(const Bf16WeightScope&) = delete;
};

// Whether a Bf16WeightScope is open on the calling thread.
bool Bf16WeightScopeOpen();

// The bf16 bits of the rows × cols block of W (leading dimension ld), packed with leading
// dimension cols; null when no scope is open on this thread. Valid until the next call that makes
// it stale (above) or until the scope closes.
const uint16_t* Bf16WeightCopy(const float* W, int64_t ld, int64_t rows, int64_t cols);

void NoteWeightsUpdated();
void NoteWeightsWritten(const void* begin, size_t bytes);

// The bytes of the copy Bf16WeightCopy keeps of a rows × cols block (it sizes the copy so).
uint64_t Bf16WeightCopyBytes(int64_t rows, int64_t cols);
// The bytes every kept copy holds now, over all threads (tests).
uint64_t Bf16WeightCopiesHeldBytes();

// Conversions Bf16WeightCopy has made in this process (tests, bench).
int64_t Bf16WeightConversions();

}  // namespace replica

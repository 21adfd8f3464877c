// bf16-input GEMM with fp32 accumulation (docs/precision.md):
//   C[M,N] = alpha · bf16(op(A)) bf16(op(B)) + beta · C,   op(X) = X or Xᵀ as in cblas_sgemm,
// bf16(x) = x rounded to the nearest bfloat16 (ties to even). Operands are given in fp32 and
// rounded here; C stays fp32.
//
// Two routes compute it, chosen by the ISA in use and the CPU (ops/cpu/isa.h):
//   emulated   the operands are rounded into fp32 scratch and multiplied by the deterministic
//              tiled Sgemm (ops/cpu/gemm.h). Products of bf16 values are exact in fp32, so this is
//              the bf16 matmul's arithmetic, at fp32 GEMM speed. Used on AVX2 (oneDNN 2.6 has no
//              bf16 matmul there) and on Intel's AVX512-BF16 (slower than fp32 GEMM there).
//   onednn     the operands are converted to bf16 and multiplied by oneDNN's matmul: on AMX
//              tiles, or on AMD's AVX512-BF16 (vdpbf16ps), where it is 1.6-2.2x the fp32 GEMM.
// On the oneDNN route, a B operand marked GemmB::kWeight is read from its bf16 copy
// (bf16_weights.h) while a Bf16WeightScope is open: converted once per optimizer step, not per
// call. The copy has the bits a fresh conversion would have, so the flag changes no result.
// Both keep replica's determinism: C is cut into tiles whose sizes depend only on (M, N, K), each
// tile is one single-threaded call over the whole K, and OpenMP hands tiles to threads, so a
// result does not depend on the thread count. The two routes sum in different orders, so they
// agree to fp32 rounding, not bit for bit; a machine always takes the same route for a given cap.
#pragma once
#include <cstdint>

#include "ops/precision.h"

namespace replica {

// What operand B is: an activation (converted on every call), or a model weight that stays
// constant while a Bf16WeightScope is open (its bf16 copy is made once).
enum class GemmB { kActivation, kWeight };

// One GEMM call's shape and operand kinds, as Gemm below takes them.
struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  GemmB b_kind = GemmB::kActivation;
};

void GemmBf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
              int64_t ldc, GemmB b_kind = GemmB::kActivation);

// Sgemm for kFp32, GemmBf16 for kBf16.
void Gemm(Precision precision, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
          float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
          float* C, int64_t ldc, GemmB b_kind = GemmB::kActivation);

// Gemm on a GemmShape.
void Gemm(Precision precision, const GemmShape& s, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

enum class Bf16GemmRoute { kEmulated, kOneDnn };
// kOneDnn when the ISA in use is amx, or avx512 on an AMD CPU with AVX512_BF16 (and oneDNN has
// the bf16 matmul); else kEmulated.
Bf16GemmRoute ActiveBf16GemmRoute();
// "onednn-amx", "onednn-avx512bf16" or "emulated (...)", for the ISA in use.
const char* Bf16GemmRouteName(Bf16GemmRoute route);
// The same, one word each for JSON: "onednn-amx", "onednn-avx512bf16", "emulated".
const char* Bf16GemmRouteKey(Bf16GemmRoute route);

// The routes one by one (tests, bench). GemmBf16OneDnn with bf16_operands = false runs oneDNN's
// f32 matmul on the rounded operands: the same tiling and the same numbers up to summation order,
// on any CPU. OneDnnBf16MatmulAvailable() says whether this CPU (and cap) has a bf16 matmul.
void GemmBf16Emulated(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc);
void GemmBf16OneDnn(bool bf16_operands, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                    float beta, float* C, int64_t ldc, GemmB b_kind = GemmB::kActivation);
// oneDNN's bf16 matmul, tiled as above, on operands already in bf16 (row-major bits, leading
// dimensions as stored): the route without its conversions (bench: the GEMM at the model's
// shapes against oneDNN on pre-converted operands).
void GemmBf16OneDnnPreconverted(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                                float alpha, const uint16_t* A, int64_t lda, const uint16_t* B,
                                int64_t ldb, float beta, float* C, int64_t ldc);
bool OneDnnBf16MatmulAvailable();

// Memory the bf16 GEMM keeps between calls, in bytes. Operand scratch lives with the calling
// thread and grows to the largest operand it has held: on the emulated route A's and B's
// bf16-rounded fp32 copies (4 bytes an element), on the oneDNN route their bf16 conversions (2
// bytes), where B is skipped when it is a weight read from its bf16 copy (bf16_weights.h) because
// a Bf16WeightScope is open. The GEMM sizes its buffers through the same element counts.
struct Bf16GemmScratch {
  uint64_t a = 0, b = 0;
  void Grow(const Bf16GemmScratch& o);  // each buffer to the larger of the two
  uint64_t bytes() const { return a + b; }
};
Bf16GemmScratch GemmBf16CallScratch(Bf16GemmRoute route, const GemmShape& s, bool weight_scope);
// The calling thread's operand scratch now (both routes' buffers).
Bf16GemmScratch GemmBf16ScratchHeld();
// The bf16 copy of the weight operand B of a kWeight call (its rows × cols block), in bytes: what
// Bf16WeightCopy keeps for it while it is used in a scope. 0 for an activation B.
uint64_t GemmBf16WeightCopyBytes(const GemmShape& s);

// Plain reference: rounds the operands to bf16, multiplies and sums in double, rounds once.
void GemmBf16Reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                       const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                       float* C, int64_t ldc);

}  // namespace replica

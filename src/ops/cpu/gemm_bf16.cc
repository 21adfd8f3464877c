#include "ops/cpu/gemm_bf16.h"

#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/profile.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/bf16_weights.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/isa.h"

namespace replica {
namespace {

// Per-thread operand scratch, grown on demand and kept (no allocation in a steady step). It grows
// to exactly the largest size asked (not geometrically), so what it holds is the largest
// operand's size (GemmBf16CallScratch).
template <typename T>
T* Scratch(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) {
    v.clear();
    v.shrink_to_fit();
    v.resize(static_cast<size_t>(n));
  }
  return v.data();
}
thread_local std::vector<float> tls_a, tls_b;
thread_local std::vector<uint16_t> tls_a16, tls_b16;

// Elements of a call's operands, whatever their transposition: op(A) is M × K, op(B) K × N.
int64_t AElems(int64_t M, int64_t K) { return M * K; }
int64_t BElems(int64_t K, int64_t N) { return K * N; }

int64_t CeilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Tile sizes of the oneDNN route: a function of (M, N) only. Tiles start at 256 × 256 and halve
// (down to 64) until there are 16 of them; each covers the whole K.
constexpr int64_t kTile = 256, kMinTile = 64, kMinTiles = 16;
void Tiles(int64_t M, int64_t N, int64_t& tm, int64_t& tn) {
  tm = std::min(kTile, M), tn = std::min(kTile, N);
  while (CeilDiv(M, tm) * CeilDiv(N, tn) < kMinTiles && (tm > kMinTile || tn > kMinTile)) {
    if (tn >= tm && tn > kMinTile) {
      tn = std::max(kMinTile, tn / 2);
    } else {
      tm = std::max(kMinTile, tm / 2);
    }
  }
}

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

using dt = dnnl::memory::data_type;

// One tile's matmul: src [m, K], weights [K, n], dst [m, n] (f32), strided as given.
struct TileKey {
  bool bf16, ta, tb;
  int64_t m, n, K, lda, ldb, ldc;
  float alpha, beta;
  bool operator<(const TileKey& o) const {
    return std::tie(bf16, ta, tb, m, n, K, lda, ldb, ldc, alpha, beta) <
           std::tie(o.bf16, o.ta, o.tb, o.m, o.n, o.K, o.lda, o.ldb, o.ldc, o.alpha, o.beta);
  }
};

struct TilePrimitive {
  dnnl::memory::desc src, weights, dst, scratchpad;
  dnnl::matmul matmul;
};

// Each thread's oneDNN scratchpad. A primitive runs on several threads at once (one tile each),
// so the scratchpad is the caller's (scratchpad_mode::user), never oneDNN's shared one: with the
// shared one, concurrent tiles that repack operands (AVX512-BF16 kernels do) overwrite each
// other's buffers.
thread_local std::vector<char> tls_scratchpad;

// Primitives are created once per tile shape, with the creating thread's OpenMP team set to one
// thread so oneDNN plans a single-threaded kernel (no split of K over threads); they run inside
// replica's own parallel loop over tiles.
const TilePrimitive& GetTilePrimitive(const TileKey& k) {
  static std::mutex mu;
  static std::map<TileKey, TilePrimitive> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  const dt in = k.bf16 ? dt::bf16 : dt::f32;
  using dims = dnnl::memory::dims;
  TilePrimitive p;
  p.src = dnnl::memory::desc(dims{k.m, k.K}, in, k.ta ? dims{1, k.lda} : dims{k.lda, 1});
  p.weights = dnnl::memory::desc(dims{k.K, k.n}, in, k.tb ? dims{1, k.ldb} : dims{k.ldb, 1});
  p.dst = dnnl::memory::desc(dims{k.m, k.n}, dt::f32, dims{k.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (k.alpha != 1.0f) attr.set_output_scales(0, {k.alpha});
  if (k.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(k.beta);
    attr.set_post_ops(ops);
  }
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.src, p.weights, p.dst), attr, Engine());
    p.scratchpad = pd.scratchpad_desc();
    p.matmul = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    omp_set_num_threads(threads);
    Fail("oneDNN {} matmul of a {}x{}x{} tile: {}", k.bf16 ? "bf16" : "f32", k.m, k.n, k.K,
         e.what());
  }
  omp_set_num_threads(threads);
  return cache.emplace(k, std::move(p)).first->second;
}

// The tiled oneDNN matmul on operands already in the element type (f32 or bf16 bits), row-major
// with leading dimensions lda, ldb as stored (before op()).
void OneDnnTiled(bool bf16, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                 const void* A, int64_t lda, const void* B, int64_t ldb, float beta, float* C,
                 int64_t ldc) {
  int64_t tm, tn;
  Tiles(M, N, tm, tn);
  const int64_t tiles_m = CeilDiv(M, tm), tiles_n = CeilDiv(N, tn);
  const size_t elem = bf16 ? 2 : 4;
  // Up to four tile shapes: interior, last row, last column, corner. Created before the loop.
  auto key = [&](int64_t m, int64_t n) {
    return TileKey{bf16, ta, tb, m, n, K, lda, ldb, ldc, alpha, beta};
  };
  const TilePrimitive* shapes[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      shapes[i][j] =
          &GetTilePrimitive(key(i ? M - (tiles_m - 1) * tm : tm, j ? N - (tiles_n - 1) * tn : tn));
  const char* a = static_cast<const char*>(A);
  const char* b = static_cast<const char*>(B);
#pragma omp parallel
  {
    dnnl::stream stream(Engine());
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles_m * tiles_n; ++t) {
      const int64_t ti = t / tiles_n, tj = t % tiles_n;
      const int64_t i0 = ti * tm, j0 = tj * tn;
      const TilePrimitive& p = *shapes[ti == tiles_m - 1][tj == tiles_n - 1];
      const char* ap = a + elem * static_cast<size_t>(ta ? i0 : i0 * lda);
      const char* bp = b + elem * static_cast<size_t>(tb ? j0 * ldb : j0);
      dnnl::memory ma(p.src, Engine(), const_cast<char*>(ap));
      dnnl::memory mb(p.weights, Engine(), const_cast<char*>(bp));
      dnnl::memory mc(p.dst, Engine(), C + i0 * ldc + j0);
      dnnl::memory ms(p.scratchpad, Engine(),
                      Scratch(tls_scratchpad, static_cast<int64_t>(p.scratchpad.get_size()) + 1));
      p.matmul.execute(stream, {{DNNL_ARG_SRC, ma},
                                {DNNL_ARG_WEIGHTS, mb},
                                {DNNL_ARG_DST, mc},
                                {DNNL_ARG_SCRATCHPAD, ms}});
      stream.wait();
    }
  }
}

}  // namespace

void GemmBf16Emulated(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const int64_t ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
  float* a = Scratch(tls_a, AElems(M, K));
  float* b = Scratch(tls_b, BElems(K, N));
  {
    ProfileScope profile_scope(ProfileCategory::kCast);
    RoundToBf16(A, lda, a, ca, ra, ca);
    RoundToBf16(B, ldb, b, cb, rb, cb);
  }
  Sgemm(ta, tb, M, N, K, alpha, a, ca, b, cb, beta, C, ldc);
}

void GemmBf16OneDnn(bool bf16_operands, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                    float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                    float beta, float* C, int64_t ldc, GemmB b_kind) {
  ProfileScope profile_scope(ProfileCategory::kGemm);
  if (M <= 0 || N <= 0) return;
  const int64_t ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
  if (K == 0) {  // oneDNN refuses empty reductions; C = beta · C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  if (bf16_operands) {
    uint16_t* a = Scratch(tls_a16, AElems(M, K));
    const uint16_t* b =
        b_kind == GemmB::kWeight ? Bf16WeightCopy(B, ldb, rb, cb) : nullptr;
    {
      ProfileScope cast_scope(ProfileCategory::kCast);
      ConvertToBf16(A, lda, a, ca, ra, ca);
      if (b == nullptr) {
        uint16_t* scratch = Scratch(tls_b16, BElems(K, N));
        ConvertToBf16(B, ldb, scratch, cb, rb, cb);
        b = scratch;
      }
    }
    OneDnnTiled(true, ta, tb, M, N, K, alpha, a, ca, b, cb, beta, C, ldc);
  } else {
    float* a = Scratch(tls_a, AElems(M, K));
    float* b = Scratch(tls_b, BElems(K, N));
    RoundToBf16(A, lda, a, ca, ra, ca);
    RoundToBf16(B, ldb, b, cb, rb, cb);
    OneDnnTiled(false, ta, tb, M, N, K, alpha, a, ca, b, cb, beta, C, ldc);
  }
}

void GemmBf16OneDnnPreconverted(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                                const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb,
                                float beta, float* C, int64_t ldc) {
  ProfileScope profile_scope(ProfileCategory::kGemm);
  if (M <= 0 || N <= 0 || K <= 0) return;
  OneDnnTiled(true, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

bool OneDnnBf16MatmulAvailable() {
  static const bool available = [] {
    try {
      GetTilePrimitive(TileKey{true, false, false, 16, 16, 32, 32, 16, 16, 1.0f, 0.0f});
      return true;
    } catch (const Error&) {
      return false;
    }
  }();
  return available;
}

// oneDNN where it is faster than the emulated route: on AMX tiles, and on AMD's AVX512-BF16
// (measured on Zen 4: 141-173 GFLOP/s on one core against 86-90 for the fp32 GEMM at the bench
// shapes). On Intel's AVX512-BF16 it measured 80 GFLOP/s against ~130 for fp32 GEMM, so Intel
// without AMX (or capped below it) stays emulated. A pure function of the CPU and the cap, so a
// machine always takes the same route for a given cap.
Bf16GemmRoute ActiveBf16GemmRoute() {
  const CpuFeatures& cpu = DetectCpu();
  const bool dot_pays = ActiveIsa() == Isa::kAvx512 && cpu.avx512_bf16 && cpu.amd;
  return (HasBf16MatrixUnits() || dot_pays) && OneDnnBf16MatmulAvailable()
             ? Bf16GemmRoute::kOneDnn
             : Bf16GemmRoute::kEmulated;
}

const char* Bf16GemmRouteKey(Bf16GemmRoute route) {
  if (route == Bf16GemmRoute::kEmulated) return "emulated";
  return ActiveIsa() == Isa::kAmx ? "onednn-amx" : "onednn-avx512bf16";
}

const char* Bf16GemmRouteName(Bf16GemmRoute route) {
  return route == Bf16GemmRoute::kEmulated ? "emulated (bf16-rounded operands, fp32 GEMM)"
                                           : Bf16GemmRouteKey(route);
}

void GemmBf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
              GemmB b_kind) {
  if (ActiveBf16GemmRoute() == Bf16GemmRoute::kOneDnn) {
    GemmBf16OneDnn(true, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, b_kind);
  } else {
    GemmBf16Emulated(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

void Gemm(Precision precision, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc, GemmB b_kind) {
  if (MatmulOperands(precision) == Precision::kBf16) {
    GemmBf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, b_kind);
  } else {
    Sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

void Gemm(Precision precision, const GemmShape& s, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  Gemm(precision, s.trans_a, s.trans_b, s.M, s.N, s.K, alpha, A, lda, B, ldb, beta, C, ldc,
       s.b_kind);
}

void Bf16GemmScratch::Grow(const Bf16GemmScratch& o) {
  a = std::max(a, o.a);
  b = std::max(b, o.b);
}

Bf16GemmScratch GemmBf16CallScratch(Bf16GemmRoute route, const GemmShape& s, bool weight_scope) {
  if (s.M <= 0 || s.N <= 0) return {};
  const auto elems = [](int64_t n) { return static_cast<uint64_t>(n); };
  if (route == Bf16GemmRoute::kEmulated)
    return {sizeof(float) * elems(AElems(s.M, s.K)), sizeof(float) * elems(BElems(s.K, s.N))};
  if (s.K == 0) return {};
  const bool b_cached = weight_scope && s.b_kind == GemmB::kWeight;
  return {sizeof(uint16_t) * elems(AElems(s.M, s.K)),
          b_cached ? 0 : sizeof(uint16_t) * elems(BElems(s.K, s.N))};
}

Bf16GemmScratch GemmBf16ScratchHeld() {
  return {sizeof(float) * tls_a.capacity() + sizeof(uint16_t) * tls_a16.capacity(),
          sizeof(float) * tls_b.capacity() + sizeof(uint16_t) * tls_b16.capacity()};
}

uint64_t GemmBf16WeightCopyBytes(const GemmShape& s) {
  if (s.b_kind != GemmB::kWeight) return 0;
  return Bf16WeightCopyBytes(s.trans_b ? s.N : s.K, s.trans_b ? s.K : s.N);
}

void GemmBf16Reference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                       const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                       float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const float a = ta ? A[k * lda + i] : A[i * lda + k];
        const float b = tb ? B[j * ldb + k] : B[k * ldb + j];
        acc += static_cast<double>(RoundToBf16(a)) * RoundToBf16(b);
      }
      float& c = C[i * ldc + j];
      c = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * c));
    }
}

}  // namespace replica

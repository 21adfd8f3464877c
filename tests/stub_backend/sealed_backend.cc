#include "stub_backend/sealed_backend.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>

#include "core/error.h"
#include "ops/registry.h"

namespace replica::stub {
namespace {

// The live mappings, and how many ops are running (memory is readable while it is above 0).
struct Regions {
  std::mutex mu;
  std::map<char*, size_t> live;  // start -> mapped bytes
  int64_t open = 0;
  size_t live_bytes = 0;
};
Regions& State() {
  static Regions r;
  return r;
}
std::atomic<int64_t> g_copies{0};

// A lock-free copy of the live mappings for the fault handler.
constexpr int kSlots = 1 << 14;
struct Slot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<size_t> bytes{0};
};
Slot g_slots[kSlots];

void Publish(char* p, size_t bytes) {
  for (Slot& s : g_slots) {
    uintptr_t zero = 0;
    if (s.begin.compare_exchange_strong(zero, reinterpret_cast<uintptr_t>(p))) {
      s.bytes.store(bytes);
      return;
    }
  }
}
void Unpublish(char* p) {
  for (Slot& s : g_slots) {
    if (s.begin.load() == reinterpret_cast<uintptr_t>(p)) {
      s.bytes.store(0);
      s.begin.store(0);
      return;
    }
  }
}

struct sigaction g_previous;

void Write(const char* s) {
  const ssize_t ignored = write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

void OnFault(int sig, siginfo_t* info, void* context) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
  for (const Slot& s : g_slots) {
    const uintptr_t b = s.begin.load();
    if (b != 0 && a >= b && a < b + s.bytes.load()) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "sealed backend: host code touched backend memory at %p (offset %zu of a "
                    "%zu-byte buffer) outside the backend's ops and copies; stack:\n",
                    info->si_addr, static_cast<size_t>(a - b), s.bytes.load());
      Write(line);
      void* frames[64];
      backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
      signal(SIGSEGV, SIG_DFL);  // the access faults again and ends the process
      return;
    }
  }
  // Not ours: hand it to whoever handled SIGSEGV before.
  sigaction(SIGSEGV, &g_previous, nullptr);
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
  }
}

void InstallHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = OnFault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous);
  });
}

void ProtectAll(Regions& r, int prot) {
  for (const auto& [p, bytes] : r.live) {
    Require(mprotect(p, bytes, prot) == 0, "sealed backend: mprotect failed: {}",
            std::strerror(errno));
  }
}

std::atomic<bool> g_strict{false};

// True when [p, p + 1) lies in a live mapping (r.mu held).
bool Owns(const Regions& r, const void* p) {
  const char* c = static_cast<const char*>(p);
  auto it = r.live.upper_bound(const_cast<char*>(c));
  if (it == r.live.begin()) return false;
  --it;
  return c < it->first + it->second;
}

// Opens every mapping for the lifetime of the scope (nested and concurrent scopes count). In
// strict mode, first requires every tensor pointer the op was given to be this backend's memory.
class Open {
 public:
  Open(const char* op, std::initializer_list<const void*> tensors) {
    Regions& r = State();
    std::lock_guard<std::mutex> lock(r.mu);
    if (g_strict.load()) {
      int i = 0;
      for (const void* p : tensors) {
        if (p != nullptr && !Owns(r, p)) {
          void* frames[64];
          backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
        }
        Require(p == nullptr || Owns(r, p),
                "sealed backend: {} was given host memory at {} (its pointer argument {}), not "
                "memory from Allocate",
                op, p, i);
        ++i;
      }
    }
    if (r.open++ == 0) ProtectAll(r, PROT_READ | PROT_WRITE);
  }
  ~Open() {
    Regions& r = State();
    std::lock_guard<std::mutex> lock(r.mu);
    if (--r.open == 0) ProtectAll(r, PROT_NONE);
  }
  Open(const Open&) = delete;
  Open& operator=(const Open&) = delete;
};

void Release(void* data, size_t, void*) {
  Regions& r = State();
  std::lock_guard<std::mutex> lock(r.mu);
  char* p = static_cast<char*>(data);
  const auto it = r.live.find(p);
  if (it == r.live.end()) return;
  Unpublish(p);
  munmap(p, it->second);
  r.live_bytes -= it->second;
  r.live.erase(it);
}

const Backend& Cpu() { return SelectBackend("cpu", Precision::kFp32); }

}  // namespace

SealedBackend& Sealed() {
  static SealedBackend backend;
  return backend;
}

void SealedBackend::SetStrict(bool strict) { g_strict.store(strict); }

size_t SealedBackend::LiveBytes() {
  Regions& r = State();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.live_bytes;
}
int64_t SealedBackend::Copies() { return g_copies.load(); }

Buffer SealedBackend::Allocate(DType dtype, size_t elements) const {
  InstallHandler();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = std::max<size_t>(1, elements * DTypeSize(dtype));
  const size_t mapped = (bytes + page - 1) / page * page;
  Regions& r = State();
  std::lock_guard<std::mutex> lock(r.mu);
  void* p = mmap(nullptr, mapped, r.open > 0 ? PROT_READ | PROT_WRITE : PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  Require(p != MAP_FAILED, "sealed backend: cannot map {} bytes: {}", mapped,
          std::strerror(errno));
  r.live[static_cast<char*>(p)] = mapped;
  r.live_bytes += mapped;
  Publish(static_cast<char*>(p), mapped);
  return Buffer::Adopt(dtype, elements, Location::kDevice, p, Release, nullptr);
}

void SealedBackend::CopyFromHost(void* dst, const void* src, size_t bytes) const {
  Open open("CopyFromHost", {dst});
  g_copies.fetch_add(1);
  if (bytes) std::memcpy(dst, src, bytes);
}
void SealedBackend::CopyToHost(void* dst, const void* src, size_t bytes) const {
  Open open("CopyToHost", {src});
  g_copies.fetch_add(1);
  if (bytes) std::memcpy(dst, src, bytes);
}
StepScratch SealedBackend::StepScratchBytes(const StepShape& s) const {
  return Cpu().StepScratchBytes(s);
}
const Device& SealedBackend::device() const { return Cpu().device(); }

std::unique_ptr<Backend::StepBracket> SealedBackend::BeginStep() const {
  return Cpu().BeginStep();
}

void SealedBackend::NoteWeightsWritten(const void* begin, size_t bytes) const {
  Cpu().NoteWeightsWritten(begin, bytes);
}
void SealedBackend::FillRopeTable(const RopeParams& params, int64_t max_positions,
                                  int64_t head_dim, float* cos, float* sin) const {
  Cpu().FillRopeTable(params, max_positions, head_dim, cos, sin);  // host arrays
}

void SealedBackend::LinearForward(const float* x, const float* W, int64_t N, int64_t in,
                                  int64_t out, float* y) const {
  Open open("LinearForward", {x, W, y});
  Cpu().LinearForward(x, W, N, in, out, y);
}
void SealedBackend::LinearBackward(const float* x, const float* W, const float* dy, int64_t N,
                                   int64_t in, int64_t out, float* dx, float* dW) const {
  Open open("LinearBackward", {x, W, dy, dx, dW});
  Cpu().LinearBackward(x, W, dy, N, in, out, dx, dW);
}
void SealedBackend::RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n,
                                   double eps, float* y, float* rstd) const {
  Open open("RMSNormForward", {x, w, y, rstd});
  Cpu().RMSNormForward(x, w, rows, n, eps, y, rstd);
}
void SealedBackend::RMSNormAddForward(const float* x, const float* w, const float* residual,
                                      int64_t rows, int64_t n, double eps, float* y,
                                      float* rstd) const {
  Open open("RMSNormAddForward", {x, w, residual, y, rstd});
  Cpu().RMSNormAddForward(x, w, residual, rows, n, eps, y, rstd);
}
void SealedBackend::RMSNormBackward(const float* x, const float* w, const float* rstd,
                                    const float* dy, int64_t rows, int64_t n, float* dx,
                                    float* dw) const {
  Open open("RMSNormBackward", {x, w, rstd, dy, dx, dw});
  Cpu().RMSNormBackward(x, w, rstd, dy, rows, n, dx, dw);
}
void SealedBackend::RopeForward(const RopeTable& t, const float* x, int64_t B, int64_t T,
                                int64_t heads, const int32_t* positions, float* y) const {
  Open open("RopeForward", {x, y});
  Cpu().RopeForward(t, x, B, T, heads, positions, y);
}
void SealedBackend::RopeBackward(const RopeTable& t, const float* dy, int64_t B, int64_t T,
                                 int64_t heads, const int32_t* positions, float* dx) const {
  Open open("RopeBackward", {dy, dx});
  Cpu().RopeBackward(t, dy, B, T, heads, positions, dx);
}
void SealedBackend::AttentionForward(const AttentionShape& s, const float* q, const float* k,
                                     const float* v, float* out, float* lse) const {
  Open open("AttentionForward", {q, k, v, out, lse});
  Cpu().AttentionForward(s, q, k, v, out, lse);
}
void SealedBackend::AttentionBackward(const AttentionShape& s, const float* q, const float* k,
                                      const float* v, const float* out, const float* lse,
                                      const float* dout, float* dq, float* dk,
                                      float* dv) const {
  Open open("AttentionBackward", {q, k, v, out, lse, dout, dq, dk, dv});
  Cpu().AttentionBackward(s, q, k, v, out, lse, dout, dq, dk, dv);
}
void SealedBackend::SwiGLUForward(const float* g, const float* u, int64_t n, float* s) const {
  Open open("SwiGLUForward", {g, u, s});
  Cpu().SwiGLUForward(g, u, n, s);
}
void SealedBackend::SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n,
                                   float* dg, float* du) const {
  Open open("SwiGLUBackward", {g, u, ds, dg, du});
  Cpu().SwiGLUBackward(g, u, ds, n, dg, du);
}
void SealedBackend::EmbeddingForward(const float* table, const int32_t* tokens, int64_t N,
                                     int64_t D, float* out) const {
  Open open("EmbeddingForward", {table, out});
  Cpu().EmbeddingForward(table, tokens, N, D, out);
}
void SealedBackend::EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N,
                                      int64_t V, int64_t D, float* dtable) const {
  Open open("EmbeddingBackward", {dout, dtable});
  Cpu().EmbeddingBackward(tokens, dout, N, V, D, dtable);
}
CrossEntropySums SealedBackend::LmHeadLossForward(const float* x, const float* W,
                                                  const int32_t* labels, int64_t N, int64_t D,
                                                  int64_t V, LmHeadWorkspace& ws) const {
  Open open("LmHeadLossForward", {x, W});
  return Cpu().LmHeadLossForward(x, W, labels, N, D, V, ws);
}
CrossEntropySums SealedBackend::LmHeadLossForwardBackward(
    const float* x, const float* W, const int32_t* labels, int64_t N, int64_t D, int64_t V,
    double grad_scale, double z_mul, LmHeadWorkspace& ws, float* dx, float* dW) const {
  Open open("LmHeadLossForwardBackward", {x, W, dx, dW});
  return Cpu().LmHeadLossForwardBackward(x, W, labels, N, D, V, grad_scale, z_mul, ws, dx, dW);
}
void SealedBackend::LmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                                 float* logits) const {
  Open open("LmHeadLogits", {x, W, logits});
  Cpu().LmHeadLogits(x, W, N, D, V, logits);
}
void SealedBackend::EmbeddingForwardStored(const StoredMatrix& table, const int32_t* tokens,
                                           int64_t N, float* out) const {
  Open open("EmbeddingForwardStored", {out});
  Cpu().EmbeddingForwardStored(table, tokens, N, out);
}
void SealedBackend::MatVec(const StoredMatrix& W, const float* x, float* y) const {
  Open open("MatVec", {x, y});
  Cpu().MatVec(W, x, y);
}
void SealedBackend::AttentionDecode(const DecodeAttentionShape& s, const float* q,
                                    const float* k_cache, const float* v_cache, float* out,
                                    float* scores) const {
  Open open("AttentionDecode", {q, k_cache, v_cache, out, scores});
  Cpu().AttentionDecode(s, q, k_cache, v_cache, out, scores);
}
void SealedBackend::Zero(float* x, int64_t n) const {
  Open open("Zero", {x});
  Cpu().Zero(x, n);
}
void SealedBackend::Copy(float* dst, const float* src, int64_t n) const {
  Open open("Copy", {dst, src});
  Cpu().Copy(dst, src, n);
}
void SealedBackend::AddInto(float* acc, const float* x, int64_t n) const {
  Open open("AddInto", {acc, x});
  Cpu().AddInto(acc, x, n);
}
void SealedBackend::MoveAndZero(float* dst, float* src, int64_t n) const {
  Open open("MoveAndZero", {dst, src});
  Cpu().MoveAndZero(dst, src, n);
}
void SealedBackend::Scale(float* x, int64_t n, double factor) const {
  Open open("Scale", {x});
  Cpu().Scale(x, n, factor);
}
void SealedBackend::SumSquaresPartials(const float* x, int64_t n, int64_t block,
                                       double* partials) const {
  Open open("SumSquaresPartials", {x});
  Cpu().SumSquaresPartials(x, n, block, partials);
}
void SealedBackend::AdamWUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                                const AdamWCoefficients& c) const {
  Open open("AdamWUpdate", {p, g, m, v});
  Cpu().AdamWUpdate(p, g, m, v, n, c);
}

}  // namespace replica::stub

#include "core/profile.h"

#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

namespace replica {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kCount = static_cast<int>(ProfileCategory::kCount);
constexpr int kMaxDepth = 16;

struct State {
  ProfileTotals totals;
  ProfileCategory stack[kMaxDepth];
  int depth = 0;
  Clock::time_point mark;
};

State g_state;
std::atomic<std::thread::id> g_owner{};

bool OnOwnerThread() {
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id expected{};
  if (g_owner.compare_exchange_strong(expected, me)) return true;
  return expected == me;
}

void Charge(Clock::time_point now) {
  if (g_state.depth > 0) {
    g_state.totals.seconds[static_cast<int>(g_state.stack[g_state.depth - 1])] +=
        std::chrono::duration<double>(now - g_state.mark).count();
  }
  g_state.mark = now;
}

}  // namespace

const char* ProfileCategoryName(ProfileCategory c) {
  static const char* const kNames[kCount] = {
      "gemm", "attention", "lm_head_loss", "norm", "rope", "swiglu", "embedding",
      "zero", "optimizer", "reduce", "data", "leak_guard", "eval", "checkpoint", "cast"};
  const int i = static_cast<int>(c);
  return i >= 0 && i < kCount ? kNames[i] : "?";
}

double ProfileTotals::Sum() const {
  double s = 0;
  for (double x : seconds) s += x;
  return s;
}

// Only the owner thread reads or writes the totals; other threads (ranks run as threads in tests)
// see an empty profile and cannot reset it.
bool IsOwnerThread() { return g_owner.load() == std::this_thread::get_id(); }

ProfileTotals ProfileSnapshot() { return IsOwnerThread() ? g_state.totals : ProfileTotals{}; }

void ProfileReset() {
  if (IsOwnerThread()) g_state.totals = ProfileTotals{};
}

ProfileScope::ProfileScope(ProfileCategory c)
    : active_(!omp_in_parallel() && OnOwnerThread() && g_state.depth < kMaxDepth) {
  if (!active_) return;
  Charge(Clock::now());
  g_state.stack[g_state.depth++] = c;
}

ProfileScope::~ProfileScope() {
  if (!active_) return;
  Charge(Clock::now());
  --g_state.depth;
}

std::string ProfileTable(const ProfileTotals& t, double wall_seconds) {
  std::string out = fmt::format("  {:<14} {:>10} {:>7}\n", "kind", "seconds", "share");
  auto row = [&](const char* name, double s) {
    const double share = wall_seconds > 0 ? 100.0 * s / wall_seconds : 0.0;
    out += fmt::format("  {:<14} {:>10.3f} {:>6.1f}%\n", name, s, share);
  };
  for (int i = 0; i < kCount; ++i) {
    if (t.seconds[i] > 0) row(ProfileCategoryName(static_cast<ProfileCategory>(i)), t.seconds[i]);
  }
  row("unattributed", wall_seconds - t.Sum());
  const double inside = t.Get(ProfileCategory::kGemm) + t.Get(ProfileCategory::kAttention);
  out += fmt::format("  outside GEMM + attention: {:.1f}% of {:.3f} s\n",
                     wall_seconds > 0 ? 100.0 * (wall_seconds - inside) / wall_seconds : 0.0,
                     wall_seconds);
  return out;
}

}  // namespace replica

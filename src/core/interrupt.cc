#include "core/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace replica {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free store");

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};

void WriteAll(const char* s) {
  size_t left = std::strlen(s);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, s, left);
    if (n <= 0) return;
    s += n;
    left -= static_cast<size_t>(n);
  }
}

extern "C" void OnInterrupt(int sig) {
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) return;
  // A second signal: stop now. Only async-signal-safe calls from here.
  WriteAll("replica: ");
  WriteAll(SignalName(sig));
  WriteAll(" while stopping: exiting now without a new checkpoint (the previous one stays valid)\n");
  ::_exit(128 + sig);
}

}  // namespace

void InstallInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : kSignals) ::sigaction(s, &sa, nullptr);
}

int InterruptSignal() { return g_signal.load(std::memory_order_relaxed); }

const char* SignalName(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
  }
}

void ResetInterruptForTesting() { g_signal.store(0); }
void RaiseInterruptForTesting(int signal) { g_signal.store(signal); }

}  // namespace replica

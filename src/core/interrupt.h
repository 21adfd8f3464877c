// Graceful interruption of a long job (`replica train`, docs/training.md "Interruption").
//
// InstallInterruptHandlers() catches SIGINT, SIGTERM, SIGHUP and SIGUSR1 (SLURM's pre-emption
// warning). The first of them only records its number (an async-signal-safe store); the job looks
// at InterruptSignal() at its next safe point (the trainer: each step boundary), writes what it
// must and exits with 128 + that number. A second signal while the first is pending ends the
// process at once with 128 + its number, writing one line to stderr with write(2); nothing the
// process has committed (an atomic checkpoint, a renamed file) is touched by that.
#pragma once

namespace replica {

// Idempotent; handlers use SA_RESTART so interrupted system calls resume.
void InstallInterruptHandlers();
// The number of the first signal caught, 0 when none.
int InterruptSignal();
// "SIGINT", "SIGTERM", ... ("signal N" for another).
const char* SignalName(int signal);
// For tests: forget a caught signal.
void ResetInterruptForTesting();
// For tests and tools: behave as if `signal` had been caught once.
void RaiseInterruptForTesting(int signal);

}  // namespace replica

// `replica launch`: runs a training command under mpirun with a schedule of rank counts and
// restarts it when the job fails (elastic resume).
//
// Attempt i (0-based) runs `mpirun -np ranks[min(i, n-1)] ... <this replica binary> <command>`.
// The training command resumes by itself from the newest complete checkpoint in its run directory,
// and checkpoints and the data-loader state do not depend on the world size, so a restart with
// fewer ranks continues the same trajectory at the same global batch.
//
// Promises:
//  - exit 0 when an attempt succeeds; a job that exits 2 (the ranks refused their input: bad
//    config, a world size that does not divide the batch) is not retried and launch exits 2; any
//    other failure (a rank killed, a crash) is retried up to max_retries times, then launch exits 1;
//  - every decision is logged to stderr and appended to RUN/launch.log (RUN = the command's
//    --run-dir) with a UTC timestamp: the mpirun command line, each attempt's exit status, the
//    newest complete checkpoint it will resume from, the rank count of the next attempt;
//  - fault injection (REPLICA_FAULT, REPLICA_FAULT_RANK) reaches the first attempt only, so a
//    test's injected crash is not repeated by the restart;
//  - SIGINT, SIGTERM, SIGHUP or SIGUSR1 sent to launch reach the job through mpirun's process group
//    (mpirun runs in a group of its own): the first as SIGUSR1, which mpirun forwards to every rank
//    and each rank answers by checkpointing its current step (core/interrupt.h); a second one as
//    SIGTERM, which stops the ranks at once. Launch waits for mpirun, logs the signal and the
//    newest complete checkpoint, starts no further attempt and exits 128 + the first signal;
//  - a missing mpirun, a rank count below 1, or a command without --run-dir is an Error (exit 2)
//    before anything runs. Which rank counts a run accepts depends on its config (parallel.sharding:
//    zero3 takes any count that divides the micro-batches, zero1 with the tree a power of two); the
//    ranks check it at start and refuse with exit 2, which launch does not retry.
#pragma once
#include <string>
#include <vector>

namespace replica::parallel {

struct LaunchOptions {
  std::vector<int> ranks;                 // schedule, e.g. {4, 2, 1}
  int max_retries = 3;                    // restarts after the first attempt
  std::string mpirun;                     // "" = "mpirun" found on PATH
  std::vector<std::string> mpirun_args;   // extra arguments placed before the program
  std::vector<std::string> command;       // replica arguments: {"train", CONFIG, "--run-dir", D, ...}
  std::string replica_binary;             // "" = this process's executable
};

// "4,2,1" -> {4, 2, 1}; Error naming the flag unless each is an integer in [1, 2^20].
std::vector<int> ParseRankSchedule(const std::string& text);
// The executable to run: `explicit_path` (must be executable) or "mpirun" on PATH; Error otherwise.
std::string FindMpirun(const std::string& explicit_path);
// The value of --run-dir DIR / --run-dir=DIR in `args`; Error when absent.
std::string RunDirFromArgs(const std::vector<std::string>& args);
// The full argv of one attempt.
std::vector<std::string> MpirunArgv(const std::string& mpirun, int ranks,
                                    const std::vector<std::string>& extra,
                                    const std::string& replica_binary,
                                    const std::vector<std::string>& command);

// Runs the schedule (see the promises above) and returns launch's exit code.
int Launch(const LaunchOptions& options);

}  // namespace replica::parallel

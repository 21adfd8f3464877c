// replica launch --ranks 4,2,1 [--max-retries N] [--mpirun PATH] [--mpirun-arg ARG ...]
//                -- train CONFIG.yaml --run-dir DIR [...]
// Runs a training command under mpirun and restarts it from the newest complete checkpoint,
// with the next rank count of the schedule, when the job fails (parallel/launch.h).
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "parallel/launch.h"

namespace {

struct LaunchArgs {
  std::string ranks;
  int max_retries = 3;
  std::string mpirun;
  std::vector<std::string> mpirun_args;
  std::vector<std::string> command;
};

replica::cli::CommandRegistration reg(
    "launch",
    "run `train` under mpirun with a rank schedule; restart from the newest checkpoint with "
    "fewer ranks when a rank dies",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto args = std::make_shared<LaunchArgs>();
      app.add_option("--ranks", args->ranks,
                     "rank counts per attempt, e.g. 4,2,1 or 6,3 with zero3 (the last one repeats)")
          ->required();
      app.add_option("--max-retries", args->max_retries,
                     "restarts after the first attempt (default 3)");
      app.add_option("--mpirun", args->mpirun, "mpirun executable (default: mpirun on PATH)");
      app.add_option("--mpirun-arg", args->mpirun_args,
                     "extra argument for mpirun, before the program (repeatable), e.g. "
                     "--mpirun-arg=--mca --mpirun-arg=btl --mpirun-arg=self,vader")
          ->allow_extra_args(false);
      app.add_option("command", args->command,
                     "after --: the replica command to run, e.g. train CONFIG --run-dir DIR")
          ->required();
      app.footer("Exit: 0 when an attempt succeeds, 2 on bad input (not retried), 1 when every "
                 "attempt failed. Log: stderr and RUN/launch.log.");
      return [args] {
        replica::parallel::LaunchOptions o;
        o.ranks = replica::parallel::ParseRankSchedule(args->ranks);
        o.max_retries = args->max_retries;
        o.mpirun = args->mpirun;
        o.mpirun_args = args->mpirun_args;
        o.command = args->command;
        return replica::parallel::Launch(o);
      };
    });

}  // namespace

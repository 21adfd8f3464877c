#include "parallel/launch.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "parallel/shard_plan.h"
#include "checkpoint/reader.h"

namespace replica::parallel {
namespace {

bool IsExecutable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string SelfExecutable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  Require(!ec, "launch: cannot find this program's path (/proc/self/exe): {}", ec.message());
  return p.string();
}

std::string Quote(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\"'$\\*?;&|<>()") == std::string::npos;
    s += plain ? a : "'" + a + "'";
  }
  return s;
}

class LaunchLog {
 public:
  explicit LaunchLog(const std::string& run_dir) {
    std::error_code ec;
    std::filesystem::create_directories(run_dir, ec);
    Require(!ec, "launch: cannot create run directory '{}': {}", run_dir, ec.message());
    path_ = (std::filesystem::path(run_dir) / "launch.log").string();
    out_.open(path_, std::ios::app);
    Require(out_.good(), "launch: cannot open '{}' for appending", path_);
  }
  template <typename... Args>
  void operator()(fmt::format_string<Args...> format, Args&&... args) {
    const std::string line = fmt::format(format, std::forward<Args>(args)...);
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::fprintf(stderr, "[launch] %s\n", line.c_str());
    out_ << stamp << ' ' << line << '\n';
    out_.flush();
  }

 private:
  std::string path_;
  std::ofstream out_;
};

// Signals launch passes on to the job. mpirun runs in a process group of its own (so a terminal's
// Ctrl-C reaches launch alone) and its ranks each in theirs, so the job is reached through mpirun:
// Open MPI 4 forwards SIGUSR1 to every rank at once, while on SIGTERM or SIGINT it sends the ranks
// SIGTERM and, a second later (odls_base_sigkill_timeout), SIGKILL, too soon for a checkpoint. So
// the first signal goes on as SIGUSR1 (each rank finishes its step, checkpoints it and exits,
// core/interrupt.h) and a second one as SIGTERM (the ranks stop at once).
std::atomic<int> g_signal{0};        // the first signal launch caught
std::atomic<int> g_signals_seen{0};  // how many
std::atomic<pid_t> g_job_group{0};   // mpirun's process group while an attempt runs

extern "C" void ForwardToJob(int sig) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  const int seen = g_signals_seen.fetch_add(1) + 1;
  const pid_t group = g_job_group.load();
  if (group > 0) ::kill(-group, seen == 1 ? SIGUSR1 : SIGTERM);
}

void InstallForwarding() {
  struct sigaction sa {};
  sa.sa_handler = ForwardToJob;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) ::sigaction(s, &sa, nullptr);
}

const char* Name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

// Runs argv in a process group of its own, waits; returns the exit code, or 128 + signal for a
// killed child.
int RunChild(const std::vector<std::string>& argv, bool keep_fault_env) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  Require(pid >= 0, "launch: fork failed: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) ::signal(s, SIG_DFL);
    if (!keep_fault_env) {
      ::unsetenv("REPLICA_FAULT");
      ::unsetenv("REPLICA_FAULT_RANK");
    }
    ::execv(args[0], args.data());
    std::fprintf(stderr, "replica: error: launch: cannot run '%s': %s\n", args[0],
                 std::strerror(errno));
    std::_Exit(127);
  }
  ::setpgid(pid, pid);  // also here, so the group exists before the handler may use it
  g_job_group.store(pid);
  // A signal that came while the job was being started.
  if (g_signals_seen.load() > 0) ::kill(-pid, g_signals_seen.load() == 1 ? SIGUSR1 : SIGTERM);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    Require(errno == EINTR, "launch: waitpid failed: {}", std::strerror(errno));
  }
  g_job_group.store(0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::vector<int> ParseRankSchedule(const std::string& text) {
  std::vector<int> ranks;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    Require(!item.empty() && *end == '\0' && v >= 1 && v <= (1 << 20),
            "--ranks: expected a comma-separated list of rank counts like 4,2,1, got '{}'", text);
    ranks.push_back(static_cast<int>(v));
  }
  Require(!ranks.empty(), "--ranks: expected at least one rank count, got '{}'", text);
  return ranks;
}

std::string FindMpirun(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    Require(IsExecutable(explicit_path), "--mpirun: '{}' is not an executable file",
            explicit_path);
    return explicit_path;
  }
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/mpirun";
    if (IsExecutable(candidate)) return candidate;
  }
  Fail("launch: mpirun not found on PATH; install OpenMPI (Debian: apt-get install openmpi-bin, "
       "which scripts/setup does) or pass --mpirun PATH");
}

std::string RunDirFromArgs(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--run-dir" && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--run-dir=", 0) == 0) return args[i].substr(10);
  }
  Fail("launch: the command after -- needs --run-dir DIR (where checkpoints are resumed from and "
       "launch.log is written)");
}

std::vector<std::string> MpirunArgv(const std::string& mpirun, int ranks,
                                    const std::vector<std::string>& extra,
                                    const std::string& replica_binary,
                                    const std::vector<std::string>& command) {
  // --oversubscribe: more ranks than cores is how a 2-core machine runs 4 ranks. --bind-to none:
  // each rank runs OpenMP threads, which core binding would pile onto one core.
  std::vector<std::string> argv = {mpirun, "-np", std::to_string(ranks), "--oversubscribe",
                                   "--bind-to", "none"};
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");  // containers often run as root
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(replica_binary);
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

int Launch(const LaunchOptions& o) {
  Require(!o.ranks.empty(), "launch: --ranks is required (e.g. --ranks 4,2,1)");
  for (int r : o.ranks) Require(r >= 1, "--ranks: rank count {} must be >= 1", r);
  Require(o.max_retries >= 0, "--max-retries: expected >= 0, got {}", o.max_retries);
  Require(!o.command.empty() && o.command[0] == "train",
          "launch: expected a training command after --, e.g. `replica launch --ranks 4,2,1 -- "
          "train CONFIG.yaml --run-dir DIR`");
  const std::string run_dir = RunDirFromArgs(o.command);
  const std::string mpirun = FindMpirun(o.mpirun);
  const std::string binary = o.replica_binary.empty() ? SelfExecutable() : o.replica_binary;
  LaunchLog log(run_dir);
  InstallForwarding();

  for (int attempt = 0; attempt <= o.max_retries; ++attempt) {
    if (const int sig = g_signal.load(); sig != 0) {
      log("interrupted by {} before attempt {}: not starting it", Name(sig), attempt + 1);
      return 128 + sig;
    }
    const int ranks = o.ranks[std::min<size_t>(static_cast<size_t>(attempt), o.ranks.size() - 1)];
    const auto found = FindLatestValid(run_dir);
    log("attempt {} of {}: {} rank(s), {}", attempt + 1, o.max_retries + 1, ranks,
        found ? fmt::format("resuming from {} (step {})", found->dir, found->step)
              : std::string("no complete checkpoint: starting from step 0"));
    const auto argv = MpirunArgv(mpirun, ranks, o.mpirun_args, binary, o.command);
    log("run: {}", Quote(argv));
    const int rc = RunChild(argv, /*keep_fault_env=*/attempt == 0);
    if (const int sig = g_signal.load(); sig != 0) {
      const auto kept = FindLatestValid(run_dir);
      log("interrupted by {}{}: forwarded to mpirun's process group as SIGUSR1{}; the job exited "
          "with status {}; {}; not retrying",
          Name(sig), g_signals_seen.load() > 1 ? " (twice)" : "",
          g_signals_seen.load() > 1 ? ", then SIGTERM" : "", rc,
          kept ? fmt::format("newest complete checkpoint {} (step {}): rerun to resume",
                             kept->dir, kept->step)
               : std::string("no complete checkpoint"));
      return 128 + sig;
    }
    if (rc == 0) {
      log("attempt {} with {} rank(s) succeeded", attempt + 1, ranks);
      return 0;
    }
    if (rc == 2) {
      log("attempt {} with {} rank(s) exited 2: the ranks refused their input (see the error "
          "above); not retrying",
          attempt + 1, ranks);
      return 2;
    }
    log("attempt {} with {} rank(s) failed with exit status {}{}", attempt + 1, ranks, rc,
        rc > 128 ? fmt::format(" (a process was killed by signal {})", rc - 128) : "");
  }
  log("giving up after {} attempt(s)", o.max_retries + 1);
  return 1;
}

}  // namespace replica::parallel

#include "core/fault.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/error.h"

namespace replica::fault {
namespace {

FaultSpec g_spec;  // written by Configure() before worker threads exist, then only read

int64_t ParseStep(std::string_view s, const std::string& item, const std::string& source) {
  Require(!s.empty(), "{}: item '{}': expected a step number after ':'", source, item);
  int64_t v = 0;
  for (char c : s) {
    Require(c >= '0' && c <= '9', "{}: item '{}': step '{}' is not a non-negative integer",
            source, item, s);
    Require(v <= (INT64_MAX - 9) / 10, "{}: item '{}': step is too large", source, item);
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

FaultSpec ParseFaultSpec(const std::string& text, const std::string& source) {
  FaultSpec spec;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) {
      if (comma == text.size()) break;
      continue;
    }
    size_t c1 = item.find(':');
    Require(c1 != std::string::npos,
            "{}: item '{}': expected step:N, checkpoint:N or checkpoint:N:before-done", source,
            item);
    std::string kind = item.substr(0, c1);
    std::string rest = item.substr(c1 + 1);
    if (kind == "step") {
      spec.kill_at_step = ParseStep(rest, item, source);
    } else if (kind == "checkpoint") {
      size_t c2 = rest.find(':');
      std::string phase = c2 == std::string::npos ? "" : rest.substr(c2 + 1);
      spec.kill_in_checkpoint = ParseStep(rest.substr(0, c2), item, source);
      if (phase.empty() || phase == "files") {
        spec.checkpoint_phase = CheckpointPhase::kFiles;
      } else if (phase == "before-done" || phase == "before_done") {
        spec.checkpoint_phase = CheckpointPhase::kBeforeDone;
      } else {
        Fail("{}: item '{}': unknown checkpoint phase '{}' (expected 'files' or 'before-done')",
             source, item, phase);
      }
    } else {
      Fail("{}: item '{}': unknown fault kind '{}' (expected 'step' or 'checkpoint')", source,
           item, kind);
    }
  }
  return spec;
}

void Configure(const FaultSpec& spec) {
  FaultSpec merged = spec;
  if (const char* env = std::getenv("REPLICA_FAULT"); env && *env) {
    FaultSpec e = ParseFaultSpec(env);
    if (e.kill_at_step) merged.kill_at_step = e.kill_at_step;
    if (e.kill_in_checkpoint) {
      merged.kill_in_checkpoint = e.kill_in_checkpoint;
      merged.checkpoint_phase = e.checkpoint_phase;
    }
  }
  g_spec = merged;
}

FaultSpec Current() { return g_spec; }

void MaybeKill(FaultPoint point, int64_t step) {
  const char* what = nullptr;
  switch (point) {
    case FaultPoint::kStep:
      if (g_spec.kill_at_step && *g_spec.kill_at_step == step) what = "after step";
      break;
    case FaultPoint::kCheckpointFiles:
      if (g_spec.kill_in_checkpoint && *g_spec.kill_in_checkpoint == step &&
          g_spec.checkpoint_phase == CheckpointPhase::kFiles)
        what = "while writing the files of checkpoint";
      break;
    case FaultPoint::kCheckpointBeforeDone:
      if (g_spec.kill_in_checkpoint && *g_spec.kill_in_checkpoint == step &&
          g_spec.checkpoint_phase == CheckpointPhase::kBeforeDone)
        what = "before writing DONE of checkpoint";
      break;
  }
  if (!what) return;
  // Unbuffered write: stdio buffers are deliberately not flushed (no cleanup at all).
  char line[160];
  int n = std::snprintf(line, sizeof line, "[fault] injected SIGKILL %s %lld\n", what,
                        static_cast<long long>(step));
  if (n > 0) {
    ssize_t ignored = ::write(2, line, static_cast<size_t>(n));
    (void)ignored;
  }
  ::raise(SIGKILL);
  ::_exit(137);  // unreachable unless SIGKILL were somehow not delivered
}

}  // namespace replica::fault

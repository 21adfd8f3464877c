#!/usr/bin/env bash
# Bit-exact resume of `replica train` : a tiny Olmo 3 on a synthetic token
# file, 40 steps straight vs (a) 20 steps + resume, (b) SIGKILL at a random step + restart,
# (c) SIGKILL in the middle of writing a checkpoint (both phases) + restart, (d) one thread instead
# of two: `replica compare` must report every deterministic metric identical at every step.
# Also: a resume with a different training math is refused naming the key; a finished run is a
# no-op.   usage: train_resume.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init

arith_tokens "$tmp/tokens.npy" 0 300
{ tiny_model_256 4; cat <<'YAML'
data:
  paths: [tokens.npy]
  seq_len: 32
  seed: 3
train:
  max_steps: 40
  global_batch_instances: 8
  micro_batch_instances: 2
  threads: 2
  log_interval: 10
optim:
  lr: 3.0e-3
  schedule: {type: cosine, warmup: 5}
checkpoint:
  interval: 10
  keep: 2
YAML
} > "$tmp/tiny.yaml"

train() {  # train <run-dir> [--set ...]: runs replica train, output in <run-dir>.log
  local dir=$1; shift
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" "$@" >> "$dir.log" 2>&1
}
expect_in_log() {  # expect_in_log <what> <log> <text>
  grep -q -- "$3" "$2" || { echo "FAIL: $1: '$3' not in $2:"; cat "$2"; fail=1; }
}

# Reference: 40 steps straight.
train "$tmp/A" || { echo "FAIL: straight run exit $?"; cat "$tmp/A.log"; exit 1; }
[ "$(wc -l < "$tmp/A/metrics.jsonl")" -eq 40 ] || { echo "FAIL: A has not 40 metrics lines"; fail=1; }
# The end-of-run step profile (docs/bench.md) names the GEMM share and the rest.
grep -q "time by kind inside training steps" "$tmp/A.log" && grep -q "^  gemm " "$tmp/A.log" \
  && grep -q "outside GEMM + attention" "$tmp/A.log" || { echo "FAIL: no step profile in A.log"; fail=1; }
python3 -c "
import json,sys
L=[json.loads(l) for l in open('$tmp/A/metrics.jsonl')]
sys.exit(0 if L[-1]['loss'] < L[0]['loss'] - 0.5 else 1)" || { echo "FAIL: loss did not fall"; fail=1; }

# (a) 20 steps, then resume to 40 (t_max pinned to the full run's 40 so the schedule is the same).
train "$tmp/B" --set train.max_steps=20 --set optim.schedule.t_max=40 || { echo "FAIL: B part 1"; fail=1; }
train "$tmp/B" || { echo "FAIL: B part 2 exit $?"; fail=1; }
expect_in_log "20 + resume" "$tmp/B.log" "resuming from .*step-00000020"
same_runs "20 + resume" "$tmp/A" "$tmp/B"

# (b) SIGKILL right after a random step, then restart (resumes from the newest checkpoint before).
k=${KILL_STEP:-$(( 11 + RANDOM % 28 ))}
train "$tmp/C" --set fault.kill_at_step=$k
rc=$?
[ $rc -eq 137 ] || { echo "FAIL: kill at step $k: exit $rc, expected 137 (SIGKILL)"; fail=1; }
train "$tmp/C" || { echo "FAIL: C restart exit $?"; cat "$tmp/C.log"; fail=1; }
# The newest checkpoint before step k, or an older one (or none: a fresh start) when that one was
# still being written in the background as the process died (an incomplete one is skipped).
r=$(sed -n 's/^resuming from .*step-0*\([0-9][0-9]*\) .*/\1/p' "$tmp/C.log")
if [ -n "$r" ]; then
  [ "$r" -ge 10 ] && [ "$r" -le $(( (k - 1) / 10 * 10 )) ] \
    || { echo "FAIL: kill at $k: resumed from step $r"; cat "$tmp/C.log"; fail=1; }
else
  [ "$(grep -c "^fresh start: [0-9]* parameters" "$tmp/C.log")" -eq 2 ] \
    || { echo "FAIL: kill at $k: neither resumed nor restarted"; cat "$tmp/C.log"; fail=1; }
fi
same_runs "SIGKILL at step $k + restart" "$tmp/A" "$tmp/C"

# (c) SIGKILL while writing the step-30 checkpoint (after some files / before DONE), then restart:
# the incomplete checkpoint is reported and skipped, training resumes from step 20.
train "$tmp/D" --set fault.kill_in_checkpoint=30
rc=$?
[ $rc -eq 137 ] || { echo "FAIL: kill in checkpoint: exit $rc"; fail=1; }
train "$tmp/D" || { echo "FAIL: D restart exit $?"; cat "$tmp/D.log"; fail=1; }
expect_in_log "kill in checkpoint" "$tmp/D.log" "resuming from .*step-00000020"
same_runs "SIGKILL inside checkpoint write + restart" "$tmp/A" "$tmp/D"
train "$tmp/E" --set fault.kill_in_checkpoint=30 --set fault.kill_in_checkpoint_phase=before_done
rc=$?
[ $rc -eq 137 ] || { echo "FAIL: kill before DONE: exit $rc"; fail=1; }
train "$tmp/E" || { echo "FAIL: E restart exit $?"; cat "$tmp/E.log"; fail=1; }
expect_in_log "kill before DONE" "$tmp/E.log" "resuming from .*step-00000020"
same_runs "SIGKILL before DONE + restart" "$tmp/A" "$tmp/E"

# (d) one thread gives the same bits as two (first 12 steps).
train "$tmp/F" --set train.threads=1 --set train.max_steps=12 --set optim.schedule.t_max=40 \
  || { echo "FAIL: 1-thread run"; fail=1; }
same_runs "1 thread vs 2 threads" "$tmp/A" "$tmp/F" --allow-missing-steps

# A resume whose math differs is refused, naming the key; a finished run is a no-op.
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/B" --set optim.lr=1e-2 > /dev/null 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "optim.lr" "$tmp/err" || { echo "FAIL: changed lr: exit $rc: $(cat "$tmp/err")"; fail=1; }
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/A" > /dev/null 2> "$tmp/err" \
  && grep -q "nothing to do" "$tmp/err" || { echo "FAIL: finished run: $(cat "$tmp/err")"; fail=1; }
# The run directory holds the resolved config and its hash.
(cd "$tmp/A" && sha256sum -c --quiet config.sha256) || { echo "FAIL: config.sha256"; fail=1; }
"$BIN" train "$tmp/A/config.yaml" --run-dir "$tmp/A" > /dev/null 2>&1 \
  || { echo "FAIL: resolved config.yaml does not load back"; fail=1; }
exit $fail

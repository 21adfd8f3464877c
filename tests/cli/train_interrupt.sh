#!/usr/bin/env bash
# ctest-labels: long
# Interruption of `replica train` and `replica launch` (docs/training.md, "Interruption"): SIGINT,
# SIGTERM, SIGUSR1 finish the current step, checkpoint it and exit 128 + signal with "interrupted at
# step N: checkpoint written, rerun to resume"; a second signal exits at once and the previous
# checkpoint stays valid; a rerun resumes bit-identical to a run that never stopped (metrics and
# final checkpoint). `replica launch` with 2 ranks passes SIGTERM / SIGINT on through mpirun and
# leaves no process behind. A fresh start moves an earlier metrics.jsonl aside.
#   usage: train_interrupt.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init

arith_tokens "$tmp/tokens.npy" 0 300
# 100 steps of about 10 ms: room to signal mid-run. No checkpoint.interval: the default (1000) is
# past the end, so a checkpoint mid-run is the interruption's.
{ tiny_model_256 2; cat <<'YAML'
data:
  paths: [tokens.npy]
  seq_len: 32
  seed: 3
train:
  max_steps: 100
  global_batch_instances: 8
  micro_batch_instances: 2
  threads: 1
  log_interval: 50
optim:
  lr: 3.0e-3
  schedule: {type: cosine, warmup: 5}
checkpoint:
  keep: 2
YAML
} > "$tmp/tiny.yaml"

same() { same_runs_and_state "$@" step-00000100; }  # same <what> <run-a> <run-b>
wait_lines() {  # wait_lines <metrics-file> <n> <pid>: until the file has n lines (or pid ends)
  while kill -0 "$3" 2> /dev/null; do
    [ -s "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0
    sleep 0.02
  done
  return 1
}
# interrupt <run> <signal...>: starts train, sends the signals (at once) after 20 steps, waits.
interrupt() {
  local dir=$1; shift
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" "${extra[@]}" > "$dir.log" 2>&1 &
  local pid=$!
  wait_lines "$dir/metrics.jsonl" 20 $pid || { echo "FAIL: $dir ended before 20 steps"; fail=1; }
  for s in "$@"; do kill -"$s" $pid; done
  wait $pid
}
# interrupted_step <log>: N of "interrupted at step N", empty when absent.
interrupted_step() { sed -n 's/^interrupted at step \([0-9]*\) (SIG[A-Z0-9]*): checkpoint written, rerun to resume$/\1/p' "$1"; }

"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/A" > "$tmp/A.log" 2>&1 \
  || { echo "FAIL: straight run: $(cat "$tmp/A.log")"; exit 1; }

# SIGINT, SIGTERM, SIGHUP (the terminal went away), SIGUSR1 (SLURM's warning before pre-emption):
# checkpoint, message, 128 + signal.
extra=()
for case in "INT 130" "TERM 143" "HUP 129" "USR1 138"; do
  set -- $case
  sig=$1 code=$2 dir=$tmp/$1
  interrupt "$dir" "$sig"
  rc=$?
  check "SIG$sig: exit $rc, expected $code" "[ $rc -eq $code ]"
  n=$(interrupted_step "$dir.log")
  if [ -z "$n" ]; then
    echo "FAIL: SIG$sig: no 'interrupted at step N' line"; cat "$dir.log"; fail=1; continue
  fi
  check "SIG$sig: stopped at step $n, not mid-run" "[ $n -ge 20 ] && [ $n -lt 100 ]"
  ck=$(printf '%s/checkpoints/step-%08d' "$dir" "$n")
  check "SIG$sig: $ck complete" "[ -f $ck/DONE ]"
  check "SIG$sig: metrics end at step $n" "[ \$(wc -l < $dir/metrics.jsonl) -eq $n ]"
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" > "$dir.resume.log" 2>&1 \
    || { echo "FAIL: SIG$sig: rerun: $(cat "$dir.resume.log")"; fail=1; }
  grep -q "resuming from .*step-0*$n (step $n" "$dir.resume.log" \
    || { echo "FAIL: SIG$sig: rerun did not resume from step $n"; cat "$dir.resume.log"; fail=1; }
  same "SIG$sig at step $n + rerun" "$tmp/A" "$dir"
done

# A second signal while stopping exits at once; the checkpoints written before stay valid (every
# 10 steps here; the one being written in the background may be incomplete and is skipped). The two
# signals are sent together, so either may be handled first.
extra=(--set checkpoint.interval=10)
interrupt "$tmp/twice" INT TERM
rc=$?
check "INT and TERM: exit $rc, expected 143 or 130" "[ $rc -eq 143 ] || [ $rc -eq 130 ]"
check "INT and TERM: message" "grep -Eq 'SIG(TERM|INT) while stopping: exiting now without a new checkpoint' $tmp/twice.log"
check "INT and TERM: no 'interrupted at step' line" "[ -z \"\$(interrupted_step $tmp/twice.log)\" ]"
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/twice" --set checkpoint.interval=10 \
  > "$tmp/twice.resume.log" 2>&1 || { echo "FAIL: twice: rerun: $(cat "$tmp/twice.resume.log")"; fail=1; }
r=$(sed -n 's/^resuming from .*step-0*\([0-9][0-9]*\) .*/\1/p' "$tmp/twice.resume.log")
check "twice: resumed from a checkpoint of the interval (got '$r')" "[ -n '$r' ] && [ \$(( $r % 10 )) -eq 0 ]"
if ! "$BIN" compare "$tmp/A" "$tmp/twice" > "$tmp/cmp.txt" 2>&1; then
  echo "FAIL: twice: metrics differ"; cat "$tmp/cmp.txt"; fail=1
fi

# A fresh start does not truncate a metrics.jsonl already in the run directory.
mkdir -p "$tmp/fresh"
printf '{"step": 1, "loss": 9}\n' > "$tmp/fresh/metrics.jsonl"
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/fresh" --set train.max_steps=3 \
  --set optim.schedule.warmup=1 > "$tmp/fresh.log" 2>&1 || { echo "FAIL: fresh: $(cat "$tmp/fresh.log")"; fail=1; }
check "fresh start: earlier metrics moved to metrics.jsonl.1" \
  "[ \"\$(cat $tmp/fresh/metrics.jsonl.1)\" = '{\"step\": 1, \"loss\": 9}' ]"
check "fresh start: says so" "grep -q 'moved to .*metrics.jsonl.1' $tmp/fresh.log"
check "fresh start: new metrics" "[ \$(wc -l < $tmp/fresh/metrics.jsonl) -eq 3 ]"

# replica launch, 2 ranks: SIGTERM, SIGINT and SIGHUP reach every rank through mpirun; the job
# checkpoints one step, launch logs it and exits 128 + signal; nothing keeps running, the run lock
# is free and a rerun resumes bit-identical.
if command -v mpirun > /dev/null; then
  for case in "TERM 143" "INT 130" "HUP 129"; do
    set -- $case
    sig=$1 code=$2 dir=$tmp/L$1
    "$BIN" launch --ranks 2 -- train "$tmp/tiny.yaml" --run-dir "$dir" > "$dir.log" 2>&1 &
    pid=$!
    wait_lines "$dir/metrics.jsonl" 20 $pid || { echo "FAIL: launch $sig ended before 20 steps"; fail=1; }
    kill -"$sig" $pid
    wait $pid
    rc=$?
    check "launch SIG$sig: exit $rc, expected $code" "[ $rc -eq $code ]"
    check "launch SIG$sig: launch.log" "grep -q 'interrupted by SIG$sig: forwarded to mpirun' $dir/launch.log"
    n=$(sed -n 's/.*newest complete checkpoint .*(step \([0-9]*\)): rerun to resume.*/\1/p' "$dir/launch.log")
    check "launch SIG$sig: a checkpoint mid-run (got '$n')" "[ -n '$n' ] && [ $n -ge 20 ] && [ $n -lt 100 ]"
    check "launch SIG$sig: rank message" "grep -q '^interrupted at step $n (SIGUSR1): checkpoint written' $dir.log"
    sleep 0.5
    check "launch SIG$sig: no process left" "! pgrep -f -- '--run-dir $dir' > /dev/null"
    "$BIN" launch --ranks 2 -- train "$tmp/tiny.yaml" --run-dir "$dir" > "$dir.resume.log" 2>&1 \
      || { echo "FAIL: launch SIG$sig: rerun: $(tail -20 "$dir.resume.log")"; fail=1; }
    grep -q "resuming from .*step-0*$n (step $n" "$dir.resume.log" \
      || { echo "FAIL: launch SIG$sig: rerun did not resume from step $n"; tail -20 "$dir.resume.log"; fail=1; }
    same "launch SIG$sig at step $n + rerun" "$tmp/A" "$dir"
  done

  # A second signal to launch goes on as SIGTERM: the ranks stop at once. Launch still exits
  # 128 + the first signal and says so; no process or lock is left, and a rerun resumes from a
  # complete checkpoint (every 10 steps here) onto the same trajectory.
  dir=$tmp/Ltwice
  "$BIN" launch --ranks 2 -- train "$tmp/tiny.yaml" --run-dir "$dir" --set checkpoint.interval=10 \
    > "$dir.log" 2>&1 &
  pid=$!
  wait_lines "$dir/metrics.jsonl" 20 $pid || { echo "FAIL: launch twice ended before 20 steps"; fail=1; }
  kill -INT $pid
  sleep 0.05
  kill -TERM $pid
  wait $pid
  rc=$?
  check "launch INT then TERM: exit $rc, expected 130" "[ $rc -eq 130 ]"
  check "launch INT then TERM: launch.log: $(tail -1 "$dir/launch.log")" \
    "grep -q 'interrupted by SIGINT (twice): forwarded to mpirun.s process group as SIGUSR1, then SIGTERM' $dir/launch.log"
  sleep 0.5
  check "launch INT then TERM: no process left" "! pgrep -f -- '--run-dir $dir' > /dev/null"
  "$BIN" launch --ranks 2 -- train "$tmp/tiny.yaml" --run-dir "$dir" --set checkpoint.interval=10 \
    > "$dir.resume.log" 2>&1 \
    || { echo "FAIL: launch twice: rerun: $(tail -20 "$dir.resume.log")"; fail=1; }
  r=$(sed -n 's/^resuming from .*step-0*\([0-9][0-9]*\) .*/\1/p' "$dir.resume.log" | head -1)
  check "launch twice: the rerun resumed from a complete checkpoint (got '$r')" "[ -n '$r' ]"
  same_runs "launch INT then TERM + rerun" "$tmp/A" "$dir"
else
  echo "note: no mpirun, launch cases skipped"
fi
cli_finish

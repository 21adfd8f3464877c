#!/usr/bin/env bash
# ctest-labels: long
# Data-parallel training on MPI, end to end on a tiny Olmo 3 and a synthetic token file:
#  - 1 rank (no mpirun), 2 and 4 ranks (mpirun, oversubscribed) give bit-identical metrics
#    (`replica compare`, tolerance 0) and final checkpoints holding the same bytes of weights and
#    Adam state (assembled from their 1, 2 or 4 shards);
#  - a run saved by 4 ranks at step 10 and resumed by 1 rank equals the uninterrupted run at every
#    step;
#  - `replica launch --ranks 4,2` with one rank SIGKILLed at step 17 restarts with 2 ranks from the
#    newest complete checkpoint and still equals the uninterrupted run; launch.log says so;
#  - clear errors, exit 2 and no checkpoint: missing mpirun, 3 ranks, 4 ranks for 2 micro-batches.
# Skips (exit 0) when mpirun is absent.   usage: dist_parity.sh <replica-binary> <repo-root>
set -u
BIN=$1
if ! command -v mpirun > /dev/null; then
  echo "SKIP: mpirun not found (install openmpi-bin; scripts/setup does)"
  exit 0
fi
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
MPI=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)

arith_tokens "$tmp/tokens.npy" 0 200
{ tiny_model_256 2; cat <<'YAML'
data:
  paths: [tokens.npy]
  seq_len: 32
  seed: 3
train:
  max_steps: 20
  global_batch_instances: 8
  micro_batch_instances: 2
  threads: 1
  log_interval: 10
optim:
  lr: 3.0e-3
  schedule: {type: cosine, warmup: 5}
checkpoint:
  interval: 10
  keep: 3
YAML
} > "$tmp/tiny.yaml"

run() {  # run <ranks> <run-dir> [--set ...]: 1 = plain replica train, else under mpirun
  local n=$1 dir=$2; shift 2
  if [ "$n" = 1 ]; then
    "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1
  else
    "${MPI[@]}" -np "$n" "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1
  fi
}
same() { same_runs_and_state "$@" step-00000020; }  # same <what> <run-a> <run-b>

run 1 "$tmp/R1" || { echo "FAIL: 1-rank run exit $?"; cat "$tmp/R1.log"; exit 1; }
[ "$(wc -l < "$tmp/R1/metrics.jsonl")" -eq 20 ] || { echo "FAIL: R1 has not 20 metrics lines"; fail=1; }
for n in 2 4; do
  run $n "$tmp/R$n" || { echo "FAIL: $n-rank run exit $?"; cat "$tmp/R$n.log"; fail=1; continue; }
  same "$n ranks vs 1" "$tmp/R1" "$tmp/R$n"
  grep -q '"world_size": *'$n "$tmp/R$n/checkpoints/step-00000020/state.json" \
    || { echo "FAIL: state.json does not record world size $n"; fail=1; }
done
python3 - "$tmp/R4/metrics.jsonl" <<'PY' || { echo "FAIL: tokens_per_s_per_rank"; fail=1; }
import json, sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    assert abs(m["tokens_per_s_per_rank"] * 4 - m["tokens_per_s"]) <= 1e-9 * m["tokens_per_s"], m
PY

# Saved by 4 ranks at step 10 (t_max pinned to the full run's 20), resumed by 1 rank.
run 4 "$tmp/E" --set train.max_steps=10 --set optim.schedule.t_max=20 || { echo "FAIL: E part 1"; fail=1; }
run 1 "$tmp/E" || { echo "FAIL: 1-rank resume exit $?"; cat "$tmp/E.log"; fail=1; }
grep -q "resuming from .*step-00000010" "$tmp/E.log" || { echo "FAIL: E did not resume from 10"; cat "$tmp/E.log"; fail=1; }
same "4 ranks to step 10, resumed on 1" "$tmp/R4" "$tmp/E"

# replica launch: rank 2 of 4 dies at step 17, launch restarts with 2 ranks from the newest complete
# checkpoint (every 5 steps; the one of step 15 may still be in flight when the job is killed).
REPLICA_FAULT=step:17 REPLICA_FAULT_RANK=2 "$BIN" launch --ranks 4,2 --max-retries 2 \
  -- train "$tmp/tiny.yaml" --run-dir "$tmp/L" --quiet --set checkpoint.interval=5 > "$tmp/L.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: launch exit $rc"; cat "$tmp/L.out"; fail=1; }
for text in "attempt 1 of 3: 4 rank(s)" "killed by signal 9" \
            "attempt 2 of 3: 2 rank(s), resuming from .*step-000000[01][05]" \
            "attempt 2 with 2 rank(s) succeeded"; do
  grep -q -- "$text" "$tmp/L/launch.log" || { echo "FAIL: launch.log lacks '$text'"; cat "$tmp/L/launch.log"; fail=1; }
done
same "launch 4 ranks, rank killed, 2 ranks" "$tmp/R4" "$tmp/L"

# Clear errors, exit 2, nothing written.
expect_refusal() {  # expect_refusal <what> <text> <cmd...>
  local what=$1 text=$2; shift 2
  "$@" > /dev/null 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] && grep -q -- "$text" "$tmp/err" || { echo "FAIL: $what: exit $rc: $(cat "$tmp/err")"; fail=1; }
}
expect_refusal "missing mpirun" "mpirun not found" \
  env PATH=/nonexistent "$BIN" launch --ranks 2 -- train "$tmp/tiny.yaml" --run-dir "$tmp/X1"
expect_refusal "3 ranks" "world size 3: must be a power of two" \
  "${MPI[@]}" -np 3 "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/X2"
# launch takes any rank count; the ranks of a zero1 run refuse 3 (exit 2, not retried).
expect_refusal "launch --ranks 3 (zero1)" "world size 3: must be a power of two" \
  "$BIN" launch --ranks 3 --max-retries 2 -- train "$tmp/tiny.yaml" --run-dir "$tmp/X4"
grep -q "attempt 2" "$tmp/X4/launch.log" 2>/dev/null && { echo "FAIL: launch retried a refusal"; fail=1; }
expect_refusal "4 ranks, 2 micro-batches" "world size 4: does not divide the 2 micro-batches" \
  "$BIN" launch --ranks 4 -- train "$tmp/tiny.yaml" --run-dir "$tmp/X3" --set train.micro_batch_instances=4
for d in X1 X2 X3 X4; do
  [ ! -e "$tmp/$d/checkpoints" ] || { echo "FAIL: $d: a checkpoint directory was created"; fail=1; }
done
[ $fail = 0 ] && echo "dist_parity: 1/2/4 ranks identical, elastic resume and launch restart identical"
exit $fail

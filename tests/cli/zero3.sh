#!/usr/bin/env bash
# ctest-labels: long
# ZeRO-3 (parallel.sharding: zero3) on MPI, end to end on a tiny Olmo 3, a synthetic token file and
# a small evaluation set evaluated during training (every rank runs the collective forward):
#  - the world-1 run with train.grad_accumulation: sequential (no ZeRO) is the reference; zero3 on
#    1 rank (no mpirun) and on 2, 3 and 4 ranks (mpirun; 12 micro-batches, so 3 is allowed) give
#    bit-identical metrics, eval lines included (`replica compare`, tolerance 0), and byte-identical
#    final checkpoints (weights and Adam state);
#  - a zero3 run saved by 4 ranks at step 4 and resumed by 3 ranks, and a world-1 sequential run
#    saved at step 4 and resumed by zero3 on 2 ranks, equal the uninterrupted run;
#  - full recomputation, the gather prefetch off, and compute.precision bf16 (matmul weights
#    gathered as bf16; 2 and 4 ranks against the world-1 bf16 run) change no bit either; rank 0's
#    [zero3] line reports the prefetch and the gathers' precision;
#  - refusals exit 2 naming the keys: zero3 with the tree accumulation, zero1 with the sequential
#    one on 2 ranks, zero3 on 5 ranks for 12 micro-batches.
# Skips (exit 0) when mpirun is absent.   usage: zero3.sh <replica-binary> <repo-root>
set -u
BIN=$1 ROOT=$2
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
head -n 3 "$ROOT/data/eval/sotu_heldout_ppl.jsonl" > "$tmp/held.jsonl"
{ tiny_model_384; cat <<'YAML'
data:
  paths: [tokens.npy]
  seq_len: 32
  seed: 3
train:
  max_steps: 8
  global_batch_instances: 12
  micro_batch_instances: 1
  grad_accumulation: sequential
  threads: 1
  log_interval: 4
optim:
  lr: 3.0e-3
  schedule: {type: cosine, warmup: 2}
checkpoint:
  interval: 4
  keep: 3
eval:
  interval: 4
  sets: [held.jsonl]
  tokenizer: bytes
  leak_guard: "off"
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
same() {  # same <what> <run-a> <run-b>: metrics bit-identical and final checkpoints byte-identical
  local what=$1 a=$2 b=$3
  if ! "$BIN" compare "$a" "$b" > "$tmp/cmp.txt" 2>&1; then
    echo "FAIL: $what: metrics differ"; cat "$tmp/cmp.txt"; fail=1
  fi
  cmp -s <(grep '"eval"' "$a/metrics.jsonl") <(grep '"eval"' "$b/metrics.jsonl") \
    || { echo "FAIL: $what: eval lines differ"; fail=1; }
  same_checkpoint_state "$a/checkpoints/step-00000008" "$b/checkpoints/step-00000008" \
    || { echo "FAIL: $what: final params, Adam m, v or step differ"; fail=1; }
}
Z=(--set parallel.sharding=zero3)

run 1 "$tmp/S1" || { echo "FAIL: world-1 sequential run exit $?"; cat "$tmp/S1.log"; exit 1; }
check "S1 has 8 train lines" '[ "$(grep -c "\"loss\"" "$tmp/S1/metrics.jsonl")" -eq 8 ]'
check "S1 has eval lines at steps 4 and 8" '[ "$(grep -c "\"eval\"" "$tmp/S1/metrics.jsonl")" -eq 2 ]'
for n in 1 2 3 4; do
  run $n "$tmp/Z$n" "${Z[@]}" || { echo "FAIL: zero3 $n-rank run exit $?"; cat "$tmp/Z$n.log"; fail=1; continue; }
  same "zero3 on $n rank(s) vs world-1 sequential" "$tmp/S1" "$tmp/Z$n"
done

# Saved by 4 ranks at step 4 (t_max pinned to the full run's 8), resumed by 3 ranks.
run 4 "$tmp/E" "${Z[@]}" --set train.max_steps=4 --set optim.schedule.t_max=8 \
  || { echo "FAIL: E part 1"; cat "$tmp/E.log"; fail=1; }
run 3 "$tmp/E" "${Z[@]}" || { echo "FAIL: 3-rank resume exit $?"; cat "$tmp/E.log"; fail=1; }
check "E resumed from step 4" 'grep -q "resuming from .*step-00000004" "$tmp/E.log"'
same "zero3 4 ranks to step 4, resumed on 3" "$tmp/S1" "$tmp/E"

# The mode is not part of the trajectory: a world-1 sequential run saved at step 4 continues under
# zero3 on 2 ranks.
run 1 "$tmp/M" --set train.max_steps=4 --set optim.schedule.t_max=8 || { echo "FAIL: M part 1"; cat "$tmp/M.log"; fail=1; }
run 2 "$tmp/M" "${Z[@]}" || { echo "FAIL: zero3 2-rank resume of a world-1 run exit $?"; cat "$tmp/M.log"; fail=1; }
check "M resumed from step 4" 'grep -q "resuming from .*step-00000004" "$tmp/M.log"'
same "world-1 sequential to step 4, resumed by zero3 on 2 ranks" "$tmp/S1" "$tmp/M"

# Recomputation inside the ZeRO-3 backward (the recompute forward uses the weights the backward
# acquired) changes no bit either.
run 2 "$tmp/R" "${Z[@]}" --set train.recompute=full || { echo "FAIL: zero3 + recompute full exit $?"; cat "$tmp/R.log"; fail=1; }
same "zero3 on 2 ranks with full recomputation vs world-1 sequential" "$tmp/S1" "$tmp/R"

# The gather prefetch (on by default) changes no bit: off on 2 ranks gives the same run; rank 0's
# [zero3] line says which, and that the prefetch found its units.
run 2 "$tmp/P" "${Z[@]}" --set parallel.prefetch=false || { echo "FAIL: zero3 without prefetch exit $?"; cat "$tmp/P.log"; fail=1; }
same "zero3 on 2 ranks without prefetch vs world-1 sequential" "$tmp/S1" "$tmp/P"
check "P: [zero3] line says prefetch off" 'grep -q "^\[zero3\] rank 0 of 2: .*prefetch off (0 of [0-9]* acquires prefetched), fp32 gathers" "$tmp/P.log"'
check "Z2: [zero3] line says prefetch on, units prefetched" 'grep -q "^\[zero3\] rank 0 of 2: .*prefetch on ([1-9][0-9]* of [0-9]* acquires prefetched)" "$tmp/Z2.log"'

# compute.precision bf16: the matmul weights are gathered as bf16 (each use rounds them to bf16
# anyway), the bits are those of the world-1 bf16 run, with and without prefetch and recomputation.
B=(--set compute.precision=bf16)
run 1 "$tmp/SB" "${B[@]}" || { echo "FAIL: world-1 bf16 run exit $?"; cat "$tmp/SB.log"; fail=1; }
for n in 2 4; do
  run $n "$tmp/ZB$n" "${Z[@]}" "${B[@]}" || { echo "FAIL: zero3 bf16 $n ranks exit $?"; cat "$tmp/ZB$n.log"; fail=1; continue; }
  same "zero3 bf16 on $n ranks vs world-1 bf16" "$tmp/SB" "$tmp/ZB$n"
done
check "ZB2: [zero3] line says bf16 gathers" 'grep -q "^\[zero3\] rank 0 of 2: .*bf16 matmul-weight gathers" "$tmp/ZB2.log"'
run 2 "$tmp/RB" "${Z[@]}" "${B[@]}" --set parallel.prefetch=false --set train.recompute=full \
  || { echo "FAIL: zero3 bf16 no prefetch + recompute full exit $?"; cat "$tmp/RB.log"; fail=1; }
same "zero3 bf16 on 2 ranks, no prefetch, full recomputation vs world-1 bf16" "$tmp/SB" "$tmp/RB"
run 4 "$tmp/RB4" "${Z[@]}" "${B[@]}" --set train.recompute=full \
  || { echo "FAIL: zero3 bf16 4 ranks + recompute full exit $?"; cat "$tmp/RB4.log"; fail=1; }
same "zero3 bf16 on 4 ranks, prefetch, full recomputation vs world-1 bf16" "$tmp/SB" "$tmp/RB4"

expect_refusal() {  # expect_refusal <what> <text> <cmd...>
  local what=$1 text=$2; shift 2
  "$@" > /dev/null 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] && grep -q -- "$text" "$tmp/err" || { echo "FAIL: $what: exit $rc: $(cat "$tmp/err")"; fail=1; }
}
expect_refusal "zero3 with the tree" "'parallel.sharding' (zero3) and 'train.grad_accumulation' (tree)" \
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/X1" "${Z[@]}" --set train.grad_accumulation=tree
expect_refusal "zero1 sequential on 2 ranks" "'train.grad_accumulation' (sequential) and 'parallel.sharding' (zero1)" \
  "${MPI[@]}" -np 2 "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/X2"
expect_refusal "zero3 on 5 ranks" "world size 5 does not divide the 12 micro-batches" \
  "${MPI[@]}" -np 5 "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/X3" "${Z[@]}"
for d in X1 X2 X3; do
  check "$d: no checkpoint directory" '[ ! -e "$tmp/$d/checkpoints" ]'
done
cli_finish

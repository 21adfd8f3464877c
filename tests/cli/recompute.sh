#!/usr/bin/env bash
# train.recompute end to end on a tiny Olmo 3: none, mlp and full train to bit-identical metrics
# (`replica compare`, tolerance 0) and byte-identical final checkpoints, at 1 and 2 threads and
# (when mpirun is present) on 2 ranks; auto resolves against parallel.memory_per_rank and says so in
# train.log; bad values exit 2 naming the key.   usage: recompute.sh <replica-binary> <repo-root>
set -u
BIN=$1
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init

arith_tokens "$tmp/tokens.npy" 0 200
{ tiny_model_256 3; cat <<'YAML'
data:
  paths: [tokens.npy]
  seq_len: 32
  seed: 3
train:
  max_steps: 6
  global_batch_instances: 8
  micro_batch_instances: 2
  threads: 1
optim:
  lr: 3.0e-3
  schedule: {type: cosine, warmup: 2}
YAML
} > "$tmp/tiny.yaml"

run() {  # run <run-dir> [--set ...]
  local dir=$1; shift
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1 \
    || { echo "FAIL: run $dir exit $?"; cat "$dir.log"; fail=1; }
}
same() {  # same <what> <run-a> <run-b>
  "$BIN" compare "$2" "$3" > "$tmp/cmp.txt" 2>&1 || { echo "FAIL: $1: metrics differ"; cat "$tmp/cmp.txt"; fail=1; }
  same_checkpoint_state "$2/checkpoints/step-00000006" "$3/checkpoints/step-00000006" \
    || { echo "FAIL: $1: final params, Adam m, v or step differ"; fail=1; }
}

run "$tmp/none" --set train.recompute=none
grep -q "recompute:" "$tmp/none/train.log" && { echo "FAIL: a fixed policy logged an auto line"; fail=1; }
for policy in mlp full; do
  run "$tmp/$policy" --set train.recompute=$policy
  same "recompute $policy vs none" "$tmp/none" "$tmp/$policy"
done
run "$tmp/full2" --set train.recompute=full --set train.threads=2
same "recompute full at 2 threads vs none at 1" "$tmp/none" "$tmp/full2"

# auto: a roomy budget keeps everything; one below the plan's none and mlp totals recomputes all.
"$BIN" plan "$tmp/tiny.yaml" --json > "$tmp/plan.json" || { echo "FAIL: plan exit $?"; fail=1; }
tight=$(python3 -c "
import json; p = json.load(open('$tmp/plan.json'))['memory_per_rank_by_recompute_bytes']
assert p['full'] < p['mlp'] < p['none'], p
print(p['full'])")
run "$tmp/auto-roomy" --set parallel.memory_per_rank=64GiB
check "auto with 64GiB resolves to none" 'grep -q "recompute: none (auto: planned .* fits the budget of 64.00 GiB, parallel.memory_per_rank)" "$tmp/auto-roomy/train.log"'
run "$tmp/auto-tight" --set parallel.memory_per_rank=$tight
check "auto at the full plan's total resolves to full" 'grep -q "recompute: full (auto: planned .* fits" "$tmp/auto-tight/train.log"'
same "auto (full) vs none" "$tmp/none" "$tmp/auto-tight"

if command -v mpirun > /dev/null; then
  export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
  MPI=(mpirun --oversubscribe --bind-to none)
  [ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
  "${MPI[@]}" -np 2 "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/r2" --quiet \
    --set train.recompute=full > "$tmp/r2.log" 2>&1 || { echo "FAIL: 2 ranks exit $?"; cat "$tmp/r2.log"; fail=1; }
  same "recompute full on 2 ranks vs none on 1" "$tmp/none" "$tmp/r2"
else
  echo "note: mpirun not found, 2-rank case skipped"
fi

expect_refusal() {  # expect_refusal <what> <text> <args...>
  local what=$1 text=$2; shift 2
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/X" "$@" > /dev/null 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] && grep -q -- "$text" "$tmp/err" || { echo "FAIL: $what: exit $rc: $(cat "$tmp/err")"; fail=1; }
}
expect_refusal "unknown policy" "train.recompute.*'attention'" --set train.recompute=attention
expect_refusal "bad memory" "parallel.memory_per_rank.*'lots'" --set parallel.memory_per_rank=lots
expect_refusal "bad unit" "parallel.memory_per_rank.*'24 GiBs'" --set "parallel.memory_per_rank=24 GiBs"
[ ! -e "$tmp/X/checkpoints" ] || { echo "FAIL: a refused run wrote checkpoints"; fail=1; }
cli_finish

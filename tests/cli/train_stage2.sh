#!/usr/bin/env bash
# Starting a run from another run's checkpoint (Olmo 3 stage 1 -> stage 2): init.from_checkpoint
# with init.reset_step (fresh step counter, data order and schedule; Adam m, v, t carried over or
# not), from a Hugging Face directory, and without reset_step (continuing the step counter, data
# position and schedule bit-exactly in a new run directory).
#   usage: train_stage2.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init

arith_tokens "$tmp/tokens.npy" 1 200
{ tiny_model_256 4; cat <<'YAML'
data: {paths: [tokens.npy], seq_len: 32, seed: 3}
train: {max_steps: 10, global_batch_instances: 4, micro_batch_instances: 2, threads: 2}
optim: {lr: 1.0e-2, schedule: {type: cosine, warmup: 3, t_max: 15}}
checkpoint: {interval: 0, keep: 2}
YAML
} > "$tmp/tiny.yaml"
train() {  # train <run-dir> [--set ...]
  local dir=$1; shift
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" "$@" >> "$dir.log" 2>&1 \
    || { echo "FAIL: train $dir exit $?"; cat "$dir.log"; fail=1; }
}
json() {  # json <file> <python expression over j>
  python3 -c "import json,sys; j=json.load(open('$1')); print($2)"
}
metric() {  # metric <run> <step> <key>
  python3 -c "
import json
for l in open('$1/metrics.jsonl'):
    j = json.loads(l)
    if j['step'] == $2 and '$3' in j: print(repr(j['$3']))"
}

train "$tmp/S1"                       # "stage 1": 10 steps
train "$tmp/REF" --set train.max_steps=15   # the same run, 15 steps straight

STAGE2=(--set "init.from_checkpoint=$tmp/S1" --set data.seed=9 --set optim.lr=2e-3
        --set optim.schedule.type=linear --set optim.schedule.warmup=0
        --set optim.schedule.alpha_f=0 --set optim.schedule.t_max=6 --set train.max_steps=6)
train "$tmp/S2" "${STAGE2[@]}"
grep -q "starting from .*step-00000010 (fresh step counter): weights, Adam state" "$tmp/S2.log" \
  || { echo "FAIL: S2 did not say where it started"; cat "$tmp/S2.log"; fail=1; }
st="$tmp/S2/checkpoints/step-00000006/state.json"
[ "$(json "$st" "j['step'], j['adam_step'], j['tokens']")" = "6 16 768" ] \
  || { echo "FAIL: S2 state: $(json "$st" "j['step'], j['adam_step'], j['tokens']")"; fail=1; }
[ "$(metric "$tmp/S2" 1 lr)" = "$(python3 -c 'print(repr(2e-3 - (2e-3 - 0.0) * (1 / 6)))')" ] \
  || { echo "FAIL: S2 lr(1) $(metric "$tmp/S2" 1 lr)"; fail=1; }
python3 -c "import sys; sys.exit(0 if $(metric "$tmp/S2" 1 ce_loss) < $(metric "$tmp/S1" 1 ce_loss) - 0.2 else 1)" \
  || { echo "FAIL: S2 does not start from the trained weights"; fail=1; }

# Without the Adam state, and from a Hugging Face export of the same weights: identical runs.
train "$tmp/S2b" "${STAGE2[@]}" --set init.load_optimizer=false
[ "$(json "$tmp/S2b/checkpoints/step-00000006/state.json" "j['adam_step']")" = "6" ] \
  || { echo "FAIL: S2b adam_step"; fail=1; }
"$BIN" convert --from "$tmp/S1" --to "$tmp/HF" > /dev/null 2>&1 || { echo "FAIL: convert"; fail=1; }
train "$tmp/S2c" "${STAGE2[@]}" --set init.load_optimizer=false --set "init.from_checkpoint=$tmp/HF"
"$BIN" compare "$tmp/S2b" "$tmp/S2c" > "$tmp/cmp" 2>&1 || { echo "FAIL: HF start differs"; cat "$tmp/cmp"; fail=1; }
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/S2d" "${STAGE2[@]}" --set "init.from_checkpoint=$tmp/HF" \
  > /dev/null 2> "$tmp/err"
[ $? -eq 2 ] && grep -q "load_optimizer=false" "$tmp/err" || { echo "FAIL: HF dir with load_optimizer: $(cat "$tmp/err")"; fail=1; }

# reset_step=false: a new run directory continues steps 11..15 exactly as the straight run.
train "$tmp/S3" --set "init.from_checkpoint=$tmp/S1" --set init.reset_step=false --set train.max_steps=15
grep -q "continuing its step counter" "$tmp/S3.log" || { echo "FAIL: S3 message"; cat "$tmp/S3.log"; fail=1; }
"$BIN" compare "$tmp/REF" "$tmp/S3" --allow-missing-steps > "$tmp/cmp" 2>&1 \
  || { echo "FAIL: continuation differs from the straight run"; cat "$tmp/cmp"; fail=1; }
[ "$(metric "$tmp/S3" 11 step)" = "11" ] || { echo "FAIL: S3 has no step 11"; fail=1; }

# A data mixture (two sources split from the same tokens) trains like any dataset.
head -c 40000 "$tmp/tokens.npy" > "$tmp/part_a.npy"
tail -c +40001 "$tmp/tokens.npy" > "$tmp/part_b.npy"
train "$tmp/MIX" --set data.paths=[] --set train.max_steps=4 \
  --set "data.mixture=[{name: a, paths: [$tmp/part_a.npy], tokens: 4000}, {name: b, paths: [$tmp/part_b.npy], tokens: 2000, max_repetition: 1}]"
[ "$(wc -l < "$tmp/MIX/metrics.jsonl")" -eq 4 ] || { echo "FAIL: mixture run"; cat "$tmp/MIX.log"; fail=1; }
exit $fail

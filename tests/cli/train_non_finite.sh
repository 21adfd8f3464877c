#!/usr/bin/env bash
# Non-finite training steps: with optim.lr=1e300 the first update overflows the weights and the
# loss turns NaN from step 2; those steps are not applied, are marked "non_finite" in
# metrics.jsonl, and after 5 in a row the run stops with exit 2 naming the steps, before any
# checkpoint. A checkpoint due while the weights are non-finite is refused (exit 2, tensor named)
# instead of written. The count survives a resume: a run stopped (with its checkpoint) between
# non-finite steps and then continued stops at the same step, naming the same steps, as an
# uninterrupted one.   usage: train_non_finite.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "$0")/lib.sh"
cli_init
arith_tokens "$tmp/tokens.npy"
{ tiny_model_256 2; cat <<'YAML'; } > "$tmp/tiny.yaml"
data: {paths: [tokens.npy], seq_len: 32, seed: 3}
train: {max_steps: 30, global_batch_instances: 4, micro_batch_instances: 2, threads: 1}
optim: {lr: 1.0e-3, max_grad_norm: 0, schedule: {type: constant}}
checkpoint: {interval: 10, keep: 50}
YAML
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/run" --set optim.lr=1e300 --quiet \
  > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] || { echo "FAIL: lr 1e300: exit $rc, expected 2"; tail -20 "$tmp/err"; fail=1; }
grep -q "non-finite" "$tmp/err" || { echo "FAIL: no non-finite message: $(tail -5 "$tmp/err")"; fail=1; }
echo "stderr tail:"; tail -3 "$tmp/err"
python3 - "$tmp/run/metrics.jsonl" <<'PY' || fail=1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
train = [l for l in lines if "loss" in l]
nf = [l["step"] for l in train if l.get("non_finite")]
ok = all("non_finite" in l for l in train) and nf == [2, 3, 4, 5, 6] and train[-1]["step"] == 6
print(("ok" if ok else "FAIL") + f": {len(train)} steps logged, non-finite steps {nf}")
sys.exit(0 if ok else 1)
PY
grep -q "steps 2 to 6" "$tmp/err" || { echo "FAIL: the steps are not named"; fail=1; }
ls "$tmp"/run/checkpoints/step-* > /dev/null 2>&1 && { echo "FAIL: a checkpoint was written"; fail=1; }

# A checkpoint due while the weights are non-finite (step 1 here) is refused, naming a tensor.
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/run1" --set optim.lr=1e300 \
  --set checkpoint.interval=1 --quiet > /dev/null 2> "$tmp/err1"
rc=$?
if [ $rc -eq 2 ] && grep -q "checkpoint step 1" "$tmp/err1" && grep -q "tensor '" "$tmp/err1"; then
  echo "ok: $(tail -1 "$tmp/err1")"
else
  echo "FAIL: checkpoint of non-finite weights: exit $rc: $(tail -3 "$tmp/err1")"; fail=1
fi
ls "$tmp"/run1/checkpoints/step-* > /dev/null 2>&1 && { echo "FAIL: run1 wrote a checkpoint"; fail=1; }
# With optim.lr=1e30 the weights stay finite (about 1e30) while the loss overflows from step 2, so
# checkpoints are written between the non-finite steps: the uninterrupted run stops at step 6.
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/whole" --set optim.lr=1e30 \
  --set checkpoint.interval=3 --quiet > /dev/null 2> "$tmp/whole.err"
rc=$?
[ $rc -eq 2 ] && grep -q "steps 2 to 6 (5 in a row)" "$tmp/whole.err" \
  || { echo "FAIL: lr 1e30 uninterrupted: exit $rc: $(tail -2 "$tmp/whole.err")"; fail=1; }
# The same run stopped after step 3 (2 non-finite steps in a row, checkpointed), then continued.
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/split" --set optim.lr=1e30 \
  --set checkpoint.interval=3 --set train.max_steps=3 > /dev/null 2> "$tmp/split1.err"
rc=$?
[ $rc -eq 0 ] && grep -q "2 non-finite in the run" "$tmp/split1.err" \
  || { echo "FAIL: first part: exit $rc: $(grep done: "$tmp/split1.err")"; fail=1; }
python3 -c "import json,sys; nf=json.load(open(sys.argv[1]))['non_finite']
sys.exit(0 if nf == {'total': 2, 'consecutive': 2, 'first_step': 2} else 1)" \
  "$tmp/split/checkpoints/step-00000003/state.json" \
  || { echo "FAIL: state.json non_finite counts"; fail=1; }
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/split" --set optim.lr=1e30 \
  --set checkpoint.interval=3 > /dev/null 2> "$tmp/split2.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "resuming from .*step-00000003" "$tmp/split2.err" &&
   [ "$(grep "training diverged" "$tmp/split2.err")" = "$(grep "training diverged" "$tmp/whole.err")" ]; then
  echo "ok: resumed run stops as the uninterrupted one: $(grep -o "steps 2 to 6 ([^)]*)" "$tmp/split2.err")"
else
  echo "FAIL: resumed run: exit $rc: $(tail -2 "$tmp/split2.err")"; fail=1
fi

# The start of a run says what it will do: model, data, optimizer, LR schedule, compute, batch.
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/summary" --set train.max_steps=2 \
  > /dev/null 2> "$tmp/summary.err"
for line in "model: olmo3, 2 layers" "data: 1 path(s), " "optim: AdamW betas (0.9, 0.95)" \
            "schedule: constant, peak 0.001; lr at step 1 0.001, 2 0.001" "compute: precision fp32" \
            "training 0 -> 2: "; do
  grep -q "^$line" "$tmp/summary.err" || { echo "FAIL: no start line '$line'"; fail=1; }
done
grep -q "^model: " "$tmp/summary/train.log" || { echo "FAIL: train.log lacks the start lines"; fail=1; }
cli_finish

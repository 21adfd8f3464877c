#!/usr/bin/env bash
# `replica compare`: exit 0 iff bit-identical (or within --tolerance), 1 with the first differing
# step, 2 on bad input naming file:line; timings reported, not compared. End to end: a tiny run
# killed (SIGKILL) after a step, and one killed inside a checkpoint write, then restarted, compare
# 0.0 on every metric at every step with an uninterrupted run.
#   usage: compare.sh <replica-binary> <repo-root>
set -u
BIN=$(realpath "$1")
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init

# --- synthetic runs ---
mkdir -p "$tmp/a" "$tmp/b" "$tmp/c" "$tmp/bad"
for s in 1 2 3 4 5; do
  echo "{\"step\":$s,\"loss\":$((10 - s)).25,\"lr\":0.001,\"tokens\":$((s * 128)),\"step_time_s\":0.$s,\"mfu\":0.3}"
done > "$tmp/a/metrics.jsonl"
echo '{"step":5,"eval":{"heldout":{"ppl":12.5,"time_s":1.0}}}' >> "$tmp/a/metrics.jsonl"
# b: same trajectory, different timings
sed -e 's/"step_time_s":0\./"step_time_s":9./' -e 's/"time_s":1.0/"time_s":7.0/' \
  "$tmp/a/metrics.jsonl" > "$tmp/b/metrics.jsonl"
# c: loss differs by 1e-9 at step 3
sed -e 's/"step":3,"loss":7.25/"step":3,"loss":7.250000001/' "$tmp/a/metrics.jsonl" > "$tmp/c/metrics.jsonl"

"$BIN" compare "$tmp/a" "$tmp/b" --json > "$tmp/ab.json"; rc=$?
check "identical runs exit 0 (got $rc)" '[ $rc -eq 0 ]'
check "identical: pass true, eval compared, timings reported" \
  'jq -e ".pass == true and .metrics[\"eval.heldout.ppl\"].max_abs_diff == 0 and (.timings | has(\"step_time_s\")) and (.timings | has(\"eval.heldout.time_s\")) and (.metrics | has(\"step_time_s\") | not)" "$tmp/ab.json" >/dev/null'

"$BIN" compare "$tmp/a" "$tmp/c" --json > "$tmp/ac.json"; rc=$?
check "1e-9 difference exits 1 (got $rc)" '[ $rc -eq 1 ]'
check "first differing step is 3 (loss)" \
  'jq -e ".first_diff.step == 3 and .first_diff.metric == \"loss\" and .metrics.loss.differing_steps == 1 and .pass == false" "$tmp/ac.json" >/dev/null'
"$BIN" compare "$tmp/a" "$tmp/c" --tolerance 1e-6 > /dev/null; rc=$?
check "within --tolerance 1e-6 exits 0 (got $rc)" '[ $rc -eq 0 ]'
"$BIN" compare "$tmp/a" "$tmp/b" --metrics loss,step_time_s > /dev/null; rc=$?
check "listed timing is compared: exit 1 (got $rc)" '[ $rc -eq 1 ]'
"$BIN" compare "$tmp/a" "$tmp/c" --metrics lr,tokens > /dev/null; rc=$?
check "--metrics restricts the comparison: exit 0 (got $rc)" '[ $rc -eq 0 ]'
"$BIN" compare "$tmp/a" "$tmp/b" > "$tmp/text.txt"; rc=$?
check "text report says PASS" 'grep -q "metrics: PASS" "$tmp/text.txt"'

"$BIN" compare "$tmp/a" "$tmp/nope" 2> "$tmp/err"; rc=$?
check "missing run exits 2 (got $rc)" '[ $rc -eq 2 ] && grep -q "nope" "$tmp/err"'
"$BIN" compare "$tmp/a" "$tmp/bad" 2> "$tmp/err"; rc=$?
check "run without metrics.jsonl exits 2 (got $rc)" '[ $rc -eq 2 ] && grep -q "has no metrics.jsonl" "$tmp/err"'
printf '{"step":1,"loss":1}\n{"step":2,"loss":1}\n{"step":3,"loss":\n' > "$tmp/bad/metrics.jsonl"
"$BIN" compare "$tmp/a" "$tmp/bad" 2> "$tmp/err"; rc=$?
check "malformed line exits 2 naming file:line (got $rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "bad/metrics.jsonl:3: malformed JSON" "$tmp/err"'
"$BIN" compare "$tmp/a" "$tmp/b" --metrics nosuch 2> "$tmp/err"; rc=$?
check "unknown --metrics name exits 2 (got $rc)" '[ $rc -eq 2 ] && grep -q nosuch "$tmp/err"'
"$BIN" compare "$tmp/a" "$tmp/b" --tolerance -1 2> /dev/null; rc=$?
check "negative tolerance exits 2 (got $rc)" '[ $rc -eq 2 ]'

# --eval-gate: B's held-out metrics better than the reference A's is suspicious.
"$BIN" compare "$tmp/a" "$tmp/b" --eval-gate --json > "$tmp/g1.json"; rc=$?
check "eval gate passes on identical evals (exit $rc)" \
  '[ $rc -eq 0 ] && jq -e ".eval_gate.pass and ([.checks[].name] == [\"metrics\", \"eval_gate\"])" "$tmp/g1.json" > /dev/null'
mkdir -p "$tmp/better"
sed -e 's/"ppl":12.5/"ppl":11.0/' "$tmp/a/metrics.jsonl" > "$tmp/better/metrics.jsonl"
"$BIN" compare "$tmp/a" "$tmp/better" --eval-gate --metrics loss --json > "$tmp/g2.json"; rc=$?
check "eval gate fails when B is suspiciously better (exit $rc)" \
  '[ $rc -eq 1 ] && jq -e "(.eval_gate.pass | not) and .checks[0].pass and (.checks[1].pass | not)" "$tmp/g2.json" > /dev/null'
"$BIN" compare "$tmp/a" "$tmp/better" --eval-gate --eval-gate-tolerance 2 --metrics loss > /dev/null; rc=$?
check "eval gate tolerance accepts it (exit $rc)" '[ $rc -eq 0 ]'

# --- end to end: kill, restart, compare ---
cd "$tmp"
cyclic_tokens tokens.npy
{ tiny_model_384; cat <<'YAML'
data: {paths: [tokens.npy], seq_len: 32, seed: 7}
train: {max_steps: 12, global_batch_instances: 4, micro_batch_instances: 2, threads: 1}
optim: {lr: 1.0e-2, schedule: {type: cosine, warmup: 2, alpha_f: 0.1, t_max: 12}}
checkpoint: {interval: 4, keep: 2}
YAML
} > tiny.yaml
"$BIN" train tiny.yaml --run-dir straight > straight.out 2>&1 || { echo "FAIL: straight run"; cat straight.out; fail=1; }

# Killed after step 10 (checkpoint 8 made complete first by a run that stops at 8).
"$BIN" train tiny.yaml --run-dir killed --set train.max_steps=8 > k1.out 2>&1
REPLICA_FAULT=step:10 "$BIN" train tiny.yaml --run-dir killed > k2.out 2>&1; rc=$?
check "REPLICA_FAULT=step:10 kills with SIGKILL (got $rc)" '[ $rc -eq 137 ]'
check "killed run's metrics stop at step 10" '[ "$(tail -1 killed/metrics.jsonl | jq .step)" = 10 ]'
"$BIN" train tiny.yaml --run-dir killed > k3.out 2>&1 || { echo "FAIL: restart"; cat k3.out; fail=1; }
check "restart resumes from step 8" 'grep -q "resuming from .*step-00000008" k3.out'
"$BIN" compare straight killed --json > k.json; rc=$?
check "killed+resumed == straight, bit-identical (exit $rc)" \
  '[ $rc -eq 0 ] && jq -e ".pass and .steps.compared == 12 and ([.metrics[].max_abs_diff] | max) == 0" k.json >/dev/null'

# Killed inside the step-8 checkpoint write, after the rename but before DONE.
REPLICA_FAULT=checkpoint:8:before-done "$BIN" train tiny.yaml --run-dir ckill > c1.out 2>&1; rc=$?
check "REPLICA_FAULT=checkpoint:8:before-done kills (got $rc)" '[ $rc -eq 137 ]'
check "step-8 directory exists without DONE" \
  '[ -f ckill/checkpoints/step-00000008/MANIFEST.json ] && [ ! -f ckill/checkpoints/step-00000008/DONE ]'
"$BIN" train tiny.yaml --run-dir ckill > c2.out 2>&1 || { echo "FAIL: restart"; cat c2.out; fail=1; }
check "incomplete checkpoint reported and skipped" \
  'grep -q "skipping checkpoint ckill/checkpoints/step-00000008.*no DONE marker" c2.out && grep -q "resuming from .*step-00000004" c2.out'
"$BIN" compare straight ckill > /dev/null; rc=$?
check "killed-in-checkpoint+resumed == straight (exit $rc)" '[ $rc -eq 0 ]'

# Killed while writing the files (inside step-4.tmp): nothing valid, a fresh start, same result.
REPLICA_FAULT=checkpoint:4 "$BIN" train tiny.yaml --run-dir fkill > f1.out 2>&1; rc=$?
check "REPLICA_FAULT=checkpoint:4 kills (got $rc)" '[ $rc -eq 137 ] && [ -d fkill/checkpoints/step-00000004.tmp ]'
"$BIN" train tiny.yaml --run-dir fkill > f2.out 2>&1 || { echo "FAIL: restart"; cat f2.out; fail=1; }
check "leftover .tmp removed" '[ ! -e fkill/checkpoints/step-00000004.tmp ]'
"$BIN" compare straight fkill > /dev/null; rc=$?
check "killed-in-files+restarted == straight (exit $rc)" '[ $rc -eq 0 ]'

# A different trajectory is caught, at its first step.
"$BIN" train tiny.yaml --run-dir other --set optim.lr=0.02 > o.out 2>&1
"$BIN" compare straight other --json > o.json; rc=$?
check "different lr: exit 1, first diff at step 1 (got $rc)" \
  '[ $rc -eq 1 ] && jq -e ".first_diff.step == 1" o.json >/dev/null'

[ $fail -eq 0 ] && echo "compare.sh: all checks passed"
exit $fail

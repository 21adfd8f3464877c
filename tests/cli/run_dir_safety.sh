#!/usr/bin/env bash
# One trainer per run directory, and nothing of a run lost at start-up:
#  - a second `replica train` on a run directory in use exits 2 naming the holder's pid and host,
#    and the first trains on undisturbed (metrics.jsonl one line per step, checkpoints kept);
#  - the lock dies with its holder: after SIGKILL the next trainer resumes at once;
#  - an unreadable RUN/checkpoints (a regular file, a symlink loop) is refused at start-up (exit 2,
#    path named) with metrics.jsonl and train history untouched.
#   usage: run_dir_safety.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "$0")/lib.sh"
first=
_cli_cleanup_extra='[ -n "$first" ] && kill -KILL $first 2>/dev/null'
cli_init

arith_tokens "$tmp/tokens.npy" 0 300
{ tiny_model_256; cat <<'YAML'; } > "$tmp/tiny.yaml"
data: {paths: [tokens.npy], seq_len: 32, seed: 3}
train: {max_steps: 40, global_batch_instances: 8, micro_batch_instances: 2, threads: 1}
optim: {lr: 3.0e-3, schedule: {type: cosine, warmup: 5}}
checkpoint: {interval: 5, keep: 2}
YAML

# --- a second trainer on a live run ---
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/run" --set train.max_steps=100000 \
  --set optim.schedule.t_max=40 --quiet > "$tmp/first.log" 2>&1 &
first=$!
# Until a finished checkpoint exists (at most 60 s). Any step: with keep 2 a fast machine has
# already replaced step 5 by the time the next poll looks.
have_checkpoint() { compgen -G "$tmp/run/checkpoints/step-*/DONE" > /dev/null; }
for _ in $(seq 1 600); do
  have_checkpoint && break
  sleep 0.1
done
have_checkpoint || { echo "FAIL: first trainer made no checkpoint"; cat "$tmp/first.log"; exit 1; }
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/run" --quiet > "$tmp/second.out" 2> "$tmp/second.err"
rc=$?
if [ $rc -ne 2 ]; then
  echo "FAIL: second trainer: exit $rc, expected 2"; cat "$tmp/second.err"; fail=1
elif ! grep -q "in use" "$tmp/second.err" || ! grep -q "pid $first on host $(hostname)" "$tmp/second.err"; then
  echo "FAIL: the refusal does not name the holder (pid $first): $(cat "$tmp/second.err")"; fail=1
else
  echo "ok: second trainer refused: $(cat "$tmp/second.err")"
fi
sleep 1
kill -0 $first 2>/dev/null || { echo "FAIL: the first trainer stopped"; cat "$tmp/first.log"; fail=1; }
have_checkpoint || { echo "FAIL: the first trainer's checkpoints are gone"; fail=1; }
kill -KILL $first; wait $first 2>/dev/null; first=
python3 - "$tmp/run/metrics.jsonl" <<'PY' || fail=1
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if l.strip()]
ok = steps == list(range(1, len(steps) + 1)) and len(steps) >= 5
print(("ok" if ok else "FAIL") + f": metrics.jsonl steps 1..{len(steps)}, once each" )
sys.exit(0 if ok else 1)
PY

# --- the lock died with its SIGKILLed holder: the next trainer resumes at once ---
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/run" --set train.max_steps=12 \
  --set optim.schedule.t_max=40 --quiet > "$tmp/third.log" 2>&1 \
  || { echo "FAIL: trainer after SIGKILL: exit $?"; cat "$tmp/third.log"; fail=1; }
grep -q "resuming from" "$tmp/third.log" || grep -q "nothing to do" "$tmp/third.log" \
  || { echo "FAIL: did not resume"; cat "$tmp/third.log"; fail=1; }
[ -f "$tmp/run/.lock" ] || { echo "FAIL: no RUN/.lock"; fail=1; }

# --- an unreadable RUN/checkpoints is refused, nothing truncated ---
for kind in file loop; do
  d="$tmp/unreadable-$kind"
  mkdir -p "$d"
  printf '{"step": 1, "loss": 5.0}\n{"step": 2, "loss": 4.0}\n' > "$d/metrics.jsonl"
  cp "$d/metrics.jsonl" "$tmp/metrics.before"
  if [ $kind = file ]; then
    echo "not a directory" > "$d/checkpoints"
  else
    ln -s "$d/loop2" "$d/loop1"; ln -s "$d/loop1" "$d/loop2"; ln -s "$d/loop1" "$d/checkpoints"
  fi
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$d" --quiet > /dev/null 2> "$tmp/err"
  rc=$?
  if [ $rc -ne 2 ] || ! grep -q "$d/checkpoints" "$tmp/err"; then
    echo "FAIL: checkpoints as a $kind: exit $rc: $(cat "$tmp/err")"; fail=1
  elif ! cmp -s "$d/metrics.jsonl" "$tmp/metrics.before"; then
    echo "FAIL: checkpoints as a $kind: metrics.jsonl was changed"; fail=1
  else
    echo "ok: checkpoints as a $kind -> $(tail -1 "$tmp/err")"
  fi
done

cli_finish

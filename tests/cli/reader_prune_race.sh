#!/usr/bin/env bash
# Readers of a run's newest checkpoint beside a trainer that saves every step and keeps one
# (checkpoint.keep 1, so every save prunes the one before): `eval`, `generate` and `convert` of the
# run directory always succeed once a checkpoint exists. The checkpoint a reader chose may be
# removed while it reads it; it then reads the newest one again (docs/checkpoints.md, "Readers
# beside a running trainer").   usage: reader_prune_race.sh <replica-binary> <repo-root>
set -u
BIN=$1
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
export OMP_NUM_THREADS=1

cyclic_tokens "$tmp/tokens.npy"
{ tiny_model_384; cat <<'YAML'
data: {paths: [tokens.npy], seq_len: 32, seed: 3}
train: {max_steps: 100000, global_batch_instances: 2, micro_batch_instances: 2, threads: 1,
        log_interval: 1000}
optim: {lr: 1.0e-3, schedule: {type: constant, warmup: 0}}
checkpoint: {interval: 1, keep: 1}
YAML
} > "$tmp/run.yaml"
printf '{"id": "a", "text": "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"}\n' > "$tmp/held.jsonl"

"$BIN" train "$tmp/run.yaml" --run-dir "$tmp/run" > "$tmp/train.log" 2>&1 &
train_pid=$!
_cli_cleanup_extra='kill $train_pid 2> /dev/null; wait $train_pid 2> /dev/null'
for _ in $(seq 1200); do  # until the first checkpoint is complete (a minute at most)
  ls "$tmp"/run/checkpoints/step-*/DONE > /dev/null 2>&1 && break
  sleep 0.05
done
ls "$tmp"/run/checkpoints/step-*/DONE > /dev/null 2>&1 \
  || { echo "FAIL: no checkpoint after a minute: $(tail -5 "$tmp/train.log")"; exit 1; }

# Each reader in turn for about 6 seconds; every one must exit 0.
runs=0 failures=0
end=$(( $(date +%s) + 6 ))
while [ "$(date +%s)" -lt "$end" ] && kill -0 $train_pid 2> /dev/null; do
  for cmd in eval generate convert; do
    case $cmd in
      eval) "$BIN" eval --model "$tmp/run" --tokenizer bytes --seq-len 32 --eval "$tmp/held.jsonl" \
              --json > /dev/null 2> "$tmp/err" ;;
      generate) "$BIN" generate --model "$tmp/run" --tokenizer bytes --prompt "1 2 3" \
                  --max-new-tokens 2 > /dev/null 2> "$tmp/err" ;;
      convert) rm -rf "$tmp/hf"
               "$BIN" convert --from "$tmp/run" --to "$tmp/hf" --tokenizer none > /dev/null \
                 2> "$tmp/err" ;;
    esac
    rc=$?
    runs=$((runs + 1))
    if [ $rc -ne 0 ]; then
      failures=$((failures + 1))
      echo "FAIL: $cmd of the run directory beside the pruning trainer: exit $rc: $(grep error "$tmp/err")"
    fi
  done
done
check "the trainer was still running (so every read raced its saves)" 'kill -0 $train_pid 2> /dev/null'
check "$runs reads beside the pruning trainer, $failures failed" '[ $runs -ge 3 ] && [ $failures -eq 0 ]'
cli_finish

#!/usr/bin/env bash
# Full disk while checkpointing: on a small tmpfs, a checkpoint that does not fit fails with a
# clear error naming the path and "No space left on device", leaves no partial directory, and the
# previous checkpoint stays complete and verified. Needs root (mount); skips with a message
# otherwise.   usage: checkpoint_fulldisk.sh <replica-binary> <repo-root>
set -u
BIN=$(realpath "$1")
ROOT=$(realpath "$2")
_cli_cleanup_extra='umount "$mnt" 2>/dev/null'
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
mnt="$tmp/mnt"
mkdir -p "$mnt"

if ! mount -t tmpfs -o size=4m tmpfs "$mnt" 2>"$tmp/mount.err"; then
  echo "SKIP: cannot mount a tmpfs here ($(cat "$tmp/mount.err")); full-disk test not run"
  exit 0
fi

# --- the trainer: checkpoint 4 (2.4 MB) fits in 4 MB, checkpoint 8 does not ---
cd "$tmp"
cyclic_tokens tokens.npy
{ tiny_model_384; cat <<'YAML'
data: {paths: [tokens.npy], seq_len: 32, seed: 7}
train: {max_steps: 8, global_batch_instances: 4, micro_batch_instances: 2, threads: 1}
optim: {lr: 1.0e-2, schedule: {type: cosine, warmup: 2, alpha_f: 0.1, t_max: 8}}
checkpoint: {interval: 4, keep: 1}
YAML
} > tiny.yaml
"$BIN" train tiny.yaml --run-dir "$mnt/run" > train.out 2>&1; rc=$?
check "train exits 2 when the disk fills (got $rc)" '[ $rc -eq 2 ]'
check "error names the checkpoint path and the OS reason: $(grep error train.out)" \
  'grep "error" train.out | grep -q "checkpoints/step-00000008" && grep "error" train.out | grep -q "No space left on device"'
check "no partial step-8 directory left" \
  '[ ! -e "$mnt/run/checkpoints/step-00000008" ] && [ ! -e "$mnt/run/checkpoints/step-00000008.tmp" ]'
"$BIN" convert --from "$mnt/run" --to "$tmp/hf" --json > conv.json 2> conv.err; rc=$?
check "previous checkpoint (step 4) is intact and verifies (exit $rc: $(cat conv.err))" \
  '[ $rc -eq 0 ] && jq -e ".step == 4" conv.json > /dev/null'

# --- convert writing a checkpoint directory onto a full disk ---
umount "$mnt"
mount -t tmpfs -o size=1m tmpfs "$mnt"
"$BIN" convert --from "$ROOT/tests/data/olmo3/tiny-gqa" --to "$mnt/ckpt" > /dev/null 2> imp.err; rc=$?
check "import onto a full disk exits 2 naming path and reason ($(cat imp.err))" \
  '[ $rc -eq 2 ] && grep -q "$mnt/ckpt.tmp/model.safetensors" imp.err && grep -q "No space left on device" imp.err'
check "no partial checkpoint left" '[ -z "$(ls -A "$mnt")" ]'

[ $fail -eq 0 ] && echo "checkpoint_fulldisk.sh: all checks passed"
exit $fail

#!/usr/bin/env bash
# Output that cannot be written is an error: stdout on a full device (/dev/full) exits 2 with
# "writing to standard output failed" for every command that prints (plan, import-config, compare,
# data batch, eval, generate, decon); a file path that is a device, a FIFO or a link to one is refused naming it and left
# as it was, never replaced by a regular file (import-config --out to the full device with --force
# says no "wrote").   usage: output_errors.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init

OC=$ROOT/tests/data/reference/olmo_core_run/config.json
full() {  # full <what> <command...>: stdout to /dev/full must give exit 2 and the message
  local what=$1; shift
  "$@" > /dev/full 2> "$tmp/err"
  local rc=$?
  check "$what > /dev/full: exit $rc, expected 2 ($(cat "$tmp/err"))" "[ $rc -eq 2 ]"
  check "$what > /dev/full: message" "grep -q '^replica: error: writing to standard output failed' '$tmp/err'"
}
full "plan --json" "$BIN" plan "$ROOT/configs/demo.yaml" --json
full "plan" "$BIN" plan "$ROOT/configs/demo.yaml"
full "import-config" "$BIN" import-config "$OC"
arith_tokens "$tmp/tokens.npy" 0 50
echo "$tmp/tokens.npy" > "$tmp/paths.txt"
full "data batch" "$BIN" data batch 0 --data-paths "$tmp/paths.txt" --seq-len 16 --global-batch 4 --seed 1 \
  --tokenizer none
printf '{"step": 1, "loss": 2.5}\n' > "$tmp/m.jsonl"
full "compare" "$BIN" compare "$tmp/m.jsonl" "$tmp/m.jsonl"
# The model commands: eval and generate (JSON, and generate's streamed text), decon.
MODEL=$ROOT/tests/data/olmo3/tiny-mha
head -n 3 "$ROOT/data/eval/sotu_heldout_ppl.jsonl" > "$tmp/held.jsonl"
full "eval --json" "$BIN" eval --model "$MODEL" --tokenizer bytes --seq-len 64 --eval "$tmp/held.jsonl" \
  --json --no-progress
full "generate --json" "$BIN" generate --model "$MODEL" --tokenizer bytes --prompt hello \
  --max-new-tokens 4 --json
full "generate" "$BIN" generate --model "$MODEL" --tokenizer bytes --prompt hello --max-new-tokens 4
full "decon --json" "$BIN" decon --train "$tmp/tokens.npy" --tokenizer bytes --eval "$tmp/held.jsonl" \
  --json --no-progress
# The same commands to a pipe that reads everything succeed.
"$BIN" plan "$ROOT/configs/demo.yaml" --json | cat > /dev/null
check "plan --json | cat: exit ${PIPESTATUS[0]}" "[ ${PIPESTATUS[0]} -eq 0 ]"

# A path that is not a regular file is never replaced. The full device is a node of /dev/full's
# numbers made here, so that a replica that did replace it would not damage /dev itself.
if mknod "$tmp/full" c 1 7 2> /dev/null; then
  "$BIN" import-config "$OC" --out "$tmp/full" --force > "$tmp/out" 2> "$tmp/err"
  rc=$?
  check "--out FULL-DEVICE: exit $rc" "[ $rc -eq 2 ]"
  check "--out FULL-DEVICE: names it" "grep -q -- '--out $tmp/full: is a character device, not a regular file' '$tmp/err'"
  check "--out FULL-DEVICE: no 'wrote'" "! grep -q wrote '$tmp/err'"
  check "FULL-DEVICE still a character device" "[ -c '$tmp/full' ]"
else
  echo "note: mknod not permitted; the full-device --out case skipped"
fi
mkfifo "$tmp/fifo"
ln -s "$tmp/fifo" "$tmp/to-fifo"
ln -s /dev/null "$tmp/to-null"
for p in "$tmp/fifo" "$tmp/to-fifo" "$tmp/to-null"; do
  timeout 20 "$BIN" import-config "$OC" --out "$p" --force > /dev/null 2> "$tmp/err"
  rc=$?
  check "--out $p: exit $rc ($(cat "$tmp/err"))" "[ $rc -eq 2 ] && grep -q -- '--out $p: ' '$tmp/err'"
done
check "the FIFO is still a FIFO" "[ -p '$tmp/fifo' ]"
check "the links are still links" "[ -L '$tmp/to-fifo' ] && [ -L '$tmp/to-null' ]"
check "/dev/null still a character device" "[ -c /dev/null ]"
# A link to a regular file: the target is written, the link kept.
: > "$tmp/target.yaml"
ln -s "$tmp/target.yaml" "$tmp/link.yaml"
"$BIN" import-config "$OC" --out "$tmp/link.yaml" --force > /dev/null 2>&1
check "--out LINK-to-file: link kept, target written" "[ -L '$tmp/link.yaml' ] && [ -s '$tmp/target.yaml' ]"
cli_finish

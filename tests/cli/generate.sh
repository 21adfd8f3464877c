#!/usr/bin/env bash
# `replica generate` on the tiny fixtures (bytes tokenizer): greedy output is deterministic and the
# same from an f32 directory, a sharded bf16 export of it (same weights rounded, so compared on
# structure only) and a checkpoint; sampling with a seed repeats; prompts come from arguments or
# JSONL; tokens/s is reported on stderr; a prompt longer than the context and a missing shard exit 2
# naming the problem; a budget past the context stops there with a warning; bad --context, sampling
# flags (before the weights are read) and --prompts that are no regular file or hold no prompt exit
# 2 naming them; bytes >= 0x80 are ids 128..255; the model directory's tokenizer.json is used;
# --precision bf16 decodes on the bf16 backend (deterministic, logged), bf16-fsdp and an unknown
# precision exit 2.   usage: generate.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
DATA=$ROOT/tests/data/olmo3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
G() { "$BIN" generate --tokenizer bytes --threads 2 "$@"; }

G --model "$DATA/tiny-mha" --prompt "Hello" --max-new-tokens 12 >"$TMP/a" 2>"$TMP/err" || fail "greedy: exit $?"
head -c 5 "$TMP/a" | grep -q "^Hello" || fail "output does not start with the prompt: $(cat "$TMP/a")"
grep -q "tokens/s" "$TMP/err" || fail "no tokens/s on stderr: $(cat "$TMP/err")"
G --model "$DATA/tiny-mha" --prompt "Hello" --max-new-tokens 12 >"$TMP/b" 2>/dev/null
cmp -s "$TMP/a" "$TMP/b" || fail "greedy output differs between runs"

# JSON: one object per prompt, the budget respected; JSONL prompts.
printf '{"prompt": "The sky"}\n{"text": "Once upon"}\n' >"$TMP/p.jsonl"
G --model "$DATA/tiny-gqa" --prompts "$TMP/p.jsonl" --prompt "abc" --max-new-tokens 9 --ignore-eos \
  --json >"$TMP/j" 2>/dev/null || fail "jsonl: exit $?"
[ "$(wc -l <"$TMP/j")" -eq 3 ] || fail "expected 3 JSON lines: $(cat "$TMP/j")"
jq -e 'select(.completion_ids | length != 9)' "$TMP/j" >/dev/null && fail "a completion is not 9 tokens"
jq -s -e '.[0].prompt == "abc" and .[1].prompt == "The sky" and .[2].prompt == "Once upon"' "$TMP/j" >/dev/null \
  || fail "prompt order: $(cat "$TMP/j")"

# Sampling: the same seed repeats, another seed (almost surely) differs.
S() { G --model "$DATA/tiny-mha" --prompt "xyz" --max-new-tokens 16 --ignore-eos --temperature 1.5 \
        --top-k 50 --top-p 0.95 --json "$@" 2>/dev/null | jq -c .completion_ids; }
[ "$(S --seed 1)" = "$(S --seed 1)" ] || fail "same seed, different samples"
[ "$(S --seed 1)" != "$(S --seed 2)" ] || fail "seeds 1 and 2 gave the same 16 samples"

# A checkpoint and a sharded bf16 export of it both generate.
"$BIN" convert --from "$DATA/tiny-gqa" --to "$TMP/ckpt" >/dev/null || fail "import"
"$BIN" convert --from "$TMP/ckpt" --to "$TMP/bf16" --dtype bf16 --max-shard-size 600000 >/dev/null || fail "export"
[ -f "$TMP/bf16/model-00002-of-00003.safetensors" ] || fail "expected 3 shards: $(ls "$TMP/bf16")"
G --model "$TMP/ckpt" --prompt "abc" --max-new-tokens 5 --json 2>/dev/null | jq -e '.completion_ids | length > 0' >/dev/null \
  || fail "checkpoint generate"
G --model "$TMP/bf16" --prompt "abc" --max-new-tokens 5 --json 2>/dev/null | jq -e '.completion_ids | length > 0' >/dev/null \
  || fail "bf16 generate"
G --model "$DATA/tiny-gqa" --prompt "abc" --max-new-tokens 5 --json 2>/dev/null >"$TMP/f32.json"
G --model "$TMP/ckpt" --prompt "abc" --max-new-tokens 5 --json 2>/dev/null >"$TMP/ck.json"
cmp -s "$TMP/f32.json" "$TMP/ck.json" || fail "checkpoint and HF directory generate differently"

expect_bad() {  # expect_bad NAME EXPECTED_TEXT ARGS...
  local name=$1 want=$2
  shift 2
  G "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$name: expected exit 2, got $rc ($(cat "$TMP/err"))"
  grep -q -- "$want" "$TMP/err" || fail "$name: stderr does not mention '$want': $(cat "$TMP/err")"
  echo "ok: $name -> $(cat "$TMP/err")"
}
expect_bad "prompt longer than the context" "22 tokens: the context of 8 (--context) leaves no room" \
  --model "$DATA/tiny-mha" --prompt "a prompt of many bytes" --context 8 --max-new-tokens 1
# A budget past the context stops at the context with a warning (transformers stops at max_length).
G --model "$DATA/tiny-mha" --prompt "abc" --max-new-tokens 300 --ignore-eos --json >"$TMP/long" 2>"$TMP/err" \
  || fail "budget past max_position_embeddings: exit $? ($(cat "$TMP/err"))"
jq -e '.completion_ids | length == 253' "$TMP/long" >/dev/null || fail "budget past the context: not 253 new tokens: $(cat "$TMP/long")"
grep -q "warning: .*more than the context of 256 (max_position_embeddings): stopping after 253 new tokens" "$TMP/err" \
  || fail "budget past the context: no warning: $(cat "$TMP/err")"
G --model "$DATA/tiny-mha" --prompt "abc" --context 8 --max-new-tokens 20 --ignore-eos --json >"$TMP/long" 2>"$TMP/err" \
  || fail "budget past --context: exit $?"
jq -e '.completion_ids | length == 5' "$TMP/long" >/dev/null || fail "budget past --context 8: $(cat "$TMP/long")"
expect_bad "context 0" "--context: must be at least 1 (got 0)" --model "$DATA/tiny-mha" --prompt "abc" --context 0
expect_bad "context -5" "--context: must be at least 1 (got -5)" --model "$DATA/tiny-mha" --prompt "abc" --context -5
# Sampling flags are checked before the weights are read (a missing model is not what is said).
for t in -1 inf nan; do
  expect_bad "temperature $t" "--temperature must be a finite number >= 0 (0 = greedy; .*), got $t" \
    --model "$TMP/no-such-model" --prompt "a" --temperature $t
done
# A budget of no new token is refused by its flag (it was blamed on the context).
for n in 0 -3; do
  expect_bad "max-new-tokens $n" "--max-new-tokens: must be at least 1 (got $n)" \
    --model "$DATA/tiny-mha" --prompt "a" --max-new-tokens $n
done
expect_bad "top-k -2" "top_k\|top-k" --model "$TMP/no-such-model" --prompt "a" --temperature 1 --top-k -2
# --tokenizer bytes: bytes 0x80..0xff are ids 128..255 (UTF-8 text is not refused).
G --model "$DATA/tiny-mha" --prompt "héllo €" --max-new-tokens 2 --json >"$TMP/u" 2>"$TMP/err" \
  || fail "non-ASCII prompt with --tokenizer bytes: exit $? ($(cat "$TMP/err"))"
jq -e '.prompt_tokens == 10' "$TMP/u" >/dev/null || fail "non-ASCII prompt: expected 10 byte ids: $(cat "$TMP/u")"
# --prompts: a regular file only, named when it cannot be used; an empty file is named.
mkfifo "$TMP/fifo"
timeout 20 "$BIN" generate --tokenizer bytes --model "$DATA/tiny-mha" --prompts "$TMP/fifo" >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--prompts $TMP/fifo: is a FIFO" "$TMP/err" || fail "--prompts FIFO: exit $rc: $(cat "$TMP/err")"
mkdir "$TMP/dir"
expect_bad "--prompts directory" "--prompts $TMP/dir: is a directory" --model "$DATA/tiny-mha" --prompts "$TMP/dir"
expect_bad "--prompts /dev/zero" "--prompts /dev/zero: is a character device" --model "$DATA/tiny-mha" --prompts /dev/zero
: >"$TMP/empty.jsonl"
expect_bad "--prompts empty" "--prompts $TMP/empty.jsonl: the file is empty" --model "$DATA/tiny-mha" --prompts "$TMP/empty.jsonl"
# Without --tokenizer, the model directory's tokenizer.json is used.
cp -r "$DATA/tiny-mha" "$TMP/withtok"
cp "$ROOT/tests/data/reference/olmo_core_run/tokenizer.json" "$TMP/withtok/"
"$BIN" generate --threads 2 --model "$TMP/withtok" --prompt "the cat" --max-new-tokens 3 --json >"$TMP/t" 2>"$TMP/err" \
  || fail "model directory's tokenizer.json: exit $? ($(cat "$TMP/err"))"
grep -q "tokenizer $TMP/withtok/tokenizer.json (the model directory's)" "$TMP/err" || fail "tokenizer.json not said: $(cat "$TMP/err")"
n=$(jq '.prompt_tokens' "$TMP/t")
[ "$n" -lt 7 ] || fail "model directory's tokenizer.json: 'the cat' as $n ids (bytes?)"
rm "$TMP/bf16/model-00002-of-00003.safetensors"
expect_bad "missing shard" "model-00002-of-00003.safetensors" --model "$TMP/bf16" --prompt "abc"
expect_bad "no prompt" "--prompt" --model "$DATA/tiny-mha"
expect_bad "bad top-p" "top-p" --model "$DATA/tiny-mha" --prompt "a" --temperature 1 --top-p 0
# bf16 decoding: the bf16 backend, deterministic; bf16-fsdp and unknown precisions refused.
G --model "$DATA/tiny-yarn" --prompt "Hello" --max-new-tokens 20 --ignore-eos --json --precision bf16 \
  >"$TMP/b16a" 2>"$TMP/err" || fail "bf16: exit $? ($(cat "$TMP/err"))"
grep -q "precision bf16" "$TMP/err" || fail "bf16: compute settings not logged: $(cat "$TMP/err")"
G --model "$DATA/tiny-yarn" --prompt "Hello" --max-new-tokens 20 --ignore-eos --json --precision bf16 \
  >"$TMP/b16b" 2>/dev/null
cmp -s "$TMP/b16a" "$TMP/b16b" || fail "bf16 decoding differs between runs"
[ "$(jq '.completion_ids | length' "$TMP/b16a")" -eq 20 ] || fail "bf16: $(cat "$TMP/b16a")"
expect_bad "bf16-fsdp" "bf16-fsdp" --model "$DATA/tiny-mha" --prompt "a" --precision bf16-fsdp
expect_bad "unknown precision" "--precision" --model "$DATA/tiny-mha" --prompt "a" --precision fp8
echo "generate.sh: all checks passed"

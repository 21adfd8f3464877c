#!/usr/bin/env bash
# `replica generate` on the tiny fixtures (bytes tokenizer): greedy output is deterministic and the
# same from an f32 directory, a sharded bf16 export of it (same weights rounded, so compared on
# structure only) and a checkpoint; sampling with a seed repeats; prompts come from arguments or
# JSONL; tokens/s is reported on stderr; a prompt longer than the context and a missing shard exit 2
# naming the problem.   usage: generate.sh <replica-binary> <repo-root>
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
expect_bad "prompt longer than the context" "more than the context of 8" \
  --model "$DATA/tiny-mha" --prompt "a prompt of many bytes" --context 8 --max-new-tokens 1
expect_bad "beyond max_position_embeddings" "max_position_embeddings" \
  --model "$DATA/tiny-mha" --prompt "abc" --max-new-tokens 300
rm "$TMP/bf16/model-00002-of-00003.safetensors"
expect_bad "missing shard" "model-00002-of-00003.safetensors" --model "$TMP/bf16" --prompt "abc"
expect_bad "no prompt" "--prompt" --model "$DATA/tiny-mha"
expect_bad "bad top-p" "top-p" --model "$DATA/tiny-mha" --prompt "a" --temperature 1 --top-p 0
echo "generate.sh: all checks passed"

#!/usr/bin/env bash
# Numbers past what a command can use are refused naming the flag or key (exit 2), not clamped or
# replaced by a default: --threads 0, -3, 100000 and 2^31 on every command that takes it, and
# train.threads past 1024; eval --seq-len beyond the model's context; plan --memory 0; data batch
# 2^63 (past int64) and --data-paths without --seed. parity --against defaults --seq-len to
# min(512, the models' contexts), so a model of a 256-position context is compared by default.
# Precision spellings fp32/f32/float32 and bf16/bfloat16 are accepted everywhere.
#   usage: input_bounds.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
MODEL=$ROOT/tests/data/olmo3/tiny-mha   # max_position_embeddings 256

refused() {  # refused <what> <expected stderr text> <command...>
  local what=$1 want=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  check "$what: exit $rc, expected 2 ($(head -c 300 "$tmp/err"))" "[ $rc -eq 2 ]"
  check "$what: stderr names '$want': $(head -c 300 "$tmp/err")" "grep -qF -- \"\$want\" '$tmp/err'"
  check "$what: nothing on stdout" "[ ! -s '$tmp/out' ]"
}

head -n 4 "$ROOT/data/eval/sotu_heldout_ppl.jsonl" > "$tmp/held.jsonl"
for t in 0 -3 100000 2147483648; do
  refused "eval --threads $t" "--threads: must be between 1 and 1024 (got $t)" \
    "$BIN" eval --model "$MODEL" --tokenizer bytes --eval "$tmp/held.jsonl" --threads "$t"
done
refused "generate --threads 0" "--threads: must be between 1 and 1024 (got 0)" \
  "$BIN" generate --model "$MODEL" --tokenizer bytes --prompt a --threads 0
refused "parity --threads -1" "--threads: must be between 1 and 1024 (got -1)" \
  "$BIN" parity --model "$MODEL" --against "$MODEL" --threads -1
refused "bench --threads 5000" "--threads: must be between 1 and 1024 (got 5000)" \
  "$BIN" bench --threads 5000
arith_tokens "$tmp/tokens.npy" 0 20
for t in 0 -3 100000 2147483648; do
  refused "tokenize --threads $t" "--threads: must be between 1 and 1024 (got $t)" \
    "$BIN" tokenize --tokenizer dolma2 "$tmp/held.jsonl" --out "$tmp/tok-$t" --threads "$t"
  check "tokenize --threads $t: no output directory" "[ ! -e '$tmp/tok-$t' ]"
  refused "decon --threads $t" "--threads: must be between 1 and 1024 (got $t)" \
    "$BIN" decon --train "$tmp/tokens.npy" --tokenizer bytes --eval "$tmp/held.jsonl" --threads "$t"
done
"$BIN" tokenize --tokenizer dolma2 "$tmp/held.jsonl" --out "$tmp/tok-1" --threads 1 > /dev/null 2>&1
check "tokenize --threads 1: accepted (exit $?)" "[ -d '$tmp/tok-1' ]"
"$BIN" decon --train "$tmp/tokens.npy" --tokenizer bytes --eval "$tmp/held.jsonl" --threads 1024 \
  --json --no-progress > "$tmp/d.json" 2> /dev/null
check "decon --threads 1024: accepted (exit $?)" "jq -e '.eval_items == 4' '$tmp/d.json' > /dev/null"
refused "train.threads 100000" "config key 'train.threads': 100000 is larger than 1024" \
  "$BIN" plan "$ROOT/configs/demo.yaml" --set train.threads=100000
refused "train.threads -3" "config key 'train.threads': expected >= 0, got -3" \
  "$BIN" plan "$ROOT/configs/demo.yaml" --set train.threads=-3

refused "eval --seq-len 300 > context 256" "--seq-len 300: more than the model's context (max_position_embeddings 256)" \
  "$BIN" eval --model "$MODEL" --tokenizer bytes --eval "$tmp/held.jsonl" --seq-len 300
"$BIN" eval --model "$MODEL" --tokenizer bytes --eval "$tmp/held.jsonl" --seq-len 256 --threads 2 > /dev/null 2>&1
check "eval --seq-len 256 (= the context) runs" "[ $? -eq 0 ]"
refused "plan --memory 0" "--memory 0: must be more than 0 bytes" \
  "$BIN" plan "$ROOT/configs/demo.yaml" --memory 0

arith_tokens "$tmp/tokens.npy" 0 50
echo "$tmp/tokens.npy" > "$tmp/paths.txt"
B=(--data-paths "$tmp/paths.txt" --seq-len 16 --global-batch 4 --tokenizer none)
refused "data batch 2^63" "N: must be between -9223372036854775808 and 9223372036854775807 (got 9223372036854775808)" \
  "$BIN" data batch 9223372036854775808 "${B[@]}" --seed 1
refused "data batch --step 2^64" "--step: must be between" \
  "$BIN" data batch --step 18446744073709551616 "${B[@]}" --seed 1
refused "data batch --data-paths without --seed" "--data-paths needs --seed" \
  "$BIN" data batch 0 "${B[@]}"
"$BIN" data batch 0 "${B[@]}" --seed 0 > /dev/null 2>&1
check "data batch --seed 0 runs" "[ $? -eq 0 ]"

out=$("$BIN" parity --model "$MODEL" --against "$MODEL" --threads 2 --no-progress --json 2> "$tmp/err")
rc=$?
check "parity --against, default --seq-len on a 256-position model: exit $rc ($(cat "$tmp/err"))" "[ $rc -eq 0 ]"
check "parity --against default: 256 positions" "echo '$out' | jq -e '.positions == 256' > /dev/null"
# One precision parser: fp32, f32, float32 and bf16, bfloat16 (any case) wherever a precision or a
# dtype is given; other words are refused listing the spellings.
for p in fp32 f32 float32 FP32; do
  "$BIN" plan "$ROOT/configs/demo.yaml" --set compute.precision=$p --json > "$tmp/plan.json" 2> "$tmp/err"
  check "compute.precision=$p: $(cat "$tmp/err")" "jq -e '.precision == \"fp32\"' '$tmp/plan.json' > /dev/null"
done
for p in bf16 bfloat16 BFloat16; do
  "$BIN" plan "$ROOT/configs/demo.yaml" --set compute.precision=$p --json > "$tmp/plan.json" 2> "$tmp/err"
  check "compute.precision=$p: $(cat "$tmp/err")" "jq -e '.precision == \"bf16\"' '$tmp/plan.json' > /dev/null"
done
for p in f32 float32 bfloat16; do
  "$BIN" eval --model "$MODEL" --tokenizer bytes --eval "$tmp/held.jsonl" --seq-len 64 --threads 2 \
    --precision $p > /dev/null 2> "$tmp/err"
  check "eval --precision $p: $(cat "$tmp/err")" "[ $? -eq 0 ]"
done
for p in fp32 float32 bfloat16; do
  "$BIN" convert --from "$MODEL" --to "$tmp/ck-$p" > /dev/null 2>&1
  "$BIN" convert --from "$tmp/ck-$p" --to "$tmp/hf-$p" --dtype $p > /dev/null 2> "$tmp/err"
  check "convert --dtype $p: $(cat "$tmp/err")" "[ $? -eq 0 ]"
done
spellings="expected fp32 (or f32, float32) or bf16 (or bfloat16), or bf16-fsdp, got 'fp16'"
refused "eval --precision fp16" "--precision: $spellings" \
  "$BIN" eval --model "$MODEL" --tokenizer bytes --eval "$tmp/held.jsonl" --precision fp16
refused "parity --precision fp16" "--precision: $spellings" \
  "$BIN" parity --model "$MODEL" --against "$MODEL" --precision fp16
refused "compute.precision fp16" "config key 'compute.precision': $spellings" \
  "$BIN" plan "$ROOT/configs/demo.yaml" --set compute.precision=fp16
refused "convert --dtype fp16" "--dtype: expected fp32 (or f32, float32) or bf16 (or bfloat16), got 'fp16'" \
  "$BIN" convert --from "$tmp/ck-fp32" --to "$tmp/hf-fp16" --dtype fp16
cli_finish

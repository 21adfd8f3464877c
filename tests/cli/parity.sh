#!/usr/bin/env bash
# replica parity on the float64 fixtures: all three (tiny-yarn with YaRN on its full-attention
# layer) pass the strict thresholds (logits and gradients);
# a tighter gradient bound fails with exit 1; dumps that do not fit the model, missing and
# truncated files are refused with exit 2 and a message naming the problem.
set -u
BIN=$1
ROOT=$2
DATA=$ROOT/tests/data/olmo3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for f in tiny-mha tiny-gqa tiny-yarn; do
  out=$("$BIN" parity --model "$DATA/$f" --reference "$DATA/$f/io.safetensors" --grads \
        --max-kl 1e-8 --min-top1 1.0 --json --threads 2)
  rc=$?
  echo "$out"
  [ $rc -eq 0 ] || fail "$f: exit $rc"
  echo "$out" | grep -q '"pass": true' || fail "$f: pass is not true"
  echo "$out" | grep -q '"top1_agreement": 1.0' || fail "$f: top-1 agreement below 1"
  for k in positions kl_mean kl_max max_abs_logit_diff loss loss_ref grad_max_rel_err; do
    echo "$out" | grep -q "\"$k\": [0-9]" || fail "$f: field $k missing or not a number"
  done
done

# Human-readable output without --json.
"$BIN" parity --model "$DATA/tiny-mha" --reference "$DATA/tiny-mha/io.safetensors" | grep -q PASS \
  || fail "text output lacks PASS"

# A check that does not hold: exit 1, JSON still printed.
out=$("$BIN" parity --model "$DATA/tiny-mha" --reference "$DATA/tiny-mha/io.safetensors" --grads \
      --max-grad-rel 1e-12 --json)
rc=$?
[ $rc -eq 1 ] || fail "grad bound 1e-12: expected exit 1, got $rc"
echo "$out" | grep -q '"pass": false' || fail "grad bound 1e-12: pass is not false"

expect_bad() {  # expect_bad NAME EXPECTED_TEXT ARGS...
  local name=$1 want=$2
  shift 2
  "$BIN" parity "$@" --json >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$name: expected exit 2, got $rc ($(cat "$TMP/err"))"
  grep -q -- "$want" "$TMP/err" || fail "$name: stderr does not mention '$want': $(cat "$TMP/err")"
  [ -s "$TMP/out" ] && fail "$name: printed output on bad input"
  echo "ok: $name -> $(cat "$TMP/err")"
}
# Dump of another model: logits [3, 40, 384] against vocab 512.
expect_bad "mismatched shapes" "'logits'" --model "$DATA/tiny-mha" --reference "$DATA/tiny-gqa/io.safetensors"
expect_bad "missing reference" "nope.safetensors" --model "$DATA/tiny-mha" --reference "$TMP/nope.safetensors"
expect_bad "missing model dir" "no-model" --model "$TMP/no-model" --reference "$DATA/tiny-mha/io.safetensors"
head -c 600000 "$DATA/tiny-mha/io.safetensors" >"$TMP/truncated.safetensors"
expect_bad "truncated reference" "truncated.safetensors" --model "$DATA/tiny-mha" --reference "$TMP/truncated.safetensors"
# A file without input_ids (the training-run file) is not a dump.
expect_bad "not a dump" "input_ids" --model "$DATA/tiny-mha" --reference "$DATA/tiny-mha/train.safetensors"
# Model weights of the wrong shape: tiny-mha's config with tiny-gqa's weights.
mkdir -p "$TMP/wrong"
cp "$DATA/tiny-mha/config.json" "$TMP/wrong/"
cp "$DATA/tiny-gqa/model.safetensors" "$TMP/wrong/"
expect_bad "weights of another model" "model.safetensors" --model "$TMP/wrong" --reference "$DATA/tiny-mha/io.safetensors"
# Bad RoPE settings in config.json: exit 2 naming the field by its JSON path.
n_bad=0
bad_yarn() {  # bad_yarn NAME EXPECTED_TEXT JQ_EDIT
  n_bad=$((n_bad + 1))
  local dir="$TMP/bad-yarn-$n_bad"
  mkdir -p "$dir"
  cp "$DATA/tiny-yarn/model.safetensors" "$dir/"
  jq "$3" "$DATA/tiny-yarn/config.json" >"$dir/config.json"
  expect_bad "$1" "$2" --model "$dir" --reference "$DATA/tiny-yarn/io.safetensors"
}
bad_yarn "unknown rope_type" "'rope_scaling.rope_type'" '.rope_scaling.rope_type = "yarnn"'
bad_yarn "yarn factor below 1" "'rope_scaling.factor'" '.rope_scaling.factor = 0.5'
bad_yarn "yarn factor missing" "'rope_scaling.factor'" 'del(.rope_scaling.factor)'
bad_yarn "per-layer-type factor below 1" "'rope_parameters.full_attention.factor'" \
  '.rope_parameters = {full_attention: (.rope_scaling + {factor: 0.5})} | del(.rope_scaling)'
"$BIN" parity --model "$DATA/tiny-mha" >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing --reference: expected exit 2"
# --against: two models on the same tokens. A model against itself: KL 0, top-1 1, exit 0; against
# its bf16-rounded export: small but nonzero differences, still the same argmax nearly everywhere;
# a tighter KL bound fails with exit 1; a model of another vocabulary is refused with exit 2.
out=$("$BIN" parity --model "$DATA/tiny-gqa" --against "$DATA/tiny-gqa" --seq-len 40 --batch 2 --seed 3 --json)
rc=$?
[ $rc -eq 0 ] || fail "against itself: exit $rc"
echo "$out" | jq -e '.kl_max == 0 and .top1_agreement == 1 and .max_abs_logit_diff == 0 and .positions == 80 and .loss == .loss_ref' >/dev/null \
  || fail "against itself: $out"
"$BIN" convert --from "$DATA/tiny-gqa" --to "$TMP/ck" >/dev/null || fail "import"
"$BIN" convert --from "$TMP/ck" --to "$TMP/bf16" --dtype bf16 --max-shard-size 600000 >/dev/null || fail "export"
for i in $(seq 0 99); do printf "\\$(printf '%03o' $(( (i * 37) % 256 )))\\000\\000\\000"; done >"$TMP/tokens.u32"
out=$("$BIN" parity --model "$TMP/bf16" --against "$DATA/tiny-gqa" --tokens "$TMP/tokens.u32" --seq-len 50 \
      --max-kl 1e-2 --min-top1 0.9 --chunk-rows 7 --json)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "bf16 against f32: exit $rc"
echo "$out" | jq -e '.kl_max > 0 and .kl_max < 1e-2 and .max_abs_logit_diff > 0 and .positions == 50' >/dev/null \
  || fail "bf16 against f32: $out"
"$BIN" parity --model "$TMP/bf16" --against "$DATA/tiny-gqa" --tokens "$TMP/tokens.u32" --seq-len 50 \
  --max-kl 1e-12 --json >/dev/null
[ $? -eq 1 ] || fail "bf16 against f32 with --max-kl 1e-12: expected exit 1"
expect_bad "against another vocabulary" "vocab_size" --model "$DATA/tiny-mha" --against "$DATA/tiny-gqa"
expect_bad "too few tokens" "tokens.u32" --model "$DATA/tiny-gqa" --against "$DATA/tiny-gqa" --tokens "$TMP/tokens.u32" --seq-len 101
expect_bad "beyond max_position_embeddings" "max_position_embeddings" --model "$DATA/tiny-gqa" --against "$DATA/tiny-gqa" --seq-len 300
rm "$TMP/bf16/model-00001-of-00003.safetensors"
expect_bad "missing shard" "model-00001-of-00003.safetensors" --model "$TMP/bf16" --against "$DATA/tiny-gqa"
echo "parity.sh: all checks passed"

#!/usr/bin/env bash
# `train --allow-unsupported` on an OLMo-core config.json: a refused setting with a substitute
# (float8 linear layers: the layers compute in compute.precision) is trained past, named on stderr
# and in train.log, and the run is bit for bit the run of the same config without that setting; a
# refused setting with nothing to stand in (param_dtype float16) still stops train, exit 2, with
# nothing written. plan --allow-unsupported reports both.
#   usage: allow_unsupported.sh <replica-binary> <repo-root>
set -u
BIN=$1
SRC=$2
. "$(dirname "$0")/lib.sh"
cli_init
FIX=$SRC/tests/data/reference/olmo_core_run
tok_prefix=$(awk -F'\t' '$1 == "tokens" {print $2}' "$FIX/paths.txt")
export OMP_NUM_THREADS=1

"$BIN" tokenize --tokenizer "$FIX/tokenizer.json" "$SRC/data/corpus/moby_dick.jsonl.zst" \
  "$SRC/data/corpus/sotu.jsonl.zst" --out "$tmp/tokens" --no-progress > /dev/null
check "tokenize the corpus with the fixture's tokenizer" '[ -s "$tmp/tokens/sotu.npy" ]'

# The long-context stage's float8 setting on OLMo-core's own bf16 config.
jq '.train_module.float8_config = {"ao": {"enable_fsdp_float8_all_gather": true,
      "round_scales_to_power_of_2": true, "_CLASS_": "olmo_core.float8.ao.AOFloat8LinearConfig"},
    "enabled": true, "_CLASS_": "olmo_core.float8.Float8Config"}' "$FIX/config.bf16.json" > "$tmp/f8.json"
run=(--path-map "$tok_prefix=$tmp/tokens" --set init.from_checkpoint="$FIX/step0"
     --set init.reset_step=false --set train.max_steps=3 --quiet)

"$BIN" train "$tmp/f8.json" --run-dir "$tmp/refused" "${run[@]}" > /dev/null 2> "$tmp/err"; rc=$?
check "train refuses float8 without --allow-unsupported (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "train_module.float8_config.enabled" "$tmp/err" && [ ! -e "$tmp/refused" ]'

"$BIN" train "$tmp/f8.json" --allow-unsupported --run-dir "$tmp/f8" "${run[@]}" > /dev/null 2> "$tmp/err"; rc=$?
check "train --allow-unsupported trains past float8 (rc $rc: $(tail -c 300 "$tmp/err"))" '[ $rc -eq 0 ]'
check "stderr names the setting and what stands in" \
  'grep -q "train_module.float8_config.enabled: NOT reproduced: .*; in its place: the linear layers compute in compute.precision" "$tmp/err"'
check "train.log names it too" \
  'grep -q "source config: train_module.float8_config.enabled: NOT reproduced" "$tmp/f8/train.log"'

"$BIN" train "$FIX/config.bf16.json" --run-dir "$tmp/bf16" "${run[@]}" > /dev/null 2>&1; rc=$?
check "the same config without float8 trains (rc $rc)" '[ $rc -eq 0 ]'
losses() { python3 -c '
import json, sys
print(" ".join(repr(j["loss"]) + "/" + j["precision"] for j in map(json.loads, open(sys.argv[1])) if "ce_loss" in j))' "$1"; }
check "the run is bit for bit the bf16 run without float8 ($(losses "$tmp/f8/metrics.jsonl"))" \
  '[ -n "$(losses "$tmp/f8/metrics.jsonl")" ] && [ "$(losses "$tmp/f8/metrics.jsonl")" = "$(losses "$tmp/bf16/metrics.jsonl")" ]'

# A refusal that nothing stands in for stops training even with the flag.
jq '.train_module.dp_config.param_dtype = "float16"' "$tmp/f8.json" > "$tmp/fp16.json"
"$BIN" train "$tmp/fp16.json" --allow-unsupported --run-dir "$tmp/fp16" "${run[@]}" > /dev/null 2> "$tmp/err"; rc=$?
check "--allow-unsupported does not train past param_dtype float16 (rc $rc: $(head -c 400 "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "nothing that could stand in" "$tmp/err" && grep -q "train_module.dp_config.param_dtype" "$tmp/err" && ! grep -q "float8_config.enabled: NOT" "$tmp/err" && [ ! -e "$tmp/fp16" ]'
"$BIN" plan "$tmp/fp16.json" --allow-unsupported "${run[@]:0:2}" > /dev/null 2> "$tmp/err"; rc=$?
check "plan --allow-unsupported reports both (rc $rc)" \
  '[ $rc -eq 0 ] && [ "$(grep -c "NOT reproduced" "$tmp/err")" = 2 ]'

cli_finish

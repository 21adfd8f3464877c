#!/usr/bin/env bash
# The official Olmo 3 7B stage configs as OLMo-core itself writes them (tests/data/olmo-core/
# official/, built by tools/crosscheck/official_configs.py from allenai/OLMo-core's
# src/scripts/official/OLMo3 with the installed olmo_core): `replica plan` gives what OLMo-core's
# own objects give (expected.json: TransformerConfig.num_params, global_batch_size, the trainer's
# steps, the scheduler's warm-up and scheduler.get_lr at its steps), bit for bit; the long-context
# stage is refused only for what replica lacks, naming those fields, and plans with
# --allow-unsupported.
#   usage: olmo_core_official.sh <replica-binary> <repo-root>
set -u
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$(realpath "$1")
ROOT=$(realpath "$2")
OFF="$ROOT/tests/data/olmo-core/official"
EXP="$OFF/expected.json"
export OMP_NUM_THREADS=1

for stage in pretrain-1 pretrain-2 midtrain long-context; do
  f="OLMo-3-1025-7B-$stage.json"
  e=$(jq -c --arg f "$f" '.[$f]' "$EXP")
  steps=$(jq -r '.lr_at | keys | map(tonumber) | sort | map(tostring) | join(",")' <<< "$e")
  args=(--lr-at "$steps" --json)
  [ "$stage" = long-context ] && args+=(--allow-unsupported)
  # a hard stop in epochs: OLMo-core counts its steps from the data, so give the count here
  [ "$(jq .steps <<< "$e")" = null ] && args+=(--set "train.max_steps=$(jq .t_max <<< "$e")")
  "$BIN" plan "$OFF/$f" "${args[@]}" > "$tmp/$stage.json" 2> "$tmp/$stage.err"; rc=$?
  check "plan $stage exits 0 (rc $rc: $(head -c 600 "$tmp/$stage.err"))" '[ $rc -eq 0 ]'
  check "plan $stage: parameters = TransformerConfig.num_params ($(jq .params <<< "$e"))" \
    '[ "$(jq .params "$tmp/$stage.json")" = "$(jq .params <<< "$e")" ]'
  check "plan $stage: tokens per step = global_batch_size ($(jq .tokens_per_step <<< "$e"))" \
    '[ "$(jq .tokens_per_step "$tmp/$stage.json")" = "$(jq .tokens_per_step <<< "$e")" ]'
  if [ "$(jq .steps <<< "$e")" != null ]; then
    check "plan $stage: steps = the trainer's ($(jq .steps <<< "$e"))" \
      '[ "$(jq .steps "$tmp/$stage.json")" = "$(jq .steps <<< "$e")" ]'
  fi
  # every LR bit-equal to scheduler.get_lr (jq compares the parsed doubles)
  bad=$(jq -n --slurpfile p "$tmp/$stage.json" --argjson e "$e" \
    '[$e.lr_at | to_entries[] | select($p[0].lr_at[.key] != .value) |
      "\(.key): OLMo-core \(.value) replica \($p[0].lr_at[.key])"] | join("; ")')
  check "plan $stage: lr at $(jq '.lr_at | length' <<< "$e") steps = scheduler.get_lr ($bad)" \
    '[ "$bad" = "\"\"" ]'
  # the warm-up replica schedules = the scheduler's
  "$BIN" import-config "$OFF/$f" --allow-unsupported --max-steps 1 > "$tmp/$stage.yaml" 2> /dev/null
  w=$(awk '/^  schedule:/ {s = 1} s && /^    warmup:/ {print $2; exit}' "$tmp/$stage.yaml")
  check "import $stage: warm-up $w = the scheduler's ($(jq .warmup <<< "$e"))" \
    '[ "$w" = "$(jq .warmup <<< "$e")" ]'
  check "import $stage: compute.precision bf16-fsdp (dp_config.param_dtype bfloat16)" \
    'grep -q "^  precision: bf16-fsdp .*# train_module.dp_config.param_dtype" "$tmp/$stage.yaml"'
done

# The long-context stage: refused for exactly what replica lacks, each named.
"$BIN" plan "$OFF/OLMo-3-1025-7B-long-context.json" > /dev/null 2> "$tmp/lc.err"; rc=$?
got=$(grep -o '^  [a-z0-9_.]*:' "$tmp/lc.err" | tr -d ' :' | sort | tr '\n' ' ')
check "long-context without --allow-unsupported: exit 2 naming float8 only (rc $rc: $got)" \
  '[ $rc -eq 2 ] && [ "$got" = "train_module.float8_config.enabled " ]'
check "long-context plan: YaRN on the full-attention layers, sliding layers plain" \
  'jq -e ".rope.full_attention.rope_type == \"yarn\" and .rope.full_attention.factor == 8 and
          .rope.full_attention.original_max_position_embeddings == 8192 and
          .rope.sliding_attention.rope_type == \"default\"" "$tmp/long-context.json" > /dev/null'
# The three other stages plan with nothing refused or unknown.
for stage in pretrain-1 midtrain; do
  check "plan $stage: no warning" '! grep -q "warning" "$tmp/$stage.err"'
done

cli_finish

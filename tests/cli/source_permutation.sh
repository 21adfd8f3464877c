#!/usr/bin/env bash
# The order of a dataset's source files under OLMo-core's source_permutation_seed
# (random.Random(seed).shuffle of their positions): `replica data batch` with
# --source-permutation-seed, with a YAML config's data.source_permutation_seed, and with an
# OLMo-core config.json that sets it, each reads file order[i] as its i-th file, where order is
# what OLMo-core's own NumpyDatasetConfig gave (tests/data/reference/python_random). Bad seeds
# exit 2 naming the flag or key.
#   usage: source_permutation.sh <replica-binary> <repo-root>
set -u
. "$(dirname "$0")/lib.sh"
BIN=$1
ROOT=$2
cli_init
FIX="$ROOT/tests/data/reference/python_random/permutations.json"

# Five files of one 32-token instance each; file k holds only token 100 + k.
python3 - "$tmp" <<'PY'
import struct, sys
for k in range(5):
    with open(f"{sys.argv[1]}/f{k}.npy", "wb") as f:
        f.write(struct.pack("<32I", *([100 + k] * 32)))
PY
for k in 0 1 2 3 4; do echo "$tmp/f$k.npy"; done > "$tmp/paths5.txt"

# file_order JSON: the file index (k of fk.npy) of instance 0, 1, ... (instances are file-sized)
file_order() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
by = {i["instance"]: int(i["path"].rsplit("/f", 1)[1].split(".")[0]) for i in d["instances"]}
print(",".join(str(by[i]) for i in sorted(by)))' "$1"
}
want() {  # want SEED COUNT: OLMo-core's order
  python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    if c["seed"] == sys.argv[2] and c["count"] == int(sys.argv[3]):
        print(",".join(map(str, c["order"])))' "$FIX" "$1" "$2"
}
for seed in 0 123 -7 18446744073709551615; do
  "$BIN" data batch 0 --data-paths "$tmp/paths5.txt" --seq-len 32 --seed 3 --global-batch 5 \
    --tokenizer none --source-permutation-seed "$seed" --json > "$tmp/b.json" 2> "$tmp/err"; rc=$?
  got=$(file_order "$tmp/b.json" 2>/dev/null); w=$(want "$seed" 5)
  check "data batch --source-permutation-seed $seed: files in OLMo-core's order $w (rc $rc, got $got)" \
    '[ $rc -eq 0 ] && [ -n "$w" ] && [ "$got" = "$w" ]'
done
"$BIN" data batch 0 --data-paths "$tmp/paths5.txt" --seq-len 32 --seed 3 --global-batch 5 \
  --tokenizer none --json > "$tmp/plain.json"
check "without a seed the files keep their order" '[ "$(file_order "$tmp/plain.json")" = "0,1,2,3,4" ]'

# A YAML run config: data.source_permutation_seed, the same order and the same batch.
cat > "$tmp/c.yaml" <<Y
model: {vocab_size: 256, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1,
        num_attention_heads: 2, num_key_value_heads: 1, rms_norm_eps: 1.0e-6, rope_theta: 10000, sliding_window: 8,
        eos_token_id: 255, pad_token_id: 254}
data: {paths: [$(sed 's/.*/"&"/' "$tmp/paths5.txt" | paste -sd,)], seq_len: 32, seed: 3,
       source_permutation_seed: 123}
train: {max_steps: 1, global_batch_instances: 5}
optim: {lr: 1.0e-3}
Y
"$BIN" data batch 0 --config "$tmp/c.yaml" --tokenizer none --json > "$tmp/y.json" 2> "$tmp/err"; rc=$?
check "YAML data.source_permutation_seed 123: OLMo-core's order (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ "$(file_order "$tmp/y.json")" = "$(want 123 5)" ]'

refused() {  # refused WHAT NEEDLE CMD...
  local what=$1 needle=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  check "$what: exit 2 naming '$needle' (rc $rc: $(head -c 300 "$tmp/err"))" \
    '[ $rc -eq 2 ] && grep -qF -- "$needle" "$tmp/err" && [ ! -s "$tmp/out" ]'
}
for bad in 1.5 abc 18446744073709551616 "" -; do
  [ -z "$bad" ] && continue
  refused "--source-permutation-seed '$bad'" "--source-permutation-seed" \
    "$BIN" data batch 0 --data-paths "$tmp/paths5.txt" --seq-len 32 --seed 3 --global-batch 5 \
    --tokenizer none --source-permutation-seed "$bad"
  refused "data.source_permutation_seed '$bad'" "data.source_permutation_seed" \
    "$BIN" data batch 0 --config "$tmp/c.yaml" --tokenizer none --set "data.source_permutation_seed=$bad"
done
refused "--source-permutation-seed with --config" "goes with --data-paths" \
  "$BIN" data batch 0 --config "$tmp/c.yaml" --source-permutation-seed 5

cli_finish

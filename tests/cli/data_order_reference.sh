#!/usr/bin/env bash
# ctest-labels: long
# replica's data order reproduces OLMo-core's own NumpyFSLDataLoader, as committed in
# tests/data/reference/data_order (tools/crosscheck/generate_data_order.py): token files made by
# `replica tokenize` (uint32 dolma2 and uint16) are the files OLMo-core read (sha256); for every
# case, seed, epoch and checked batch, `replica data batch` gives each rank of worlds 1, 2 and 8
# OLMo-core's instance indices and token ids, with OLMo-core's dataset fingerprint; for the trainer
# cases, what `replica train --dump-batches` fed at every step on 1, 2 and 8 ranks (mpirun; those
# runs are left out, saying so, when mpirun is absent) is OLMo-core's batch; epoch 0 is refused
# with OLMo-core's wording.   usage: data_order_reference.sh <replica binary> <repo root>
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$1
ROOT=$2
command -v mpirun > /dev/null || echo "note: mpirun not found; the 2- and 8-rank trainer runs are left out"
python3 "$ROOT/tools/crosscheck/data_order_replica.py" --replica "$BIN" \
  --reference "$ROOT/tests/data/reference/data_order" --work "$tmp" > "$tmp/out.txt" 2>&1 ||
  { grep -v "^ok " "$tmp/out.txt"; fail=1; }
grep -c "^ok " "$tmp/out.txt" | sed 's/$/ comparisons identical/'

# --dump-batches into a place that cannot be a directory: exit 2 naming it, no run directory.
printf 'x' > "$tmp/not-a-dir"
cat > "$tmp/bad.yaml" <<YAML
model: {vocab_size: 265, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1,
        num_attention_heads: 2, num_key_value_heads: 1, rms_norm_eps: 1.0e-6, rope_theta: 10000,
        sliding_window: 8, eos_token_id: 263, pad_token_id: 264}
data: {paths: [$tmp/tokens/u16/dolma2-public.npy], seq_len: 16, seed: 1, dtype: uint16}
train: {max_steps: 1, global_batch_instances: 2, threads: 1}
optim: {lr: 1.0e-3}
YAML
"$BIN" train "$tmp/bad.yaml" --run-dir "$tmp/badrun" --dump-batches "$tmp/not-a-dir/sub" --quiet \
  > /dev/null 2> "$tmp/bad.err"
rc=$?
check "--dump-batches into a file: exit 2 (got $rc)" '[ $rc -eq 2 ]'
check "--dump-batches error names the path: $(cat "$tmp/bad.err")" 'grep -q "not-a-dir/sub" "$tmp/bad.err"'
check "--dump-batches error leaves no run directory" '[ ! -e "$tmp/badrun" ]'
cli_finish

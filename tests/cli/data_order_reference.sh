#!/usr/bin/env bash
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
cli_finish

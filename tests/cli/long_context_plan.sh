#!/usr/bin/env bash
# `replica plan` of the long-context stage (OLMo-core's own config.json, cp_config degree 8): the
# degree is mapped to parallel.context_parallel_degree and the plan says what it means per rank.
# At 24 GiB per rank the stage fits at no world size with each sequence whole on one rank, and
# fits with the sequence split 8 ways at a world that is a multiple of 8, under the budget; the
# degree must divide the sequence length. A sequence past the YaRN's context is planned and named.
#   usage: long_context_plan.sh <replica-binary> <repo-root>
set -u
BIN=$1
SRC=$2
. "$(dirname "$0")/lib.sh"
cli_init
LC=$SRC/tests/data/olmo-core/official/OLMo-3-1025-7B-long-context.json

"$BIN" import-config "$LC" --allow-unsupported --out "$tmp/lc.yaml" 2> /dev/null; rc=$?
check "import-config maps cp_config.degree (rc $rc)" \
  '[ $rc -eq 0 ] && grep -q "context_parallel_degree: 8 .*# train_module.cp_config.degree" "$tmp/lc.yaml"'

"$BIN" plan "$LC" --allow-unsupported --memory 24GiB > "$tmp/plan.txt" 2> /dev/null; rc=$?
check "plan prints the context-parallel lines (rc $rc)" \
  '[ $rc -eq 0 ] && grep -q "^context parallel  degree 8 in the config: NOT implemented" "$tmp/plan.txt" && grep -q "^  at degree 8     8192 tokens of each instance per rank" "$tmp/plan.txt"'
"$BIN" plan "$LC" --allow-unsupported --memory 24GiB --json > "$tmp/plan.json" 2> /dev/null
cat > "$tmp/fits.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
cp = p["context_parallel"]
w = cp["smallest_world"]["world"]
ok = (p["smallest_world"]["world"] is None and cp["degree"] == 8 and w is not None
      and w % 8 == 0 and cp["memory_per_rank_bytes"] <= 24 * 2**30
      and cp["kv_traffic_bytes_per_step"] > 0 and not cp["implemented"]
      and cp["memory_breakdown_bytes"]["activations"] < p["memory_breakdown_bytes"]["activations"])
sys.exit(0 if ok else 1)
PY
check "at 24 GiB: no world fits whole sequences, degree 8 fits at a multiple of 8 within the budget" \
  'python3 "$tmp/fits.py" "$tmp/plan.json"'

"$BIN" plan "$LC" --allow-unsupported --set parallel.context_parallel_degree=3 > /dev/null 2> "$tmp/err"; rc=$?
check "a degree that does not divide the sequence is refused (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "parallel.context_parallel_degree" "$tmp/err" && grep -q "dividing data.seq_len (65536)" "$tmp/err"'
# Past the context the YaRN was set for (8192 x 8): planned, and said.
"$BIN" plan "$LC" --allow-unsupported --set data.seq_len=131072 > /dev/null 2> "$tmp/err"; rc=$?
check "a sequence past original_max_position_embeddings x factor is named (rc $rc)" \
  '[ $rc -eq 0 ] && grep -q "data.seq_len: 131072 positions are beyond the 65536 the full-attention layers" "$tmp/err"'
"$BIN" plan "$LC" --allow-unsupported > /dev/null 2> "$tmp/err"
check "the stage's own 65536 is within it" '! grep -q "positions are beyond" "$tmp/err"'
cli_finish

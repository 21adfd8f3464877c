#!/usr/bin/env bash
# ctest-labels: long
# `replica train` runs a tiny long-context config.json written by OLMo-core's own code
# (tests/data/reference/long_context): packed instances with their document lengths (attention
# within each document), YaRN on the full-attention layers, the shuffled source files, context
# parallelism planned (and refused where a whole sequence does not fit the memory budget per
# rank), float8 refused unless --allow-unsupported. The packed run's losses differ
# from the same run without document lengths, and `replica data batch` shows its instances.
#   usage: long_context_train.sh <replica-binary> <repo-root>
set -u
BIN=$1
SRC=$2
. "$(dirname "$0")/lib.sh"
cli_init
FIX=$SRC/tests/data/reference/long_context
tok_prefix=$(awk -F'\t' '$1 == "tokens" {print $2}' "$FIX/paths.txt")
export OMP_NUM_THREADS=1

"$BIN" tokenize --tokenizer "$SRC/tests/data/reference/olmo_core_run/tokenizer.json" \
  "$SRC/data/corpus/moby_dick.jsonl.zst" "$SRC/data/corpus/sotu.jsonl.zst" --out "$tmp/tokens" \
  --no-progress > /dev/null
check "tokenize the corpus" '[ -s "$tmp/tokens/sotu.npy" ]'
map=(--path-map "$tok_prefix=$tmp/tokens")

"$BIN" train "$FIX/config.json" --run-dir "$tmp/refused" "${map[@]}" --set train.max_steps=2 \
  --quiet > /dev/null 2> "$tmp/err"; rc=$?
check "without --allow-unsupported only float8 is refused (rc $rc: $(head -c 400 "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "1 OLMo-core setting(s)" "$tmp/err" && grep -q "train_module.float8_config.enabled" "$tmp/err" && [ ! -e "$tmp/refused" ]'

"$BIN" import-config "$FIX/config.json" --allow-unsupported "${map[@]}" --out "$tmp/lc.yaml" 2> /dev/null
check "the import maps packing, document lengths, YaRN, the file shuffle and the context-parallel degree" \
  'grep -q "packing: obfd" "$tmp/lc.yaml" && grep -q "generate_doc_lengths: true" "$tmp/lc.yaml" && grep -q "source_permutation_seed: \"123\"" "$tmp/lc.yaml" && grep -q "context_parallel_degree: 2" "$tmp/lc.yaml" && grep -q "rope_type: yarn" "$tmp/lc.yaml"'

# The source splits each sequence over 2 ranks; replica computes it whole on one rank, and where
# that does not fit the memory budget per rank, train refuses naming the key, the planned bytes
# and the budget, before it writes anything.
"$BIN" train "$FIX/config.json" --allow-unsupported --run-dir "$tmp/cp" "${map[@]}" \
  --set train.max_steps=2 --set parallel.memory_per_rank=1MiB --quiet > /dev/null 2> "$tmp/err"; rc=$?
check "a whole sequence over the budget is refused as context parallelism (rc $rc: $(head -c 600 "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "parallel.context_parallel_degree" "$tmp/err" && grep -q "context parallelism" "$tmp/err" && grep -q "budget of 1.0 MiB" "$tmp/err" && [ ! -e "$tmp/cp" ]'

run() {  # run <dir> [--set ...]: 4 steps of the stage with --allow-unsupported
  local dir=$1; shift
  "$BIN" train "$FIX/config.json" --allow-unsupported --run-dir "$dir" "${map[@]}" \
    --set train.max_steps=4 --set checkpoint.interval=1000 "$@" --quiet > "$dir.out" 2>&1
}
run "$tmp/lc"; rc=$?
check "train --allow-unsupported runs the stage (rc $rc: $(tail -c 400 "$tmp/lc.out"))" '[ $rc -eq 0 ]'
check "train.log names float8 as not reproduced" \
  'grep -q "source config: train_module.float8_config.enabled: NOT reproduced" "$tmp/lc/train.log"'
losses() { python3 -c '
import json, sys
print(" ".join(repr(j["loss"]) for j in map(json.loads, open(sys.argv[1])) if "ce_loss" in j))' "$1"; }
check "4 finite steps in bf16-fsdp ($(losses "$tmp/lc/metrics.jsonl"))" \
  'python3 -c "
import json, math, sys
rows = [j for j in map(json.loads, open(sys.argv[1])) if \"ce_loss\" in j]
sys.exit(0 if len(rows) == 4 and all(math.isfinite(r[\"loss\"]) and r[\"precision\"] == \"bf16-fsdp\" for r in rows) else 1)" "$tmp/lc/metrics.jsonl"'

run "$tmp/lc2"
check "the run is deterministic" '[ "$(losses "$tmp/lc/metrics.jsonl")" = "$(losses "$tmp/lc2/metrics.jsonl")" ]'
# Every document of the bundled corpus is longer than 512 tokens, so under truncate each instance
# is one document. Token files of short documents (arithmetic sequences of 20 to 300 tokens, EOS 0)
# pack several to an instance: there attention within documents changes the losses.
mkdir -p "$tmp/short"
for f in moby_dick sotu; do
  python3 - "$tmp/short/$f.npy" "$f" <<'PY'
import array, random, sys
rng = random.Random(sys.argv[2])
toks = []
for d in range(400):
    start, n, step = rng.randrange(2, 384), rng.randrange(20, 300), rng.choice([1, 2, 3])
    toks += [2 + (start + i * step) % 382 for i in range(n)] + [0]
array.array('H', toks).tofile(open(sys.argv[1], 'wb'))
PY
done
short=(--path-map "$tok_prefix=$tmp/short")
for docs in true false; do
  "$BIN" train "$FIX/config.json" --allow-unsupported --run-dir "$tmp/short-$docs" "${short[@]}" \
    --set train.max_steps=4 --set checkpoint.interval=1000 --set data.generate_doc_lengths=$docs \
    --quiet > "$tmp/short-$docs.out" 2>&1
done
check "short documents train with and without document lengths" \
  '[ -n "$(losses "$tmp/short-true/metrics.jsonl")" ] && [ -n "$(losses "$tmp/short-false/metrics.jsonl")" ]'
check "attention within documents changes the losses ($(losses "$tmp/short-true/metrics.jsonl") vs $(losses "$tmp/short-false/metrics.jsonl"))" \
  '[ "$(losses "$tmp/short-true/metrics.jsonl")" != "$(losses "$tmp/short-false/metrics.jsonl")" ]'

"$BIN" data batch 0 --config "$FIX/config.json" "${map[@]}" > "$tmp/batch.txt" 2> "$tmp/err"; rc=$?
check "data batch shows the packed instances (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && grep -qi "doc_lens\|padding" "$tmp/batch.txt"'
cli_finish

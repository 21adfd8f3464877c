#!/usr/bin/env bash
# Document lengths of plain instances (data.generate_doc_lengths without packing, OLMo-core's
# NumpyFSLDataset with generate_doc_lengths): `replica data batch` shows each instance's doc_lens
# (checked here against get_document_lengths recomputed from the token file), `replica train`
# trains with them and the document mask changes the losses, `train --dump-batches` records per
# row the doc_lens each step trained on (the ones `data batch --step` shows, none without them),
# `data batch --data-paths --doc-lengths` gives the doc_lens of the config's generate_doc_lengths
# (and is refused without --data-paths), an OLMo-core config.json with NumpyFSLDatasetConfig and
# generate_doc_lengths is imported to them, and a model without an EOS id is refused (exit 2,
# naming the key).
BIN=$1
ROOT=$2
. "$(dirname "$0")/lib.sh"
cli_init

arith_tokens "$tmp/tokens.u32" 3 120   # documents of 21-121 tokens, EOS 255 after each
{ tiny_model_256 2; cat <<YAML
data: {paths: [$tmp/tokens.u32], seq_len: 64, seed: 7}
train: {max_steps: 3, global_batch_instances: 4, micro_batch_instances: 2, threads: 2}
optim: {lr: 3.0e-3, schedule: {type: constant, warmup: 0}}
checkpoint: {interval: 1000}
YAML
} > "$tmp/tiny.yaml"

# data batch: every instance of the batch with its doc_lens, as get_document_lengths splits it.
"$BIN" data batch 1 --config "$tmp/tiny.yaml" --set data.generate_doc_lengths=true --tokenizer none \
  --json > "$tmp/b.json" 2> "$tmp/err"; rc=$?
check "data batch with generate_doc_lengths on plain instances: exit 0 (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && jq -e ".generate_doc_lengths == true and (.instances | length) == 4" "$tmp/b.json" > /dev/null'
check "each instance's doc_lens are get_document_lengths of its 64 tokens in the file" \
  'python3 - "$tmp/tokens.u32" "$tmp/b.json" <<'"'"'PY'"'"'
import json, struct, sys
d = open(sys.argv[1], "rb").read()
t = struct.unpack("<%dI" % (len(d) // 4), d)
b = json.load(open(sys.argv[2]))
T, ok, split = 64, True, 0
for e in b["instances"]:
    ids = t[e["token_offset"]:e["token_offset"] + T]
    bounds = [-1] + [i for i, x in enumerate(ids) if x == 255] + ([] if ids[-1] == 255 else [T - 1])
    want = [bounds[k] - bounds[k - 1] for k in range(1, len(bounds))]
    ok = ok and e["doc_lens"] == want
    split += len(want) > 1
sys.exit(0 if ok and split > 0 else 1)  # some instance holds more than one document
PY'
"$BIN" data batch 1 --config "$tmp/tiny.yaml" --set data.generate_doc_lengths=true --tokenizer none \
  > "$tmp/b.txt" 2> "$tmp/err"
check "the text form prints doc_lens per instance" '[ "$(grep -c "doc_lens \[" "$tmp/b.txt")" = 4 ]'
"$BIN" data batch 1 --config "$tmp/tiny.yaml" --tokenizer none --json > "$tmp/plain.json" 2> "$tmp/err"
check "without it: no doc_lens, the same instances" \
  'jq -e ".generate_doc_lengths == false and all(.instances[]; has(\"doc_lens\") | not)" "$tmp/plain.json" > /dev/null &&
   [ "$(jq -c "[.instances[].instance]" "$tmp/plain.json")" = "$(jq -c "[.instances[].instance]" "$tmp/b.json")" ]'

# data batch --data-paths --doc-lengths: the same files, seq_len, seed and batch as the config.
echo "$tmp/tokens.u32" > "$tmp/paths.txt"
P=(--data-paths "$tmp/paths.txt" --seq-len 64 --seed 7 --global-batch 4 --eos-id 255 --tokenizer none)
"$BIN" data batch 1 "${P[@]}" --doc-lengths --json > "$tmp/p.json" 2> "$tmp/err"; rc=$?
docs_of='[.instances[] | [.instance, .doc_lens]]'
check "data batch --data-paths --doc-lengths: the config's instances and doc_lens (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && jq -e ".generate_doc_lengths == true" "$tmp/p.json" > /dev/null &&
   [ "$(jq -c "$docs_of" "$tmp/p.json")" = "$(jq -c "$docs_of" "$tmp/b.json")" ]'
"$BIN" data batch 1 "${P[@]}" --doc-lengths > "$tmp/p.txt" 2> "$tmp/err"
check "its text form prints the same doc_lens lines" \
  '[ "$(grep "doc_lens \[" "$tmp/p.txt")" = "$(grep "doc_lens \[" "$tmp/b.txt")" ]'
"$BIN" data batch 1 "${P[@]}" --json > "$tmp/pplain.json" 2> "$tmp/err"
check "--data-paths without --doc-lengths: no doc_lens" \
  'jq -e ".generate_doc_lengths == false and all(.instances[]; has(\"doc_lens\") | not)" "$tmp/pplain.json" > /dev/null'
"$BIN" data batch 1 --config "$tmp/tiny.yaml" --doc-lengths --tokenizer none > "$tmp/out" 2> "$tmp/err"; rc=$?
check "--doc-lengths without --data-paths: exit 2 naming it (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -qF -- "--doc-lengths goes with --data-paths" "$tmp/err" && [ ! -s "$tmp/out" ]'

# train: the document mask changes what the model computes on the same instances.
losses() { python3 -c '
import json, sys
print(" ".join(repr(j["loss"]) for j in map(json.loads, open(sys.argv[1])) if "ce_loss" in j))' "$1"; }
for docs in true false; do
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/run-$docs" --set data.generate_doc_lengths=$docs \
    --dump-batches "$tmp/dump-$docs" --quiet > "$tmp/train-$docs.out" 2>&1
done
check "train with and without document lengths: 3 steps each ($(tail -c 200 "$tmp/train-true.out"))" \
  '[ "$(losses "$tmp/run-true/metrics.jsonl" | wc -w)" = 3 ] && [ "$(losses "$tmp/run-false/metrics.jsonl" | wc -w)" = 3 ]'
check "attention within documents changes the losses ($(losses "$tmp/run-true/metrics.jsonl") vs $(losses "$tmp/run-false/metrics.jsonl"))" \
  '[ "$(losses "$tmp/run-true/metrics.jsonl")" != "$(losses "$tmp/run-false/metrics.jsonl")" ]'
# --dump-batches: per row the document lengths the step trained on, summing to seq_len (64), the
# ones `data batch --step` shows for that step; none without document lengths, the same batches.
for s in 1 2 3; do
  "$BIN" data batch --step $s --config "$tmp/tiny.yaml" --set data.generate_doc_lengths=true \
    --tokenizer none --json 2> /dev/null | jq -c "[.instances[].doc_lens]"
done > "$tmp/step-doc-lens"
check "--dump-batches with document lengths: per row doc_lens summing to 64, as data batch --step gives" \
  '[ "$(jq -c ".doc_lens" "$tmp/dump-true/rank-0.jsonl")" = "$(cat "$tmp/step-doc-lens")" ] &&
   [ "$(wc -l < "$tmp/step-doc-lens")" = 3 ] &&
   jq -e "(.doc_lens | length) == (.instances | length) and all(.doc_lens[]; add == 64)" \
     "$tmp/dump-true/rank-0.jsonl" > /dev/null &&
   jq -e "any(.doc_lens[]; length > 1)" "$tmp/dump-true/rank-0.jsonl" | grep -q true'
check "--dump-batches without document lengths: no doc_lens, the same instances and input ids" \
  '[ "$(jq -c "has(\"doc_lens\")" "$tmp/dump-false/rank-0.jsonl" | sort -u)" = false ] &&
   [ "$(jq -c "del(.doc_lens)" "$tmp/dump-true/rank-0.jsonl")" = "$(jq -c . "$tmp/dump-false/rank-0.jsonl")" ]'
"$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/run-again" --set data.generate_doc_lengths=true \
  --quiet > /dev/null 2>&1
check "and the run is deterministic" \
  '[ "$(losses "$tmp/run-again/metrics.jsonl")" = "$(losses "$tmp/run-true/metrics.jsonl")" ]'

# A model without an EOS id cannot split documents.
"$BIN" data batch 0 --config "$tmp/tiny.yaml" --set data.generate_doc_lengths=true \
  --set model.eos_token_id=null --tokenizer none > "$tmp/out" 2> "$tmp/err"; rc=$?
check "no model.eos_token_id: exit 2 naming data.generate_doc_lengths (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -qF "data.generate_doc_lengths" "$tmp/err" && [ ! -s "$tmp/out" ]'

# OLMo-core's NumpyFSLDatasetConfig with generate_doc_lengths: imported, not refused.
p1="$ROOT/tests/data/olmo-core/official/OLMo-3-1025-7B-pretrain-1.json"
jq '.dataset.generate_doc_lengths = true' "$p1" > "$tmp/p1docs.json"
"$BIN" import-config "$tmp/p1docs.json" --max-steps 1 > "$tmp/p1.yaml" 2> "$tmp/err"; rc=$?
check "import NumpyFSLDatasetConfig with generate_doc_lengths: exit 0, mapped (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && grep -q "^  generate_doc_lengths: true" "$tmp/p1.yaml" && ! grep -q "packing: obfd" "$tmp/p1.yaml"'
cli_finish

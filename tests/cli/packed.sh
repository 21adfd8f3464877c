#!/usr/bin/env bash
# Packed instances (data.packing: obfd) through `replica data batch`, and their bad input:
# documents longer than the sequence under each strategy (documented: truncate drops the rest,
# fragment keeps every token), a file without EOS (contributes nothing; alone: exit 2 naming it),
# no instance is only padding, unknown strategy names, a sequence length that is not a power of
# two, source_group_size 0, packing-only keys without packing, an empty file, and the same refusals
# from an OLMo-core NumpyPackedFSLDatasetConfig; each error exits 2 naming the file or field.
# `train --dump-batches` of packed instances with generate_doc_lengths records each row's doc_lens
# as `data batch --step` gives them (padding after the last EOS its own last document), and none
# without generate_doc_lengths.
BIN=$1
ROOT=$2
. "$(dirname "$0")/lib.sh"
cli_init

TOK="$ROOT/tests/data/reference/packed/tokens"
long="$TOK/u32.T16.truncate.g1.b.s0.0.uint32.bin"    # documents up to 3 x 16 tokens
ties="$TOK/u32.T16.truncate.g1.a.s0.0.uint32.bin"
noeos="$TOK/u32.T16.truncate.g1.a.s0.3.uint32.bin"   # no EOS at all
base=(--config "$ROOT/configs/demo.yaml" --set data.seq_len=16 --set data.packing=obfd
      --set train.micro_batch_instances=0
      --tokenizer none)
batch() {  # batch OUT PATHS [--set ...]: all instances of the dataset in one global batch
  local out=$1 paths=$2; shift 2
  local n
  n=$("$BIN" data batch 0 "${base[@]}" --set "data.paths=[$paths]" --set \
        train.global_batch_instances=1 "$@" --json 2> "$out.err" | jq .num_instances) || return 2
  "$BIN" data batch 0 "${base[@]}" --set "data.paths=[$paths]" \
    --set "train.global_batch_instances=$n" --tokens 16 "$@" --json > "$out" 2> "$out.err"
}
refused() {  # refused WHAT TEXT COMMAND...: exit 2, TEXT on stderr, nothing on stdout
  local what=$1 text=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  check "$what: exit 2 naming '$text' (rc $rc: $(head -c 300 "$tmp/err"))" \
    '[ $rc -eq 2 ] && grep -qF -- "$text" "$tmp/err" && [ ! -s "$tmp/out" ]'
}

# Long documents: truncate keeps the first 16 tokens of each, fragment every token.
batch "$tmp/trunc.json" "$long" --set data.long_doc_strategy=truncate; rc=$?
batch "$tmp/frag.json" "$long" --set data.long_doc_strategy=fragment; rc2=$?
bytes=$(stat -c %s "$long")
last_eos=$(python3 -c "
import struct,sys; d=open('$long','rb').read(); t=struct.unpack('<%dI'%(len(d)//4),d)
print(max(i for i,x in enumerate(t) if x==100257)+1)")
check "long documents, truncate and fragment: exit 0 ($rc, $rc2)" '[ $rc -eq 0 ] && [ $rc2 -eq 0 ]'
check "fragment keeps every token up to the file's last EOS ($last_eos)" \
  '[ "$(jq .packing.tokens_in_documents "$tmp/frag.json")" = "$last_eos" ]'
check "truncate drops the tokens of long documents past 16" \
  '[ "$(jq .packing.tokens_in_documents "$tmp/trunc.json")" -lt "$last_eos" ]'
check "no document of either is longer than the sequence" \
  'jq -e "[.instances[].documents[].length] | max <= 16" "$tmp/trunc.json" "$tmp/frag.json" > /dev/null'
check "no instance is only padding (every one holds a document)" \
  'jq -e "[.instances[].tokens_in_documents] | min >= 1" "$tmp/trunc.json" "$tmp/frag.json" > /dev/null'
check "padding is the label-masked tail: tokens_in_documents + padding = 16, doc_lens sum to 16" \
  'jq -e "all(.instances[]; .tokens_in_documents + .padding == 16 and (.doc_lens | add) == 16)" \
     "$tmp/frag.json" > /dev/null'

# A file without EOS contributes nothing; alone it is an error naming it.
batch "$tmp/with.json" "$noeos,$ties"; rc=$?
batch "$tmp/without.json" "$ties"; rc2=$?
check "a file without EOS beside another: exit 0, the same instances as without it ($rc, $rc2)" \
  '[ $rc -eq 0 ] && [ "$(jq .num_instances "$tmp/with.json")" = "$(jq .num_instances "$tmp/without.json")" ]'
refused "only a file without EOS" "hold no document" \
  "$BIN" data batch 0 "${base[@]}" --set "data.paths=[$noeos]"
: > "$tmp/empty.bin"
refused "an empty token file" "$tmp/empty.bin" \
  "$BIN" data batch 0 "${base[@]}" --set "data.paths=[$tmp/empty.bin,$ties]"

# Settings.
refused "unknown long_doc_strategy" "data.long_doc_strategy" \
  "$BIN" data batch 0 "${base[@]}" --set "data.paths=[$ties]" --set data.long_doc_strategy=chop
refused "sequence length not a power of two" "data.seq_len" \
  "$BIN" data batch 0 "${base[@]}" --set "data.paths=[$ties]" --set data.seq_len=24
refused "source_group_size 0" "data.source_group_size" \
  "$BIN" data batch 0 "${base[@]}" --set "data.paths=[$ties]" --set data.source_group_size=0
refused "unknown packing" "data.packing" \
  "$BIN" data batch 0 "${base[@]}" --set "data.paths=[$ties]" --set data.packing=ffd
refused "long_doc_strategy without packing" "data.long_doc_strategy" \
  "$BIN" data batch 0 --config "$ROOT/configs/demo.yaml" --set "data.paths=[$ties]" \
  --set data.long_doc_strategy=fragment

# replica train reads packed instances: the run's data line counts the packed instances.
"$BIN" train "$ROOT/configs/demo.yaml" --set data.seq_len=16 --set data.packing=obfd \
  --set "data.paths=[$ties]" --set train.max_steps=2 --set optim.schedule.warmup=1 --set eval.sets=[] --quiet \
  --run-dir "$tmp/run" --dump-batches "$tmp/dump" > "$tmp/train.out" 2>&1; rc=$?
check "train with data.packing obfd trains (rc $rc: $(tail -c 300 "$tmp/train.out"))" \
  '[ $rc -eq 0 ] && [ -s "$tmp/run/metrics.jsonl" ]'
check "--dump-batches without generate_doc_lengths: 2 steps, no doc_lens" \
  '[ "$(jq -c "has(\"doc_lens\")" "$tmp/dump/rank-0.jsonl" | tr "\n" " ")" = "false false " ]'
docs=(--config "$ROOT/configs/demo.yaml" --set data.seq_len=16 --set data.packing=obfd
      --set "data.paths=[$ties]" --set data.generate_doc_lengths=true)
"$BIN" train "${docs[@]:1}" --set train.max_steps=2 --set optim.schedule.warmup=1 --set eval.sets=[] \
  --quiet --run-dir "$tmp/run-docs" --dump-batches "$tmp/dump-docs" > "$tmp/train.out" 2>&1; rc=$?
for s in 1 2; do
  "$BIN" data batch --step $s "${docs[@]}" --tokenizer none --json 2> /dev/null
done > "$tmp/steps.json"
check "--dump-batches with generate_doc_lengths: each row's doc_lens as data batch --step (rc $rc)" \
  '[ $rc -eq 0 ] &&
   [ "$(jq -c ".doc_lens" "$tmp/dump-docs/rank-0.jsonl")" = "$(jq -c "[.instances[].doc_lens]" "$tmp/steps.json")" ] &&
   jq -e "all(.doc_lens[]; add == 16)" "$tmp/dump-docs/rank-0.jsonl" > /dev/null'
check "a padded row: its padding is the last of its doc_lens, after its documents' lengths" \
  'jq -se "[.[].instances[] | select(.padding > 0)] | length > 0 and
          all(.[]; .doc_lens == [.documents[].length] + [.padding])" "$tmp/steps.json" > /dev/null'

# The same from an OLMo-core config.json: NumpyPackedFSLDatasetConfig mapped, bad values refused.
lc="$ROOT/tests/data/olmo-core/official/OLMo-3-1025-7B-long-context.json"
"$BIN" import-config "$lc" --allow-unsupported --max-steps 1 > "$tmp/lc.yaml" 2> /dev/null
check "import long-context: data.packing obfd, source_group_size 8, generate_doc_lengths true" \
  'grep -q "^  packing: obfd" "$tmp/lc.yaml" && grep -q "^  source_group_size: 8" "$tmp/lc.yaml" &&
   grep -q "^  generate_doc_lengths: true" "$tmp/lc.yaml"'
jq '.dataset.long_doc_strategy = "chop"' "$lc" > "$tmp/chop.json"
refused "OLMo-core long_doc_strategy chop" "dataset.long_doc_strategy" \
  "$BIN" import-config "$tmp/chop.json" --max-steps 1
jq '.dataset.sequence_length = 24576 | .train_module.max_sequence_length = 24576' "$lc" > "$tmp/t.json"
refused "OLMo-core packed sequence length not a power of two" "dataset.sequence_length" \
  "$BIN" import-config "$tmp/t.json" --max-steps 1
jq '.dataset.use_array_if_local = false' "$lc" > "$tmp/meta.json"
refused "OLMo-core use_array_if_local false (metadata boundaries)" "dataset.use_array_if_local" \
  "$BIN" import-config "$tmp/meta.json" --max-steps 1

cli_finish

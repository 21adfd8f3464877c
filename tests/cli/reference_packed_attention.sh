#!/usr/bin/env bash
# replica's packed rows (intra-document masking, a dump's cu_doc_lens) against the reference, from
# the committed dumps of tests/data/reference/packed_attention/
# (tools/crosscheck/generate_packed_attention.py; no Python needed here beyond python3's standard
# library):
#  - tiny-mha, tiny-yarn: OLMo-core's own model run on each document alone in its train module's
#    micro-batch loop (its CPU attention backend refuses intra-document masking): replica's packed
#    logits (KL max, top-1), CE, mean lse² and every gradient of CE + 1e-5·z-loss within fp32 noise;
#  - transformers-tiny-yarn: Olmo3ForCausalLM on the packed rows with restarting position_ids:
#    logits and CE;
#  - the test has teeth: the same dumps without their cu_doc_lens (replica then runs plain rows)
#    fail KL by orders of magnitude;
#  - a dump whose cu_doc_lens lets a document cross a row: exit 2 naming the tensor.
# Bounds: those of the OLMo-core model area (docs/crosscheck.md "Packed attention").
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$1
ROOT=$2
REF=$ROOT/tests/data/reference/packed_attention

# edit_dump IN OUT [CU...]: a copy of a safetensors dump without its cu_doc_lens tensor, or with
# cu_doc_lens replaced by the given int64 values.
edit_dump() {
  python3 - "$@" <<'PY'
import json, struct, sys
src, dst, cu = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
meta = header.pop("__metadata__", None)
blobs = {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}
del header["cu_doc_lens"]
if cu:
    header["cu_doc_lens"] = {"dtype": "I64", "shape": [len(cu)]}
    blobs["cu_doc_lens"] = struct.pack(f"<{len(cu)}q", *cu)
out, pos = {}, 0
for k in header:
    out[k] = dict(header[k], data_offsets=[pos, pos + len(blobs[k])])
    pos += len(blobs[k])
if meta is not None:
    out["__metadata__"] = meta
h = json.dumps(out).encode()
h += b" " * (-len(h) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs[k] for k in header))
PY
}

field() { grep -o "\"$2\": [^,}]*" "$1" | head -1 | sed 's/.*: //'; }
le() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }

for c in tiny-mha tiny-yarn; do
  dump=$REF/$c.safetensors
  if [ ! -f "$dump" ]; then check "$c: committed dump $dump present" false; continue; fi
  model=$ROOT/tests/data/olmo3/$c
  "$BIN" parity --model "$model" --reference "$dump" --grads --z-loss 1e-5 --max-kl 1e-11 \
    --min-top1 1.0 --max-grad-rel 1e-5 --json --threads 2 > "$tmp/$c.json" 2> "$tmp/$c.err"
  rc=$?
  check "$c: packed logits and gradients within fp32 noise of OLMo-core per document (exit $rc: $(grep -o '"\(kl_max\|grad_max_rel_err\)": [^,]*' "$tmp/$c.json" | tr '\n' ' ') $(tail -1 "$tmp/$c.err"))" \
    '[ $rc -eq 0 ]'
  loss=$(field "$tmp/$c.json" loss) loss_ref=$(field "$tmp/$c.json" loss_ref)
  check "$c: CE $loss vs OLMo-core $loss_ref within 4e-6" \
    "le \$(python3 -c 'print(abs($loss - $loss_ref))') 4e-6"
  check "$c: the dump's documents are used" '[ "$(field "$tmp/$c.json" documents)" -gt 2 ]'
  edit_dump "$dump" "$tmp/plain.safetensors"
  "$BIN" parity --model "$model" --reference "$tmp/plain.safetensors" --max-kl 1 --min-top1 0 \
    --json --threads 2 > "$tmp/plain.json" 2>/dev/null
  check "$c: without cu_doc_lens the KL max is far above the bound ($(field "$tmp/plain.json" kl_max))" \
    "le 1e-3 $(field "$tmp/plain.json" kl_max)"
done

dump=$REF/transformers-tiny-yarn.safetensors
model=$ROOT/tests/data/olmo3/tiny-yarn
"$BIN" parity --model "$model" --reference "$dump" --max-kl 1e-11 --min-top1 1.0 --json \
  --threads 2 > "$tmp/t.json" 2> "$tmp/t.err"
rc=$?
check "transformers-tiny-yarn: packed logits within fp32 noise of transformers' packed forward (exit $rc: kl_max $(field "$tmp/t.json" kl_max))" \
  '[ $rc -eq 0 ]'
loss=$(field "$tmp/t.json" loss) loss_ref=$(field "$tmp/t.json" loss_ref)
check "transformers-tiny-yarn: CE $loss vs $loss_ref within 4e-6" \
  "le \$(python3 -c 'print(abs($loss - $loss_ref))') 4e-6"

# A document that crosses the row start 96: exit 2 naming the tensor, nothing printed on stdout.
edit_dump "$REF/tiny-yarn.safetensors" "$tmp/bad.safetensors" 0 50 150 192
"$BIN" parity --model "$model" --reference "$tmp/bad.safetensors" > "$tmp/bad.out" 2> "$tmp/bad.err"
rc=$?
check "crossing document: exit 2 naming cu_doc_lens (exit $rc: $(tail -1 "$tmp/bad.err"))" \
  '[ $rc -eq 2 ] && grep -q "cu_doc_lens" "$tmp/bad.err" && grep -q "crosses" "$tmp/bad.err" && [ ! -s "$tmp/bad.out" ]'

cli_finish

#!/usr/bin/env bash
# replica's dolma2 reproduces what Hugging Face tokenizers (allenai's dolma2 tokenizer.json) gave
# for the committed inputs of tests/data/reference/tokenizer (tools/crosscheck/generate_tokenizer.py):
# the generated texts' ids and decode round trip, every corpus document's ids (count and sha256),
# the oracle texts and the >1 MB document, the token files of `replica tokenize` (each document's
# ids, then EOS), the added tokens, vocabulary size and EOS/PAD ids of OLMo-core's dolma2 config.
#   usage: tokenizer_reference.sh <replica binary> <repo root>
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$1
ROOT=$2
REF=$ROOT/tests/data/reference/tokenizer
CORPUS=$ROOT/data/corpus

"$BIN" tokenizer encode --tokenizer dolma2 --jsonl "$REF/generated.jsonl" > "$tmp/gen.ids" ||
  { echo "FAIL: encode generated.jsonl"; exit 1; }
"$BIN" tokenizer decode --tokenizer dolma2 --jsonl "$tmp/gen.ids" > "$tmp/gen.txt" ||
  { echo "FAIL: decode"; exit 1; }
for f in sotu moby_dick heldout_sotu; do
  "$BIN" tokenizer encode --tokenizer dolma2 --jsonl "$CORPUS/$f.jsonl.zst" > "$tmp/$f.ids" ||
    { echo "FAIL: encode $f"; exit 1; }
done
"$BIN" tokenizer encode --tokenizer dolma2 --jsonl "$ROOT/tests/data/oracles/tokenizer/dolma2-public.jsonl" \
  > "$tmp/oracle.ids" || { echo "FAIL: encode oracle"; exit 1; }
# The >1 MB document: Moby Dick's texts (decoded from their ids, checked above against the
# digests) and the generated texts, one per line.
"$BIN" tokenizer decode --tokenizer dolma2 --jsonl "$tmp/moby_dick.ids" > "$tmp/moby.txt"
python3 - "$tmp" "$REF" <<'PY'
import json, sys
tmp, ref = sys.argv[1:]
lines = lambda p: [json.loads(l) for l in open(p, encoding="utf-8").read().split("\n") if l]
texts = [d["text"] for d in lines(f"{tmp}/moby.txt")] + [d["text"] for d in lines(f"{ref}/generated.jsonl")]
with open(f"{tmp}/big.jsonl", "w", encoding="utf-8") as f:
    f.write(json.dumps({"text": "\n".join(texts)}) + "\n")
PY
"$BIN" tokenizer encode --tokenizer dolma2 --jsonl "$tmp/big.jsonl" > "$tmp/big.ids" ||
  { echo "FAIL: encode big"; exit 1; }
"$BIN" tokenize --tokenizer dolma2 "$CORPUS/sotu.jsonl.zst" "$CORPUS/moby_dick.jsonl.zst" \
  "$CORPUS/heldout_sotu.jsonl.zst" --out "$tmp/tok" --no-progress --threads 2 > /dev/null ||
  { echo "FAIL: tokenize"; exit 1; }
"$BIN" tokenizer info --tokenizer dolma2 --json > "$tmp/info.json"
python3 - "$tmp/specials.jsonl" "$REF/special_tokens.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[2], encoding="utf-8"))
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for t in spec["added_tokens"]:
        f.write(json.dumps({"text": t["content"]}) + "\n")
PY
"$BIN" tokenizer encode --tokenizer dolma2 --jsonl "$tmp/specials.jsonl" > "$tmp/specials.ids"

python3 - "$tmp" "$REF" <<'PY' || fail=1
import hashlib, json, struct, sys
tmp, ref = sys.argv[1:]
lines = lambda p: [json.loads(l) for l in open(p, encoding="utf-8").read().split("\n") if l]
digest = lambda ids: hashlib.sha256(struct.pack(f"<{len(ids)}I", *ids)).hexdigest()
bad = []
gen = lines(f"{ref}/generated.jsonl")
got = lines(f"{tmp}/gen.ids")
dec = lines(f"{tmp}/gen.txt")
if len(got) != len(gen):
    bad.append(f"generated: {len(got)} outputs for {len(gen)} texts")
for w, g, d in zip(gen, got, dec):
    if g["ids"] != w["ids"]:
        bad.append(f"generated text {w['id']}: ids differ")
    if d["text"] != w["text"]:
        bad.append(f"generated text {w['id']}: decode differs")
corpus = json.load(open(f"{ref}/corpus.json"))
for name in ("sotu", "moby_dick", "heldout_sotu", "oracle", "big"):
    want = corpus["documents"][name]
    got = lines(f"{tmp}/{name}.ids")
    if len(got) != len(want):
        bad.append(f"{name}: {len(got)} documents, reference has {len(want)}")
    for w, g in zip(want, got):
        if len(g["ids"]) != w["tokens"] or digest(g["ids"]) != w["sha256"]:
            bad.append(f"{name} document {w['id']}: {len(g['ids'])} ids, reference {w['tokens']}")
for name, w in corpus["token_files"].items():
    data = open(f"{tmp}/tok/{name}.npy", "rb").read()
    if hashlib.sha256(data).hexdigest() != w["sha256"] or len(data) != 4 * w["tokens"]:
        bad.append(f"token file {name}.npy: {len(data) // 4} tokens, reference {w['tokens']}")
spec = json.load(open(f"{ref}/special_tokens.json", encoding="utf-8"))
for t, g in zip(spec["added_tokens"], lines(f"{tmp}/specials.ids")):
    if g["ids"] != [t["id"]]:
        bad.append(f"added token {t['content']!r}: ids {g['ids']}, reference [{t['id']}]")
info = json.load(open(f"{tmp}/info.json"))
oc = spec["olmo_core_dolma2"]
for key, want in (("vocab_size", oc["vocab_size"]), ("eos_id", oc["eos_token_id"]),
                  ("pad_id", oc["pad_token_id"]), ("embedding_rows", oc["padded_vocab_size"])):
    if info[key] != want:
        bad.append(f"tokenizer info {key} = {info[key]}, OLMo-core's dolma2 has {want}")
man = json.load(open(f"{tmp}/tok/manifest.json"))
if man["dtype"] != oc["dtype"]:
    bad.append(f"token dtype {man['dtype']}, OLMo-core picks {oc['dtype']}")
for b in bad[:20]:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
cli_finish

#!/usr/bin/env bash
# CLI test: replica tokenize / replica tokenizer encode|decode|info.
#   usage: tokenize.sh <replica binary> <repo root>
set -euo pipefail
replica="$1"
root="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Inputs: JSONL, gzip'ed JSONL, a plain text file (one document), the bundled zstd corpus.
printf '{"id": "a", "text": "Hello world"}\n{"text": "a <|endoftext|> b"}\n' >"$tmp/small.jsonl"
printf '{"text": "second file"}\n\n{"text": ""}\n' | gzip >"$tmp/more.jsonl.gz"
printf 'Call me Ishmael.\n' >"$tmp/book.txt"
corpus="$root/data/corpus/moby_dick.jsonl.zst"

"$replica" tokenize --tokenizer dolma2 "$tmp/small.jsonl" "$tmp/more.jsonl.gz" "$tmp/book.txt" \
  "$corpus" --out "$tmp/t1" --threads 1 --json --no-progress >"$tmp/s1.json"
"$replica" tokenize --tokenizer dolma2 "$tmp/small.jsonl" "$tmp/more.jsonl.gz" "$tmp/book.txt" \
  "$corpus" --out "$tmp/t2" --threads 2 --no-progress >"$tmp/s2.txt"
for f in small more book moby_dick manifest; do
  ext=npy; [ "$f" = manifest ] && ext=json
  cmp -s "$tmp/t1/$f.$ext" "$tmp/t2/$f.$ext" || fail "$f.$ext differs between 1 and 2 threads"
done
grep -q "tokenized" "$tmp/s2.txt" || fail "no human summary"

python3 - "$tmp" <<'PY'
import json, struct, sys, hashlib, os
tmp = sys.argv[1]
s = json.load(open(f"{tmp}/s1.json"))
m = json.load(open(f"{tmp}/t1/manifest.json"))
assert s["documents"] == 2 + 1 + 1 + 138, s
assert s["skipped_empty"] == 1, s
assert m["tokenizer"]["name"] == "dolma2" and m["dtype"] == "uint32"
assert m["tokenizer"]["source_sha256"] == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
small = open(f"{tmp}/t1/small.npy", "rb").read()
ids = list(struct.unpack(f"<{len(small) // 4}I", small))
# "Hello world" = [9906, 1917], EOS, then the README's example, EOS.
assert ids == [9906, 1917, 100257, 64, 220, 100257, 293, 100257], ids
for o in m["outputs"]:
    data = open(os.path.join(tmp, "t1", o["path"]), "rb").read()
    assert hashlib.sha256(data).hexdigest() == o["sha256"], o
    assert len(data) == 4 * o["tokens"], o
    assert struct.unpack("<I", data[-4:])[0] == 100257, o
for i in m["inputs"]:
    assert hashlib.sha256(open(i["path"], "rb").read()).hexdigest() == i["sha256"], i
assert [i["compression"] for i in m["inputs"]] == ["none", "gzip", "none", "zstd"]
PY

# tokenizer encode on the oracle's texts gives its ids; decode gives the texts back.
oracle="$root/tests/data/oracles/tokenizer/dolma2-public.jsonl"
"$replica" tokenizer encode --tokenizer dolma2 --jsonl "$oracle" >"$tmp/enc.jsonl"
"$replica" tokenizer decode --tokenizer dolma2 --jsonl "$tmp/enc.jsonl" >"$tmp/dec.jsonl"
python3 - "$oracle" "$tmp/enc.jsonl" "$tmp/dec.jsonl" <<'PY'
import json, sys
want = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
got = [json.loads(l) for l in open(sys.argv[2])]
dec = [json.loads(l) for l in open(sys.argv[3])]
assert len(got) == len(want) == len(dec) == 60
for w, g, d in zip(want, got, dec):
    assert g["ids"] == w["ids"], w["text"]
    assert d["text"] == w["text"], w["text"]
PY
[ "$("$replica" tokenizer encode --text 'Hello world')" = '{"ids":[9906,1917]}' ] || fail "encode --text"
printf '{"text": "x"}\n' | "$replica" tokenizer encode --jsonl - | grep -q '"ids":\[87\]' || fail "stdin"
"$replica" tokenizer info --json | grep -q '"vocab_size":100278' || fail "info"

# Bad input: exit 2, a message naming file:line, and no output files.
printf '{"text": "ok"}\n{"text": broken\n' >"$tmp/bad.jsonl"
set +e
"$replica" tokenize "$tmp/small.jsonl" "$tmp/bad.jsonl" --out "$tmp/bad_out" --no-progress 2>"$tmp/err.txt"
rc=$?
set -e
[ $rc -eq 2 ] || fail "malformed JSONL: exit $rc, expected 2"
grep -q "bad.jsonl:2" "$tmp/err.txt" || fail "error does not name bad.jsonl:2: $(cat "$tmp/err.txt")"
[ -z "$(ls -A "$tmp/bad_out" 2>/dev/null)" ] || fail "outputs left behind after an error"
set +e
"$replica" tokenize "$tmp/missing.jsonl" --out "$tmp/x" --no-progress 2>"$tmp/err2.txt"
rc=$?
"$replica" tokenizer encode --jsonl "$tmp/bad.jsonl" >/dev/null 2>"$tmp/err3.txt"
rc3=$?
"$replica" tokenize "$tmp/small.jsonl" --tokenizer nope --out "$tmp/y" 2>/dev/null
rc4=$?
set -e
[ $rc -eq 2 ] && grep -q "missing.jsonl" "$tmp/err2.txt" || fail "missing input: exit $rc"
[ $rc3 -eq 2 ] && grep -q "bad.jsonl:2" "$tmp/err3.txt" || fail "encode bad line: exit $rc3"
[ $rc4 -eq 2 ] || fail "unknown tokenizer: exit $rc4"
echo "tokenize CLI: ok"

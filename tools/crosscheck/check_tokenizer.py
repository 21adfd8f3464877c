#!/usr/bin/env python3
"""Crosscheck area "tokenizer": replica's dolma2 against Hugging Face `tokenizers` on allenai's
dolma2 tokenizer.json and against `tiktoken` (cl100k_base ranks and pattern + the added tokens),
on every bundled corpus document, the tokenizer oracle texts, seeded generated texts and a >1 MB
document: ids, decode round trips, added/special tokens, EOS and dtype of tokenize-to-disk, and
the committed reference (tests/data/reference/tokenizer) regenerated.

  usage: check_tokenizer.py --replica BUILD/replica --work DIR [--regen-only]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import generate_tokenizer as G  # noqa: E402
import tokenizer_ref as T  # noqa: E402

AREA = "tokenizer"
COMMITTED = os.path.join(common.REPO, "tests", "data", "reference", "tokenizer")


def emit(case, what, value, bound, ok):
    common.emit(AREA, case, what, value, bound, ok)


def first_difference(a, b, names):
    """(count of differing entries, description of the first one)."""
    bad = [i for i in range(len(a)) if a[i] != b[i]]
    if not bad:
        return 0, ""
    i = bad[0]
    x, y = a[i], b[i]
    k = next((j for j in range(min(len(x), len(y))) if x[j] != y[j]), min(len(x), len(y)))
    return len(bad), f"first: {names[i]} at id {k}"


def same_ids(case, what, got, want, names, bound="identical ids on every document"):
    n, where = first_difference(got, want, names)
    tokens = sum(len(x) for x in want)
    value = (f"identical ({len(want)} documents, {tokens} ids)" if n == 0
             else f"{n} of {len(want)} documents differ ({where})")
    emit(case, what, value, bound, n == 0)


def run_jsonl(replica, args, lines):
    proc = subprocess.run([replica, *args], input="".join(json.dumps(x) + "\n" for x in lines),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"replica {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return [json.loads(line) for line in proc.stdout.split("\n") if line]


def check_encodings(replica, work, docs, hf_ids, hf):
    groups = list(docs)
    flat = [(g, d, t) for g in groups for d, t in docs[g]]
    names = [f"{g}/{d}" for g, d, _ in flat]
    texts = [t for _, _, t in flat]
    added = T.added_tokens()

    t0 = time.time()
    enc = run_jsonl(replica, ["tokenizer", "encode", "--tokenizer", "dolma2", "--jsonl", "-"],
                    [{"text": t} for t in texts + [c for _, c, _ in added]])
    rep = [e["ids"] for e in enc]
    rep_added, rep = rep[len(texts):], rep[:len(texts)]
    json_path = T.write_tokenizer_json(os.path.join(work, "dolma2-tokenizer.json"))
    rep_json = [e["ids"] for e in run_jsonl(
        replica, ["tokenizer", "encode", "--tokenizer", json_path, "--jsonl", "-"],
        [{"text": t} for t in texts])]
    rep_dec = [e["text"] for e in run_jsonl(
        replica, ["tokenizer", "decode", "--tokenizer", "dolma2", "--jsonl", "-"],
        [{"ids": x} for x in rep] + [{"ids": [i]} for i, _, _ in added])]
    rep_dec_added, rep_dec = rep_dec[len(texts):], rep_dec[:len(texts)]
    common.log(f"tokenizer: replica encode/decode of {len(texts)} texts: {time.time() - t0:.1f} s")

    t0 = time.time()
    enc_tt, _ = T.load_tiktoken()
    tt = enc_tt.encode_batch(texts, allowed_special="all")
    common.log(f"tokenizer: tiktoken: {time.time() - t0:.1f} s")

    hf_flat = [x for g in groups for x in hf_ids[g]]
    k = 0
    for g in groups:
        n = len(docs[g])
        sl = slice(k, k + n)
        k += n
        same_ids(g, "ids: replica vs HF tokenizers (allenai dolma2 tokenizer.json)",
                 rep[sl], hf_flat[sl], names[sl])
        same_ids(g, "ids: replica vs tiktoken (cl100k_base ranks + pattern, added tokens)",
                 rep[sl], tt[sl], names[sl])
    same_ids("all", "ids: HF tokenizers vs tiktoken (the two references)", hf_flat, tt, names)
    same_ids("all", "ids: replica's tokenizer.json loader on allenai's file vs HF tokenizers",
             rep_json, hf_flat, names)
    want_oracle = []
    with open(T.ORACLE, encoding="utf-8") as f:
        want_oracle = [json.loads(line)["ids"] for line in f if line.strip()]
    same_ids("oracle", "ids: oracle file (tests/data/oracles/tokenizer) vs HF tokenizers",
             want_oracle, hf_ids["oracle"], [f"oracle/{d}" for d, _ in docs["oracle"]])

    def round_trip(what, decoded):
        bad = [names[i] for i in range(len(texts)) if decoded[i] != texts[i]]
        emit("all", what, "identical" if not bad else f"{len(bad)} of {len(texts)} differ "
             f"(first: {bad[0]})", "the text back exactly, every document", not bad)

    round_trip("decode: replica decode(replica ids) == text", rep_dec)
    round_trip("decode: HF decode(replica ids) == text",
               hf.decode_batch(rep, skip_special_tokens=False))
    round_trip("decode: tiktoken decode(replica ids) == text", enc_tt.decode_batch(rep))

    bad = [c for (i, c, _), ids, dec in zip(added, rep_added, rep_dec_added)
           if ids != [i] or dec != c]
    emit("added tokens", "each of the tokenizer.json's added tokens: replica encode = [id], "
         "decode = content", f"{len(added) - len(bad)} of {len(added)}",
         "all (literal match, no whitespace stripped)", not bad)
    return rep


def check_specials(replica, special):
    info = common.run_replica(replica, "tokenizer", "info", "--tokenizer", "dolma2")
    oc = special["olmo_core_dolma2"]
    pairs = [("vocab_size", info["vocab_size"], oc["vocab_size"]),
             ("vocab_size (HF get_vocab_size with added tokens)", info["vocab_size"],
              special["vocab_size_hf"]),
             ("eos_token_id", info["eos_id"], oc["eos_token_id"]),
             ("pad_token_id", info["pad_id"], oc["pad_token_id"]),
             ("embedding rows = padded_vocab_size()", info["embedding_rows"],
              oc["padded_vocab_size"])]
    for what, got, want in pairs:
        emit("specials", f"{what}: replica vs OLMo-core TokenizerConfig.dolma2()",
             f"{got} vs {want}", "equal", got == want)
    emit("specials", "bos_token_id: OLMo-core TokenizerConfig.dolma2()", str(oc["bos_token_id"]),
         "None (replica adds no BOS)", oc["bos_token_id"] is None)


def check_tokenize_to_disk(replica, work, docs, hf_ids, special):
    """replica tokenize's token files against each document's HF ids followed by EOS."""
    extra = os.path.join(work, "extra.jsonl")
    with open(extra, "w", encoding="utf-8") as f:
        for g in ("oracle", "generated", "big"):
            for d, t in docs[g]:
                f.write(json.dumps({"id": f"{g}/{d}", "text": t}) + "\n")
    out = os.path.join(work, "tokens")
    t0 = time.time()
    summary = common.run_replica(replica, "tokenize", "--tokenizer", "dolma2", *T.CORPUS, extra,
                                 "--out", out, "--no-progress", "--threads", "2")
    common.log(f"tokenizer: replica tokenize: {time.time() - t0:.1f} s")
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    oc = special["olmo_core_dolma2"]
    emit("tokenize-to-disk", "dtype: replica manifest vs OLMo-core NumpyDatasetConfig.get_dtype",
         f"{manifest['dtype']} vs {oc['dtype']}", "equal", manifest["dtype"] == oc["dtype"])
    emit("tokenize-to-disk", "EOS after each document: replica manifest vs OLMo-core eos_token_id",
         f"{manifest['tokenizer']['eos_id']} vs {oc['eos_token_id']}", "equal",
         manifest["tokenizer"]["eos_id"] == oc["eos_token_id"] and
         manifest["eos_after_each_document"])
    eos = oc["eos_token_id"]
    files = {"sotu": ["sotu"], "moby_dick": ["moby_dick"], "heldout_sotu": ["heldout_sotu"],
             "extra": ["oracle", "generated", "big"]}
    for stem, groups in files.items():
        got = np.fromfile(os.path.join(out, stem + ".npy"), dtype="<u4")
        want = np.asarray([i for g in groups for x in hf_ids[g] if x for i in x + [eos]],
                          dtype="<u4")
        same = got.shape == want.shape and bool((got == want).all())
        emit(f"tokenize-to-disk/{stem}", "token file vs each non-empty document's HF ids + EOS",
             f"identical ({want.size} tokens)" if same else
             f"differs ({got.size} vs {want.size} tokens)", "identical", same)
    return summary


def check_committed(work, files):
    regen = os.path.join(work, "reference")
    G.write(regen, files, "tools/crosscheck/check_tokenizer.py (regenerated)")
    for name, text in files.items():
        path = os.path.join(COMMITTED, name)
        committed = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        emit("regenerated vs committed", f"tests/data/reference/tokenizer/{name}",
             "identical" if committed == text else
             ("missing" if committed is None else "differs"),
             "identical (integer results)", committed == text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--regen-only", action="store_true")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    hf = T.load_hf()
    docs = G.inputs()
    hf_ids = G.hf_encode(hf, docs)
    common.log(f"tokenizer: HF tokenizers on {sum(map(len, docs.values()))} texts: "
               f"{time.time() - t0:.1f} s")
    files = G.build(docs, hf_ids, G.olmo_core_tokenizer())
    check_committed(work, files)
    if a.regen_only:
        return
    special = json.loads(files["special_tokens.json"])
    check_encodings(a.replica, work, docs, hf_ids, hf)
    check_specials(a.replica, special)
    check_tokenize_to_disk(a.replica, work, docs, hf_ids, special)
    common.log(f"tokenizer: done in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

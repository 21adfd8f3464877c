#!/usr/bin/env python3
"""Writes tests/data/reference/tokenizer/: what Hugging Face `tokenizers` on allenai's dolma2
tokenizer.json gives for the tokenizer area's inputs (tokenizer_ref.py), small enough to commit:

  generated.jsonl      the seeded generated texts with their ids
  corpus.json          per corpus document: id, number of ids, sha256 of the ids (uint32 LE);
                       the same for the oracle texts and the >1 MB document; per corpus file the
                       sha256 of the token file tokenize-to-disk must write (each document's ids,
                       then EOS)
  special_tokens.json  the added tokens (id, content, special), vocabulary size, EOS/PAD/BOS ids
                       of OLMo-core's TokenizerConfig.dolma2() and the token dtype OLMo-core's
                       NumpyDatasetConfig.get_dtype picks for it
  VERSIONS.json        command, library versions, date

  usage: generate_tokenizer.py --out DIR   (run with the reference environment's python)
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import tokenizer_ref as T  # noqa: E402


def olmo_core_tokenizer():
    from olmo_core.data.tokenizer import TokenizerConfig
    return TokenizerConfig.dolma2()


def olmo_core_dtype(tok_config):
    from olmo_core.data.numpy_dataset import NumpyFSLDatasetConfig
    cfg = NumpyFSLDatasetConfig(tokenizer=tok_config, paths=["unused.npy"], sequence_length=1)
    return np.dtype(cfg.get_dtype()).name


def inputs():
    """{name: [(doc id, text)]} in a fixed order: corpus files, oracle texts, generated texts and
    the big document."""
    corpus = T.corpus_documents()
    gen = T.generated_texts()
    out = dict(corpus)
    out["oracle"] = [(str(i), t) for i, t in enumerate(T.oracle_texts())]
    out["generated"] = [(str(i), t) for i, t in enumerate(gen)]
    out["big"] = [("big", T.big_document(corpus, gen))]
    return out


def hf_encode(hf, docs):
    """{name: [ids]} for every input, HF tokenizers, no special tokens added (the tokenizer.json
    has no post-processor; OLMo's data pipeline appends EOS itself)."""
    names = list(docs)
    flat = [t for n in names for _, t in docs[n]]
    enc = [e.ids for e in hf.encode_batch(flat, add_special_tokens=False)]
    out, k = {}, 0
    for n in names:
        out[n] = enc[k:k + len(docs[n])]
        k += len(docs[n])
    return out


def token_file_digest(id_lists, eos):
    parts = [np.asarray(ids + [eos], dtype="<u4") for ids in id_lists if ids]
    return hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest()


def build(docs, ids, tok_config):
    """The committed files' contents: {file name: text}."""
    eos = tok_config.eos_token_id
    corpus = {}
    for name in docs:
        if name == "generated":
            continue
        corpus[name] = [{"id": d, "tokens": len(x), "sha256": T.ids_digest(x)}
                        for (d, _), x in zip(docs[name], ids[name])]
    token_files = {name: {"documents": sum(1 for x in ids[name] if x),
                          "tokens": sum(len(x) + 1 for x in ids[name] if x),
                          "sha256": token_file_digest(ids[name], eos)}
                   for name in ("sotu", "moby_dick", "heldout_sotu")}
    generated = "".join(json.dumps({"id": d, "text": t, "ids": x}, ensure_ascii=False) + "\n"
                        for (d, t), x in zip(docs["generated"], ids["generated"]))
    special = {
        "added_tokens": [{"id": i, "content": c, "special": s} for i, c, s in T.added_tokens()],
        "vocab_size_hf": T.load_hf().get_vocab_size(with_added_tokens=True),
        "olmo_core_dolma2": {"vocab_size": tok_config.vocab_size,
                             "eos_token_id": tok_config.eos_token_id,
                             "pad_token_id": tok_config.pad_token_id,
                             "bos_token_id": tok_config.bos_token_id,
                             "padded_vocab_size": tok_config.padded_vocab_size(),
                             "dtype": olmo_core_dtype(tok_config)},
    }
    return {
        "generated.jsonl": generated,
        "corpus.json": json.dumps({"documents": corpus, "token_files": token_files}, indent=1,
                                  sort_keys=True) + "\n",
        "special_tokens.json": json.dumps(special, indent=1, sort_keys=True,
                                          ensure_ascii=False) + "\n",
    }


def write(out_dir, files, generated_by):
    os.makedirs(out_dir, exist_ok=True)
    for name, text in files.items():
        tmp = os.path.join(out_dir, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out_dir, name))
    common.write_versions(out_dir, generated_by)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    docs = inputs()
    ids = hf_encode(T.load_hf(), docs)
    write(a.out, build(docs, ids, olmo_core_tokenizer()),
          "tools/crosscheck/generate_tokenizer.py --out " + a.out)
    common.log(f"generate_tokenizer: wrote {a.out}")


if __name__ == "__main__":
    main()

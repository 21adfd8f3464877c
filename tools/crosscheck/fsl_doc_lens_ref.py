"""The fsl_doc_lens area's inputs and OLMo-core's side, shared by generate_fsl_doc_lens.py and
check_fsl_doc_lens.py (docs/crosscheck.md, "fsl_doc_lens").

OLMo-core's plain NumpyFSLDataset with generate_doc_lengths on: every instance (seq_len tokens cut
from a file, documents split at its edges) has `doc_lens` from get_document_lengths over its own
tokens, and the model is given get_cumulative_document_lengths of a collated batch's (zero-padded)
doc_lens as cu_doc_lens. The token files are synthetic ones built to hit the rule's edge cases
(instances with no EOS, EOS as first or last token, runs of EOS; with a BOS token, EOS not followed
by BOS; BOS equal to EOS, as dolma2_sigdig's tokenizer config has it) and files written by
`replica tokenize`.
"""
import hashlib
import os
import random
import struct

TOKEN_SETS = {
    # dolma2's ids: no BOS, EOS 100257, padding 100277
    "u32": {"dtype": "uint32", "vocab_size": 100278, "eos": 100257, "pad": 100277, "bos": None},
    # a small vocabulary with a BOS token
    "u16bos": {"dtype": "uint16", "vocab_size": 1000, "eos": 2, "pad": 0, "bos": 1},
    # BOS equal to EOS (OLMo-core's dolma2_sigdig tokenizer config): a document ends at an EOS
    # followed by another EOS
    "u32boseos": {"dtype": "uint32", "vocab_size": 100278, "eos": 100257, "pad": 100277,
                  "bos": 100257},
}

# Loader seeds and instances per global batch for the collated batches recorded.
LOADER_SEEDS = ((0, 4), (34521, 3))


def make_tokens(rng, tset, regime, n_tokens):
    """n_tokens ids of one of the regimes: "docs" (documents of 1 to 40 tokens, each ending in
    EOS; with BOS, starting with BOS and sometimes holding an EOS not followed by BOS), "runs"
    (runs of one to four EOS between short stretches, and at the very start), "sparse" (long
    stretches without EOS, so whole instances have none)."""
    s = TOKEN_SETS[tset]
    special = {s["eos"], s["pad"]} | ({s["bos"]} if s["bos"] is not None else set())
    ordinary = [t for t in range(min(s["vocab_size"], 4000)) if t not in special]
    out = []
    while len(out) < n_tokens:
        if regime == "runs":
            out += [s["eos"]] * rng.randint(1, 4)
            out += [rng.choice(ordinary) for _ in range(rng.randint(0, 6))]
        elif regime == "sparse":
            out += [rng.choice(ordinary) for _ in range(rng.randint(40, 150))] + [s["eos"]]
        else:
            n = rng.randint(1, 40)
            body = [rng.choice(ordinary) for _ in range(n)]
            if s["bos"] is not None:
                body[0] = s["bos"]
                if n > 3 and rng.random() < 0.3:
                    body[rng.randrange(1, n - 1)] = s["eos"]
            body[-1] = s["eos"]
            out += body
    return out[:n_tokens]


def write_tokens(path, tokens, dtype):
    fmt = "<%d%s" % (len(tokens), "I" if dtype == "uint32" else "H")
    with open(path, "wb") as f:
        f.write(struct.pack(fmt, *tokens))


def make_case_files(case, out_dir):
    """Writes the case's synthetic token files into out_dir; returns their paths in order."""
    rng = random.Random(f"fsl_doc_lens/{case['name']}/{case['data_seed']}")
    s = TOKEN_SETS[case["set"]]
    paths = []
    for i, (regime, n_tokens) in enumerate(case["files"]):
        path = os.path.join(out_dir, f"{case['name']}.{i}.{s['dtype']}.bin")
        write_tokens(path, make_tokens(rng, case["set"], regime, n_tokens), s["dtype"])
        paths.append(path)
    return paths


def sha16(ids):
    return hashlib.sha256(struct.pack("<%di" % len(ids), *ids)).hexdigest()[:16]


def olmo_core_case(tset, paths, seq_len, work_dir, full=2, loader_seeds=LOADER_SEEDS):
    """OLMo-core's NumpyFSLDataset (generate_doc_lengths on) over `paths`: {"num_instances",
    "fingerprint", "instances": [{"ids": sha16 of its ids (int32 LE), "doc_lens"}], "full": the
    first `full` instances' ids and doc_lens, "loader": {"seed/batch": the first two global
    batches' {"index", "doc_lens" (collated, zero-padded), "cu_doc_lens" (what the model gets)}}}."""
    from olmo_core.data import (NumpyDataLoaderConfig, NumpyDatasetDType, NumpyFSLDatasetConfig,
                                TokenizerConfig)
    from olmo_core.data.utils import get_cumulative_document_lengths
    s = TOKEN_SETS[tset]
    os.makedirs(work_dir, exist_ok=True)
    tok = TokenizerConfig(vocab_size=s["vocab_size"], eos_token_id=s["eos"],
                          pad_token_id=s["pad"], bos_token_id=s["bos"])
    ds = NumpyFSLDatasetConfig(tokenizer=tok, paths=list(paths), sequence_length=seq_len,
                               dtype=NumpyDatasetDType(s["dtype"]), work_dir=work_dir,
                               generate_doc_lengths=True).build()
    ds.prepare()
    n = len(ds)
    out = {"num_instances": n, "fingerprint": ds.fingerprint, "instances": [], "full": [],
           "loader": {}}
    for i in range(n):
        item = ds[i]
        ids = [int(x) for x in item["input_ids"].tolist()]
        lens = [int(x) for x in item["doc_lens"].tolist()]
        out["instances"].append({"ids": sha16(ids), "doc_lens": lens})
        if i < full:
            out["full"].append({"ids": ids, "doc_lens": lens})
    for seed, batch in loader_seeds:
        if n < batch:
            continue
        loader = NumpyDataLoaderConfig(global_batch_size=batch * seq_len, seed=seed,
                                       work_dir=work_dir, num_workers=0,
                                       target_device_type="cpu").build(ds)
        loader.reshuffle(epoch=1)
        rows = []
        for b, x in enumerate(loader):
            rows.append({"index": [int(i) for i in x["index"].tolist()],
                         "doc_lens": [[int(v) for v in r] for r in x["doc_lens"].tolist()],
                         "cu_doc_lens": [int(v) for v in
                                         get_cumulative_document_lengths(x["doc_lens"]).tolist()]})
            if b == 1:
                break
        out["loader"][f"{seed}/{batch}"] = rows
    return out


def fixture_cases():
    """The committed fixture's synthetic cases: token set x sequence length x file layout."""
    cases = []
    layouts = {"a": [["docs", 700], ["runs", 300], ["sparse", 500]],
               "b": [["runs", 130], ["docs", 257]]}
    for tset in ("u32", "u16bos", "u32boseos"):
        for seq_len in (8, 32):
            for layout, files in layouts.items():
                name = f"{tset}.T{seq_len}.{layout}"
                cases.append({"name": name, "set": tset, "seq_len": seq_len, "data_seed": 0,
                              "files": files})
    return cases


# Files written by `replica tokenize` (dolma2, uint32) that the fixture also holds.
TOKENIZED_INPUTS = ["tests/data/oracles/tokenizer/dolma2-public.jsonl"]
TOKENIZED_SEQ_LENS = (64, 512)

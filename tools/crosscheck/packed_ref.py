"""The packed area's inputs and OLMo-core's side, shared by generate_packed.py and check_packed.py
(docs/crosscheck.md, "packed").

Token files are synthetic: documents of lengths drawn by Python's random.Random(seed) from a few
regimes (many equal lengths, so the unstable sort's tie order matters; lengths above the sequence
length; exactly the sequence length), ids drawn below the vocabulary size avoiding the special
tokens, each document ending with EOS (with a BOS token: starting with BOS, and some EOS inside a
document not followed by BOS). Some files have tokens after their last EOS, one has no EOS at all.

OLMo-core builds `NumpyPackedFSLDatasetConfig(...).build()` on them (generate_doc_lengths on) and
every instance's input_ids, label_mask and doc_lens are recorded; numpy must run with
NPY_DISABLE_CPU_FEATURES set (SCALAR_SORT_ENV) so np.argsort takes its scalar path.
"""
import hashlib
import os
import random
import struct

# numpy 2.4's runtime-dispatched sort kernels (AVX-512, AVX2) order ties differently from its
# scalar introsort; these names turn them off (any not present on the CPU is ignored by numpy).
SCALAR_SORT_ENV = {"NPY_DISABLE_CPU_FEATURES": "AVX512_SPR AVX512_ICL X86_V4 X86_V3"}

TOKEN_SETS = {
    # dolma2's ids: no BOS, EOS 100257, padding 100277
    "u32": {"dtype": "uint32", "vocab_size": 100278, "eos": 100257, "pad": 100277, "bos": None},
    # a small vocabulary with a BOS token
    "u16bos": {"dtype": "uint16", "vocab_size": 1000, "eos": 2, "pad": 0, "bos": 1},
    # padding with the EOS token (each padding token is then a document of its own)
    "u16padeos": {"dtype": "uint16", "vocab_size": 500, "eos": 3, "pad": 3, "bos": None},
}


def doc_length(rng, regime, seq_len):
    if regime == "ties":  # a handful of lengths, many documents each
        return rng.choice([1, 2, 3, seq_len // 4, seq_len // 4, seq_len // 2, seq_len // 2 + 1,
                           seq_len - 1, seq_len])
    if regime == "long":  # up to three sequence lengths
        return rng.randint(1, 3 * seq_len)
    return rng.randint(1, seq_len)  # "mixed"


def make_tokens(rng, tset, regime, seq_len, num_docs, tail, eos_free):
    s = TOKEN_SETS[tset]
    special = {s["eos"], s["pad"]} | ({s["bos"]} if s["bos"] is not None else set())
    ordinary = [t for t in range(min(s["vocab_size"], 4000)) if t not in special]
    out = []
    if eos_free:
        return [rng.choice(ordinary) for _ in range(num_docs * seq_len // 2 + 1)]
    for _ in range(num_docs):
        n = doc_length(rng, regime, seq_len)
        body = [rng.choice(ordinary) for _ in range(n)]
        if s["bos"] is not None:
            body[0] = s["bos"]
            if n > 3 and rng.random() < 0.3:  # an EOS inside, not followed by BOS
                body[rng.randrange(1, n - 1)] = s["eos"]
        body[-1] = s["eos"]
        out += body
    out += [rng.choice(ordinary) for _ in range(tail)]
    return out


def write_tokens(path, tokens, dtype):
    fmt = "<%d%s" % (len(tokens), "I" if dtype == "uint32" else "H")
    with open(path, "wb") as f:
        f.write(struct.pack(fmt, *tokens))


def make_case_files(case, out_dir):
    """Writes the case's token files into out_dir; returns their paths in order."""
    rng = random.Random(f"packed/{case['name']}/{case['data_seed']}")
    s = TOKEN_SETS[case["set"]]
    paths = []
    for i, spec in enumerate(case["files"]):
        toks = make_tokens(rng, case["set"], spec["regime"], case["seq_len"], spec["docs"],
                           spec.get("tail", 0), spec.get("eos_free", False))
        path = os.path.join(out_dir, f"{case['name']}.{i}.{s['dtype']}.bin")
        write_tokens(path, toks, s["dtype"])
        paths.append(path)
    return paths


def sha16(data):
    return hashlib.sha256(data).hexdigest()[:16]


def ids_bytes(ids):
    return struct.pack("<%di" % len(ids), *ids)


def mask_bytes(mask):
    return bytes(1 if m else 0 for m in mask)


def record(ids, mask, doc_lens):
    """One instance as the fixture stores it."""
    return {"ids": sha16(ids_bytes(ids)), "mask": sha16(mask_bytes(mask)),
            "tokens": sum(1 for m in mask if m), "doc_lens": doc_lens}


def olmo_core_case(case, paths, work_dir, full=2, loader_seeds=()):
    """OLMo-core's dataset for one case: {"num_instances", "fingerprint", "instances": [record],
    "full": [{"ids", "mask", "doc_lens"} of the first `full` instances], "loader": {seed: first
    batches' instance ids}} or {"error": message} when OLMo-core refuses the case."""
    from olmo_core.data import (NumpyDataLoaderConfig, NumpyDatasetDType,
                                NumpyPackedFSLDatasetConfig, TokenizerConfig)
    from olmo_core.data.types import LongDocStrategy
    s = TOKEN_SETS[case["set"]]
    os.makedirs(work_dir, exist_ok=True)
    tok = TokenizerConfig(vocab_size=s["vocab_size"], eos_token_id=s["eos"],
                          pad_token_id=s["pad"], bos_token_id=s["bos"])
    cfg = NumpyPackedFSLDatasetConfig(
        tokenizer=tok, paths=list(paths), sequence_length=case["seq_len"],
        dtype=NumpyDatasetDType(s["dtype"]), work_dir=work_dir, generate_doc_lengths=True,
        long_doc_strategy=LongDocStrategy(case["strategy"]),
        source_group_size=case["group"])
    try:
        ds = cfg.build()
        ds.prepare()
        n = len(ds)
    except Exception as e:  # noqa: BLE001  (the refusal is the answer)
        return {"error": f"{type(e).__name__}: {e}"}
    out = {"num_instances": n, "fingerprint": ds.fingerprint, "instances": [], "full": [],
           "loader": {}}
    for i in range(n):
        item = ds[i]
        ids = [int(x) for x in item["input_ids"].tolist()]
        mask = [bool(x) for x in item["label_mask"].tolist()]
        lens = [int(x) for x in item["doc_lens"].tolist()]
        out["instances"].append(record(ids, mask, lens))
        if i < full:
            out["full"].append({"ids": ids, "mask": [int(m) for m in mask], "doc_lens": lens})
    for seed, batch in loader_seeds:
        if n < batch:
            continue
        loader = NumpyDataLoaderConfig(global_batch_size=batch * case["seq_len"], seed=seed,
                                       work_dir=work_dir, num_workers=0,
                                       target_device_type="cpu").build(ds)
        loader.reshuffle(epoch=1)
        rows = []
        for b, x in enumerate(loader):
            rows.append([int(i) for i in x["index"].tolist()])
            if b == 1:
                break
        out["loader"][f"{seed}/{batch}"] = rows
    return out


def _files(kinds):
    table = {
        "ties": {"regime": "ties", "docs": 90, "tail": 5},
        "mixed": {"regime": "mixed", "docs": 40},
        "long": {"regime": "long", "docs": 30, "tail": 3},
        "noeos": {"regime": "mixed", "docs": 8, "eos_free": True},
        "few": {"regime": "ties", "docs": 5},
    }
    return [table[k] for k in kinds]


def fixture_cases():
    """The committed fixture's cases: token sets x sequence lengths x strategies x group sizes x
    data seeds."""
    cases = []
    layouts = [("a", ["ties", "mixed", "long", "noeos", "few"]), ("b", ["long", "ties", "few"])]
    for tset, seq_lens in (("u32", (16, 64)), ("u16bos", (32,)), ("u16padeos", (16,))):
        for seq_len in seq_lens:
            for strategy in ("truncate", "fragment"):
                for group in (1, 2):
                    for layout, kinds in layouts:
                        for data_seed in (0, 1):
                            if (layout == "b" or seq_len > 32) and (group == 2 or data_seed == 1):
                                continue
                            name = f"{tset}.T{seq_len}.{strategy}.g{group}.{layout}.s{data_seed}"
                            cases.append({"name": name, "set": tset, "seq_len": seq_len,
                                          "strategy": strategy, "group": group,
                                          "data_seed": data_seed, "files": _files(kinds)})
    # A group size that does not divide the file count, and the no-EOS file alone.
    cases.append({"name": "u32.T16.truncate.g3.a.s2", "set": "u32", "seq_len": 16,
                  "strategy": "truncate", "group": 3, "data_seed": 2,
                  "files": _files(["ties", "mixed", "long", "noeos", "few"])})
    cases.append({"name": "u32.T16.truncate.g1.noeos", "set": "u32", "seq_len": 16,
                  "strategy": "truncate", "group": 1, "data_seed": 0,
                  "files": _files(["noeos"])})
    cases.append({"name": "u32.T24.truncate.g1.notpow2", "set": "u32", "seq_len": 24,
                  "strategy": "truncate", "group": 1, "data_seed": 0,
                  "files": _files(["few"])})
    return cases


LOADER_SEEDS = ((0, 4), (34521, 8))

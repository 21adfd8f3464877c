#!/usr/bin/env python3
"""Crosscheck area "fsl_doc_lens": OLMo-core's own NumpyFSLDataset with generate_doc_lengths
(NumpyFSLDatasetConfig, installed version) against `replica data batch` on a plain run config with
data.generate_doc_lengths: true, for token files written by `replica tokenize` (the bundled
corpus, dolma2 uint32) at several sequence lengths and for synthetic files drawn afresh each run
(token set with and without BOS, BOS equal to EOS, sequence length): every instance's token ids
and doc_lens in the order the loader shuffles them (one global batch holding them all), the
instance count and OLMo-core's fingerprint; `replica train` on such a config (the instances each
step fed, by --dump-batches, against OLMo-core's loader); and the committed reference
(tests/data/reference/fsl_doc_lens: collated doc_lens and cu_doc_lens per batch) regenerated.

  usage: check_fsl_doc_lens.py --replica BUILD/replica --work DIR [--cases N] [--seed S]
                               [--skip-regen]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import fsl_doc_lens_ref as F  # noqa: E402
import generate_fsl_doc_lens as G  # noqa: E402

AREA = "fsl_doc_lens"
COMMITTED = os.path.join(common.REPO, "tests", "data", "reference", "fsl_doc_lens")
CORPUS = ["data/corpus/moby_dick.jsonl.zst", "data/corpus/heldout_sotu.jsonl.zst"]


def replica_config(tset, paths, seq_len, seed, global_batch, work, name):
    s = F.TOKEN_SETS[tset]
    bos = "null" if s["bos"] is None else s["bos"]
    path = os.path.join(work, name + ".yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"""model:
  model_type: olmo3
  vocab_size: {s['vocab_size']}
  hidden_size: 32
  intermediate_size: 64
  num_hidden_layers: 1
  num_attention_heads: 2
  num_key_value_heads: 2
  rms_norm_eps: 1.0e-6
  rope_theta: 500000
  sliding_window: 8
  max_position_embeddings: {seq_len}
  pad_token_id: {s['pad']}
  eos_token_id: {s['eos']}
  bos_token_id: {bos}
data:
  paths: {json.dumps(paths)}
  seq_len: {seq_len}
  seed: {seed}
  dtype: {s['dtype']}
  generate_doc_lengths: true
train:
  max_steps: 1
  global_batch_instances: {global_batch}
optim:
  lr: 1.0e-3
""")
    return path


def olmo_core_order(tset, paths, seq_len, seed, n, work):
    """OLMo-core's loader over its NumpyFSLDataset: the instance ids of one global batch of all
    n instances, seed `seed`, epoch 1."""
    from olmo_core.data import (NumpyDataLoaderConfig, NumpyDatasetDType, NumpyFSLDatasetConfig,
                                TokenizerConfig)
    s = F.TOKEN_SETS[tset]
    tok = TokenizerConfig(vocab_size=s["vocab_size"], eos_token_id=s["eos"], pad_token_id=s["pad"],
                          bos_token_id=s["bos"])
    ds = NumpyFSLDatasetConfig(tokenizer=tok, paths=list(paths), sequence_length=seq_len,
                               dtype=NumpyDatasetDType(s["dtype"]), work_dir=work,
                               generate_doc_lengths=True).build()
    loader = NumpyDataLoaderConfig(global_batch_size=n * seq_len, seed=seed, work_dir=work,
                                   num_workers=0, target_device_type="cpu").build(ds)
    loader.reshuffle(epoch=1)
    return [int(x) for x in next(iter(loader))["index"].tolist()]


def compare_batch(replica, tset, paths, seq_len, work, name, seed):
    """`replica data batch 0` over every instance at once against OLMo-core."""
    ref = F.olmo_core_case(tset, paths, seq_len, os.path.join(work, "olmo_core." + name), full=0,
                           loader_seeds=())
    n = ref["num_instances"]
    cfg = replica_config(tset, paths, seq_len, seed, n, work, name)
    s = F.TOKEN_SETS[tset]
    got = common.run_replica(replica, "data", "batch", "0", "--config", cfg, "--tokens",
                             str(seq_len), "--tokenizer", "none", "--vocab-size",
                             str(s["vocab_size"]))
    rows = [("instances", got["num_instances"], f"OLMo-core's {n}", got["num_instances"] == n),
            ("fingerprint", got["olmo_core_fingerprint"][:16], ref["fingerprint"][:16],
             got["olmo_core_fingerprint"] == ref["fingerprint"])]
    bad = [e["instance"] for e in got["instances"]
           if {"ids": F.sha16(e["tokens"]), "doc_lens": e["doc_lens"]}
           != ref["instances"][e["instance"]]]
    rows.append(("instances identical (ids, doc_lens)", f"{n - len(bad)} of {n}", "all",
                 not bad and len(got["instances"]) == n))
    docs = sum(len(r["doc_lens"]) for r in ref["instances"])
    rows.append(("documents (pieces) in all instances", docs, "OLMo-core's count, above", True))
    order = olmo_core_order(tset, paths, seq_len, seed, n, os.path.join(work, "olmo_core." + name))
    mine = [e["instance"] for e in got["instances"]]
    rows.append((f"loader order, seed {seed}", "identical" if mine == order else "differs",
                 "OLMo-core's", mine == order))
    return rows


def compare_trainer(replica, tset, paths, seq_len, work, name, seed, batch, steps):
    """`replica train` on the plain config with document lengths: it trains, and each step feeds
    the instances of OLMo-core's loader (whose collated cu_doc_lens the committed reference
    checks against replica's loader in `make test`)."""
    ref = F.olmo_core_case(tset, paths, seq_len, os.path.join(work, "olmo_core.t." + name), full=0,
                           loader_seeds=((seed, batch),))
    want = ref["loader"].get(f"{seed}/{batch}", [])[:steps]
    cfg = replica_config(tset, paths, seq_len, seed, batch, work, name + ".train")
    run_dir = os.path.join(work, name + ".run")
    dump = os.path.join(work, name + ".batches")
    proc = subprocess.run([replica, "train", cfg, "--run-dir", run_dir, "--quiet",
                           "--set", f"train.max_steps={len(want)}", "--set",
                           "checkpoint.interval=1000", "--dump-batches", dump],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return [("replica train ran", f"exit {proc.returncode}: {proc.stderr[-300:]}", "exit 0",
                 False)]
    fed = [json.loads(line) for line in open(os.path.join(dump, "rank-0.jsonl"), encoding="utf-8")
           if line.strip()]
    rows = []
    for k, row in enumerate(want):
        got = fed[k]["instances"] if k < len(fed) else None
        rows.append((f"step {k + 1}: instances fed", "identical" if got == row["index"]
                     else f"differs ({got})", "OLMo-core's loader", got == row["index"]))
    return rows


def main():
    a, work, seed, rng = common.drawn_cases_setup("fsl_doc_lens", __doc__.splitlines()[0], 4)

    # `replica tokenize` of the bundled corpus (dolma2, uint32).
    tok_dir = os.path.join(work, "tokenized")
    subprocess.run([a.replica, "tokenize", "--tokenizer", "dolma2",
                    *[os.path.join(common.REPO, p) for p in CORPUS], "--out", tok_dir, "--dtype",
                    "uint32", "--no-progress", "--threads", "2"], check=True, capture_output=True)
    corpus = [os.path.join(tok_dir, os.path.basename(p).split(".")[0] + ".npy") for p in CORPUS]
    jobs = [(f"corpus.T{T}", "u32", corpus, T) for T in (128, 1024, 4096)]
    for k in range(a.cases):
        tset = rng.choice(sorted(F.TOKEN_SETS))
        regimes = [rng.choice(["docs", "runs", "sparse"]) for _ in range(rng.randint(1, 3))]
        case = {"name": f"live{k}.{tset}", "set": tset, "data_seed": rng.randrange(2**32),
                "seq_len": rng.choice([4, 16, 64, 256]),
                "files": [[r, rng.randint(50, 3000)] for r in regimes]}
        d = os.path.join(work, case["name"])
        os.makedirs(d, exist_ok=True)
        paths = F.make_case_files(case, d)
        if sum(os.path.getsize(p) for p in paths) // (4 if tset.startswith("u32") else 2) \
                < case["seq_len"]:
            continue
        jobs.append((case["name"], tset, paths, case["seq_len"]))
    for name, tset, paths, T in jobs:
        t0 = time.time()
        loader_seed = rng.randrange(2**63)
        label = f"{name} T{T} {len(paths)} files (draw {seed})"
        try:
            rows = compare_batch(a.replica, tset, paths, T, work, name, loader_seed)
        except Exception as e:  # noqa: BLE001  (a crash is a failed row, the rest still run)
            rows = [("the comparison ran", f"{type(e).__name__}: {str(e)[:300]}", "no error", False)]
        for what, value, bound, ok in rows:
            common.emit(AREA, label, what, value, bound, ok)
        common.log(f"fsl_doc_lens: {name}: {time.time() - t0:.1f} s")
    # The trainer on the corpus: two steps of four instances at T = 128.
    try:
        rows = compare_trainer(a.replica, "u32", corpus, 128, work, "corpus.T128", 34521, 4, 2)
    except Exception as e:  # noqa: BLE001
        rows = [("the comparison ran", f"{type(e).__name__}: {str(e)[:300]}", "no error", False)]
    for what, value, bound, ok in rows:
        common.emit(AREA, "corpus T128 replica train --dump-batches", what, value, bound, ok)
    if a.skip_regen:
        return
    out = tempfile.mkdtemp(prefix="fsl_doc_lens_regen.", dir=work)
    sys.argv = ["generate_fsl_doc_lens.py", "--replica", a.replica, "--out", out, "--work",
                os.path.join(work, "regen")]
    G.main()
    new = open(os.path.join(out, "olmo_core.json"), encoding="utf-8").read()
    old = open(os.path.join(COMMITTED, "olmo_core.json"), encoding="utf-8").read()
    common.emit(AREA, "regenerated vs committed", "tests/data/reference/fsl_doc_lens/olmo_core.json",
                "identical" if new == old else "differs", "identical (integer results)",
                new == old)
    same = all(open(os.path.join(out, "tokens", f), "rb").read()
               == open(os.path.join(COMMITTED, "tokens", f), "rb").read()
               for f in sorted(os.listdir(os.path.join(out, "tokens"))))
    common.emit(AREA, "regenerated vs committed", "tests/data/reference/fsl_doc_lens/tokens/*",
                "identical" if same else "differs", "identical bytes", same)


if __name__ == "__main__":
    main()

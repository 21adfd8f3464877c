#!/usr/bin/env python3
"""Crosscheck area "packed": OLMo-core's own NumpyPackedFSLDataset (NumpyPackedFSLDatasetConfig,
installed version, numpy on its scalar sort path) against `replica data batch` on a packed run
config, for cases drawn afresh each run (token set, sequence length, long-document strategy,
source_group_size, file layout, data and loader seeds): every instance's token ids, padding and
doc_lens, the instance count, OLMo-core's fingerprint and the loader's shuffle of the packed
instances (one global batch holding them all); and the committed reference
(tests/data/reference/packed) regenerated.

  usage: check_packed.py --replica BUILD/replica --work DIR [--cases N] [--seed S] [--skip-regen]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import packed_ref as P  # noqa: E402  (no numpy import)

# numpy reads the setting when it is imported, so the process starts again with it.
if os.environ.get("NPY_DISABLE_CPU_FEATURES") != P.SCALAR_SORT_ENV["NPY_DISABLE_CPU_FEATURES"]:
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **P.SCALAR_SORT_ENV})

import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import common  # noqa: E402
import generate_packed as G  # noqa: E402

AREA = "packed"
COMMITTED = os.path.join(common.REPO, "tests", "data", "reference", "packed")


def random_case(rng, k):
    tset = rng.choice(sorted(P.TOKEN_SETS))
    kinds = [rng.choice(["ties", "mixed", "long", "few", "noeos"]) for _ in range(rng.randint(1, 5))]
    if all(x == "noeos" for x in kinds):
        kinds.append("ties")
    return {"name": f"live{k}.{tset}", "set": tset, "seq_len": rng.choice([16, 32, 64, 128]),
            "strategy": rng.choice(["truncate", "fragment"]), "group": rng.randint(1, 3),
            "data_seed": rng.randrange(2**32), "files": P._files(kinds),
            "loader_seed": rng.randrange(2**63)}


def replica_config(case, paths, work):
    s = P.TOKEN_SETS[case["set"]]
    bos = "null" if s["bos"] is None else s["bos"]
    path = os.path.join(work, case["name"] + ".yaml")
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
  max_position_embeddings: {case['seq_len']}
  pad_token_id: {s['pad']}
  eos_token_id: {s['eos']}
  bos_token_id: {bos}
data:
  paths: {json.dumps(paths)}
  seq_len: {case['seq_len']}
  seed: {case['loader_seed']}
  dtype: {s['dtype']}
  packing: obfd
  long_doc_strategy: {case['strategy']}
  source_group_size: {case['group']}
  generate_doc_lengths: true
train:
  max_steps: 1
  global_batch_instances: 1
optim:
  lr: 1.0e-3
""")
    return path


def compare(replica, case, work):
    os.makedirs(work, exist_ok=True)
    paths = P.make_case_files(case, work)
    ref = P.olmo_core_case(case, paths, os.path.join(work, "olmo_core"), full=0)
    if "error" in ref or ref["num_instances"] == 0:
        return [("OLMo-core builds the dataset", ref.get("error", "0 instances"),
                 "some instances (the case draws at least one file with EOS)", False)]
    n, T = ref["num_instances"], case["seq_len"]
    cfg = replica_config(case, paths, work)
    s = P.TOKEN_SETS[case["set"]]
    got = common.run_replica(replica, "data", "batch", "0", "--config", cfg,
                             "--set", f"train.global_batch_instances={n}", "--tokens", str(T),
                             "--tokenizer", "none", "--vocab-size", str(s["vocab_size"]))
    rows = [("instances", got["num_instances"], f"OLMo-core's {n}", got["num_instances"] == n),
            ("fingerprint", got["olmo_core_fingerprint"][:16], ref["fingerprint"][:16],
             got["olmo_core_fingerprint"] == ref["fingerprint"])]
    bad = []
    for e in got["instances"]:
        i = e["instance"]
        mask = [1] * e["tokens_in_documents"] + [0] * e["padding"]
        mine = P.record(e["tokens"], mask, e["doc_lens"])
        if mine != ref["instances"][i]:
            bad.append(i)
    rows.append(("instances identical (ids, label mask, doc_lens)", f"{n - len(bad)} of {n}",
                 "all", not bad and len(got["instances"]) == n))
    # OLMo-core's loader over the packed dataset (rebuilt from its cache): one global batch of
    # all n instances.
    from olmo_core.data import (NumpyDataLoaderConfig, NumpyDatasetDType,
                                NumpyPackedFSLDatasetConfig, TokenizerConfig)
    from olmo_core.data.types import LongDocStrategy
    tok = TokenizerConfig(vocab_size=s["vocab_size"], eos_token_id=s["eos"], pad_token_id=s["pad"],
                          bos_token_id=s["bos"])
    ds = NumpyPackedFSLDatasetConfig(tokenizer=tok, paths=paths, sequence_length=T,
                                     dtype=NumpyDatasetDType(s["dtype"]),
                                     work_dir=os.path.join(work, "olmo_core"),
                                     long_doc_strategy=LongDocStrategy(case["strategy"]),
                                     source_group_size=case["group"]).build()
    loader = NumpyDataLoaderConfig(global_batch_size=n * T, seed=case["loader_seed"],
                                   work_dir=os.path.join(work, "olmo_core"), num_workers=0,
                                   target_device_type="cpu").build(ds)
    loader.reshuffle(epoch=1)
    order = [int(x) for x in next(iter(loader))["index"].tolist()]
    mine = [e["instance"] for e in got["instances"]]
    rows.append((f"loader order, seed {case['loader_seed']}", "identical" if mine == order
                 else "differs", "OLMo-core's", mine == order))
    pad = 1.0 - sum(r["tokens"] for r in ref["instances"]) / (n * T)
    rows.append(("padding fraction (OLMo-core)", round(pad, 4), "measured", True))
    return rows


def main():
    a, work, seed, rng = common.drawn_cases_setup("packed", __doc__.splitlines()[0], 8)
    for k in range(a.cases):
        case = random_case(rng, k)
        t0 = time.time()
        label = (f"{case['name']} T{case['seq_len']} {case['strategy']} g{case['group']} "
                 f"{len(case['files'])} files (draw {seed})")
        try:
            rows = compare(a.replica, case, os.path.join(work, case["name"]))
        except Exception as e:  # noqa: BLE001  (a crash is a failed row, the rest still run)
            rows = [("the comparison ran", f"{type(e).__name__}: {str(e)[:300]}", "no error", False)]
        for what, value, bound, ok in rows:
            common.emit(AREA, label, what, value, bound, ok)
        common.log(f"packed: {case['name']}: {time.time() - t0:.1f} s")
    if a.skip_regen:
        return
    # The committed fixture, regenerated in a scratch directory: olmo_core.json and argsort.json.
    out = tempfile.mkdtemp(prefix="packed_regen.", dir=work)
    sys.argv = ["generate_packed.py", "--out", out, "--work", os.path.join(work, "regen")]
    G.main()
    for name in ("olmo_core.json", "argsort.json"):
        new = open(os.path.join(out, name), encoding="utf-8").read()
        old = open(os.path.join(COMMITTED, name), encoding="utf-8").read()
        common.emit(AREA, "regenerated vs committed", f"tests/data/reference/packed/{name}",
                    "identical" if new == old else "differs", "identical (integer results)",
                    new == old)


if __name__ == "__main__":
    main()

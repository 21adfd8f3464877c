#!/usr/bin/env python3
"""Writes tests/data/reference/python_random/: the order in which OLMo-core's own
NumpyDatasetConfig._resolve_paths_metadata puts a dataset's source files for a
source_permutation_seed (random.Random(seed).shuffle of the file list), and the raw draws of
random.Random behind it (getrandbits, randrange) for a few seeds:

  permutations.json  per (seed, file count): the permuted positions, from OLMo-core's code
  draws.json         per seed: getrandbits(k) streams and randrange(n) values
  VERSIONS.json      command, library versions, date

  usage: generate_python_random.py --out DIR
"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# Seeds: zero, small, OLMo-core's long-context recipe's 123, negative (Python uses abs), and the
# word boundaries of CPython's seeding key (2^32 - 1, 2^32, 2^63 - 1, 2^64 - 1).
SEEDS = [0, 1, 7, 123, 2024, -7, -123, 2**31, 2**32 - 1, 2**32, 2**32 + 5, 2**63 - 1, 2**64 - 1]
COUNTS = [1, 2, 3, 5, 10, 37, 100, 1000]


def olmo_core_order(seed, n):
    from olmo_core.data import NumpyFSLDatasetConfig, TokenizerConfig
    cfg = NumpyFSLDatasetConfig(paths=[f"file{i:05d}.npy" for i in range(n)], sequence_length=16,
                                tokenizer=TokenizerConfig.dolma2(), source_permutation_seed=seed)
    paths, _, _ = cfg._resolve_paths_metadata(allow_mix=False)
    return [int(os.path.basename(p)[4:9]) for p in paths]


def draws(seed):
    out = {}
    for k in (1, 5, 31, 32, 33, 63, 64):
        r = random.Random(seed)
        out[f"getrandbits_{k}"] = [str(r.getrandbits(k)) for _ in range(8)]
    for n in (1, 2, 3, 7, 1000, 2**31 + 11, 2**40 + 3):
        r = random.Random(seed)
        out[f"randrange_{n}"] = [str(r.randrange(n)) for _ in range(8)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    perms = [{"seed": str(s), "count": n, "order": olmo_core_order(s, n)}
             for s in SEEDS for n in COUNTS]
    texts = {"permutations.json": json.dumps({"cases": perms}, separators=(",", ":")) + "\n",
             "draws.json": json.dumps({"seeds": {str(s): draws(s) for s in SEEDS}}, indent=1) + "\n"}
    os.makedirs(a.out, exist_ok=True)
    for name, text in texts.items():
        tmp = os.path.join(a.out, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(a.out, name))
    common.write_versions(a.out, "tools/crosscheck/generate_python_random.py --out "
                                 "tests/data/reference/python_random")


if __name__ == "__main__":
    main()

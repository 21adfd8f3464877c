#!/usr/bin/env python3
"""Writes tests/data/reference/packed/: what OLMo-core's own NumpyPackedFSLDataset makes of small
synthetic token files (packed_ref.fixture_cases):

  tokens/*.bin   the token files (raw little-endian uint32 / uint16)
  olmo_core.json per case: its spec (token set, sequence length, strategy, group size, files), and
                 OLMo-core's instance count, fingerprint, per instance the sha256 (first 16 hex
                 digits) of its input ids (int32 LE) and label mask (one byte per token), its
                 document tokens and doc_lens, the first instances in full, and the data loader's
                 first two global batches (instance ids) for two seeds; or the error OLMo-core
                 raises for the case
  argsort.json   np.argsort of int64 arrays full of ties (numpy's scalar path)
  VERSIONS.json  command, library versions, date

  usage (in the reference venv, numpy on its scalar sort path):
    NPY_DISABLE_CPU_FEATURES="AVX512_SPR AVX512_ICL X86_V4 X86_V3" \
      python tools/crosscheck/generate_packed.py --out tests/data/reference/packed
"""
import argparse
import json
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import packed_ref as P  # noqa: E402


def check_scalar_sort():
    want = P.SCALAR_SORT_ENV["NPY_DISABLE_CPU_FEATURES"]
    if os.environ.get("NPY_DISABLE_CPU_FEATURES") != want:
        sys.exit(f"generate_packed: run with NPY_DISABLE_CPU_FEATURES=\"{want}\" (numpy's scalar "
                 "sort; its SIMD kernels order ties differently)")


def argsort_cases():
    import numpy as np
    out = []
    rng = random.Random("packed/argsort")
    for n, distinct in ((17, 3), (100, 5), (1000, 7), (5000, 40), (300, 1), (64, 64)):
        v = [rng.randrange(distinct) for _ in range(n)]
        if distinct == 64:
            v = sorted(v, reverse=True)
        p = np.argsort(np.array(v, dtype=np.int64)).tolist()
        out.append({"values": v, "argsort": p})
    # Sorted, reversed and organ-pipe inputs with ties (the depth limit's heapsort fallback).
    for n in (200, 2048):
        pipe = [min(i, n - i) // 3 for i in range(n)]
        out.append({"values": pipe, "argsort": np.argsort(np.array(pipe, dtype=np.int64)).tolist()})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--work")
    a = ap.parse_args()
    check_scalar_sort()
    work = a.work or tempfile.mkdtemp(prefix="generate_packed.")
    tokens = os.path.join(a.out, "tokens")
    os.makedirs(tokens, exist_ok=True)
    cases = {}
    for case in P.fixture_cases():
        common.log(f"packed: OLMo-core on {case['name']}")
        paths = P.make_case_files(case, tokens)
        res = P.olmo_core_case(case, paths, os.path.join(work, case["name"]),
                               loader_seeds=P.LOADER_SEEDS)
        res["spec"] = dict(case, paths=[os.path.basename(p) for p in paths])
        cases[case["name"]] = res
    dump = lambda x: json.dumps(x, sort_keys=True, separators=(",", ":")) + "\n"  # noqa: E731
    texts = {"olmo_core.json": dump({"token_sets": P.TOKEN_SETS, "cases": cases}),
             "argsort.json": dump(argsort_cases())}
    for name, text in texts.items():
        tmp = os.path.join(a.out, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(a.out, name))
    common.write_versions(a.out, "NPY_DISABLE_CPU_FEATURES=\"AVX512_SPR AVX512_ICL X86_V4 X86_V3\" "
                          f"tools/crosscheck/generate_packed.py --out {a.out}")
    common.log(f"generate_packed: wrote {a.out}")


if __name__ == "__main__":
    main()

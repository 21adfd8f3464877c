#!/usr/bin/env python3
"""Writes tests/data/reference/fsl_doc_lens/: what OLMo-core's own NumpyFSLDataset
(NumpyFSLDatasetConfig, generate_doc_lengths on) makes of small token files
(fsl_doc_lens_ref.fixture_cases, and `replica tokenize` of fsl_doc_lens_ref.TOKENIZED_INPUTS):

  tokens/*.bin   the synthetic token files (raw little-endian uint32 / uint16)
  tokens/*.npy   the files written by `replica tokenize` (dolma2, uint32)
  olmo_core.json per case: its spec (token set, sequence length, files), and OLMo-core's instance
                 count, fingerprint, per instance the sha256 (first 16 hex digits) of its input
                 ids (int32 LE) and its doc_lens, the first instances in full, and the data
                 loader's first two global batches for two seeds: instance ids, collated doc_lens
                 and the cu_doc_lens the model is given
  VERSIONS.json  command, library versions, date

  usage (in the reference venv):
    tools/crosscheck/generate_fsl_doc_lens.py --replica BUILD/replica --out DIR [--work DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import fsl_doc_lens_ref as F  # noqa: E402


def tokenize(replica, out_dir, work):
    """`replica tokenize` (dolma2, uint32) of each TOKENIZED_INPUTS file into out_dir; the paths."""
    paths = []
    for src in F.TOKENIZED_INPUTS:
        d = os.path.join(work, "tokenize")
        shutil.rmtree(d, ignore_errors=True)
        subprocess.run([replica, "tokenize", "--tokenizer", "dolma2", os.path.join(common.REPO, src),
                        "--out", d, "--dtype", "uint32", "--no-progress", "--threads", "2"],
                       check=True, capture_output=True)
        stem = os.path.basename(src).split(".")[0]
        made = os.path.join(d, stem + ".npy")
        path = os.path.join(out_dir, f"tokenized.{stem}.uint32.npy")
        shutil.copyfile(made, path)
        paths.append(path)
    return paths


def build(replica, tokens_dir, work):
    """{case name: result} for every case; writes the token files into tokens_dir."""
    cases = {}
    for case in F.fixture_cases():
        common.log(f"fsl_doc_lens: OLMo-core on {case['name']}")
        paths = F.make_case_files(case, tokens_dir)
        res = F.olmo_core_case(case["set"], paths, case["seq_len"],
                               os.path.join(work, case["name"]))
        res["spec"] = dict(case, paths=[os.path.basename(p) for p in paths])
        cases[case["name"]] = res
    tokenized = tokenize(replica, tokens_dir, work)
    for seq_len in F.TOKENIZED_SEQ_LENS:
        name = f"tokenized.u32.T{seq_len}"
        common.log(f"fsl_doc_lens: OLMo-core on {name}")
        res = F.olmo_core_case("u32", tokenized, seq_len, os.path.join(work, name))
        res["spec"] = {"name": name, "set": "u32", "seq_len": seq_len,
                       "paths": [os.path.basename(p) for p in tokenized]}
        cases[name] = res
    return cases


def dump(x):
    return json.dumps(x, sort_keys=True, separators=(",", ":")) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="generate_fsl_doc_lens.")
    tokens = os.path.join(a.out, "tokens")
    os.makedirs(tokens, exist_ok=True)
    cases = build(a.replica, tokens, work)
    tmp = os.path.join(a.out, "olmo_core.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(dump({"token_sets": F.TOKEN_SETS, "cases": cases}))
    os.replace(tmp, os.path.join(a.out, "olmo_core.json"))
    common.write_versions(a.out, "tools/crosscheck/generate_fsl_doc_lens.py --replica "
                          f"BUILD/replica --out {a.out}")
    common.log(f"generate_fsl_doc_lens: wrote {a.out}")


if __name__ == "__main__":
    main()

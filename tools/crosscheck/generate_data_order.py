#!/usr/bin/env python3
"""Writes tests/data/reference/data_order/: what OLMo-core's own NumpyFSLDatasetConfig /
NumpyDataLoaderConfig give for the data-order cases (data_order_replica.CASES) over token files
made by `replica tokenize` of the bundled inputs:

  olmo_core.json    per case: OLMo-core's instance count and dataset fingerprint, and for each
                    seed, epoch and checked batch, every rank's instance indices and the sha256 of
                    its input ids (int32 LE), for each world size; the message for epoch 0
  token_files.json  bytes and sha256 of the token files OLMo-core read
  cases.json        the cases and token sets (a copy of data_order_replica.CASES, for reading)
  VERSIONS.json     command, library versions, date

  usage: generate_data_order.py --replica BUILD/replica --out DIR [--work DIR]
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import data_order_ref as D  # noqa: E402
import data_order_replica as R  # noqa: E402


def build(files, work):
    """{file name: text} of the reference (without VERSIONS.json)."""
    cases = {}
    for case in R.CASES:
        common.log(f"data order: OLMo-core on {case['name']}")
        cases[case["name"]] = D.olmo_core_case(case, files, os.path.join(work, "olmo_core"))
    olmo = {"cases": cases,
            "epoch_zero": D.olmo_core_epoch_zero(R.CASES[0], files,
                                                 os.path.join(work, "olmo_core"))}
    dump = lambda x: json.dumps(x, sort_keys=True, separators=(",", ":")) + "\n"  # noqa: E731
    return {"olmo_core.json": dump(olmo),
            "token_files.json": json.dumps(R.file_digests(files), indent=1, sort_keys=True) + "\n",
            "cases.json": json.dumps({"inputs": R.INPUTS, "token_sets": R.TOKEN_SETS,
                                      "cases": R.CASES}, indent=1) + "\n"}


def write(out_dir, texts, generated_by):
    os.makedirs(out_dir, exist_ok=True)
    for name, text in texts.items():
        tmp = os.path.join(out_dir, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out_dir, name))
    common.write_versions(out_dir, generated_by)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="generate_data_order.")
    files = R.make_token_files(a.replica, os.path.join(work, "tokens"))
    write(a.out, build(files, work),
          f"tools/crosscheck/generate_data_order.py --replica BUILD/replica --out {a.out}")
    common.log(f"generate_data_order: wrote {a.out}")


if __name__ == "__main__":
    main()

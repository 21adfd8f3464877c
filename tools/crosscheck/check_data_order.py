#!/usr/bin/env python3
"""Crosscheck area "data order": OLMo-core's own dataset and data loader
(NumpyFSLDatasetConfig / NumpyDataLoaderConfig, installed version) over token files written by
`replica tokenize` (uint32 and uint16), for the cases of data_order_replica.CASES (several files,
seeds up to 2^64 - 1, epochs 1-3, data-parallel world sizes 1, 2 and 8, several global batch
sizes): every checked batch's instance indices and token ids per rank against `replica data
batch` and, for the trainer cases, against what `replica train --dump-batches` fed on 1, 2 and 8
ranks; epoch 0 refused by both; the committed reference (tests/data/reference/data_order)
regenerated.

  usage: check_data_order.py --replica BUILD/replica --work DIR [--regen-only]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import generate_data_order as G  # noqa: E402
import data_order_replica as R  # noqa: E402
import json  # noqa: E402

AREA = "data_order"
COMMITTED = os.path.join(common.REPO, "tests", "data", "reference", "data_order")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--regen-only", action="store_true")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    files = R.make_token_files(a.replica, os.path.join(work, "tokens"))
    texts = G.build(files, work)
    common.log(f"data order: token files and OLMo-core: {time.time() - t0:.1f} s")
    G.write(os.path.join(work, "reference"), texts,
            "tools/crosscheck/check_data_order.py (regenerated)")
    for name, text in texts.items():
        path = os.path.join(COMMITTED, name)
        committed = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        common.emit(AREA, "regenerated vs committed", f"tests/data/reference/data_order/{name}",
                    "identical" if committed == text else
                    ("missing" if committed is None else "differs"),
                    "identical (integer results)", committed == text)
    if a.regen_only:
        return
    olmo = json.loads(texts["olmo_core.json"])
    for case in R.CASES:
        t1 = time.time()
        rows = R.compare_lookup(a.replica, case, files, work, olmo["cases"][case["name"]])
        if case.get("trainer"):
            rows += R.compare_trainer(a.replica, case, files, work, olmo["cases"][case["name"]])
        for what, value, bound, ok in rows:
            common.emit(AREA, case["name"], what, value, bound, ok)
        common.log(f"data order: replica on {case['name']}: {time.time() - t1:.1f} s")
    rc, msg, out = R.epoch_zero(a.replica)
    ref_msg = olmo["epoch_zero"]
    common.emit(AREA, "epoch 0", "OLMo-core's loader.reshuffle(epoch=0) / replica data order "
                "--epoch 0", f"OLMo-core: {ref_msg!r}; replica: exit {rc}, {msg!r}",
                "both refuse; replica exit 2 with OLMo-core's wording, no output",
                ref_msg is not None and rc == 2 and not out and
                "'epoch' must be at least 1" in msg and "(got 0)" in msg and ref_msg.startswith(
                    "'epoch' must be at least 1, got 0"))
    common.log(f"data order: done in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

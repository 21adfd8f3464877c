#!/usr/bin/env python3
"""Crosscheck area olmo_core_fields: every field of every config class reachable from the
installed OLMo-core's ExperimentConfig is known to replica's importer (mapped, accepted with a
reason, or refused with a reason), from the live dataclasses; and the committed snapshot that
`make test` checks (tests/data/reference/olmo_core_fields/classes.json) is what this OLMo-core
gives.

    check_olmo_core_fields.py --replica build/replica --work DIR [--regen-only]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_olmo_core_fields  # noqa: E402
import olmo_core_classes  # noqa: E402
from common import emit, log  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

AREA = "olmo_core_fields"
COMMITTED = os.path.join(REPO, "tests", "data", "reference", AREA, "classes.json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--regen-only", action="store_true")
    args = ap.parse_args()
    work = os.path.join(args.work, AREA)
    log(f"{AREA}: reading the installed OLMo-core's config classes")
    snap = generate_olmo_core_fields.write(work)
    with open(COMMITTED, encoding="utf-8") as f:
        committed = json.load(f)
    same = snap["classes"] == committed["classes"]
    emit(AREA, "classes.json", "regenerated vs committed (classes, fields, defaults, refs)",
         "identical" if same else "differs", "identical", same)
    if args.regen_only:
        return
    table = json.loads(subprocess.run([args.replica, "import-config", "--field-table"],
                                      check=True, capture_output=True, text=True).stdout)
    rows, reached = olmo_core_classes.walk(snap, table)
    bad = [r for r in rows if not r[2]]
    for case, what, ok in rows:
        if not ok:
            emit(AREA, case, what, "unknown", "known to the importer", False)
    fields = sum(len(snap["classes"][c]["fields"]) for c in reached if c in snap["classes"])
    emit(AREA, "ExperimentConfig", f"classes reached ({len(reached)}) and their fields ({fields}) "
         "unknown to the importer's table", len(bad), "== 0", not bad)
    for name, c in olmo_core_classes.counts(table, reached).items():
        value = c.get("whole") or f"{c['mapped']} mapped, {c['accepted']} accepted, " \
                                  f"{c['accepted_at']} accepted at values, {c['refused']} refused"
        emit(AREA, name, "field table", value, "every field decided", True)


if __name__ == "__main__":
    main()

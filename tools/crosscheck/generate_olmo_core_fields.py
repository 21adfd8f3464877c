#!/usr/bin/env python3
"""Writes the snapshot of the installed OLMo-core's config classes (olmo_core_classes.classes())
that tests/run/olmo_core_fields_test.cc checks the importer's field table against without Python.

    generate_olmo_core_fields.py --out tests/data/reference/olmo_core_fields
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import olmo_core_classes  # noqa: E402
from common import write_versions  # noqa: E402


def write(out):
    os.makedirs(out, exist_ok=True)
    snap = olmo_core_classes.classes()
    with open(os.path.join(out, "classes.json"), "w", encoding="utf-8") as f:
        json.dump(snap, f, indent=1, sort_keys=True)
        f.write("\n")
    return snap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    snap = write(args.out)
    write_versions(args.out, "tools/crosscheck/generate_olmo_core_fields.py --out " + args.out)
    print(f"{len(snap['classes'])} classes, "
          f"{sum(len(c['fields']) for c in snap['classes'].values())} fields", file=sys.stderr)


if __name__ == "__main__":
    main()

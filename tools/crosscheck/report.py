"""Runs every tools/crosscheck/check_<area>.py and prints one table (what `make crosscheck` shows).

    <venv>/bin/python tools/crosscheck/report.py --replica BUILD/replica --work DIR [--only AREA,...]

Each check prints JSON rows (common.emit); this collects them in the order they came, prints the
table (area, case, comparison, figure, bound, ok), writes DIR/report.json and DIR/report.md, and
exits 1 when any row failed or any check could not run to its end, 0 otherwise. A row marked as a
known gap (common.emit's `gap`) that does not hold is shown as GAP and fails nothing; one that
holds fails (the mark must go). A row marked `info` is a measurement held to nothing.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def fmt(value):
    if isinstance(value, float):
        return f"{value:.3g}" if value != 0 else "0"
    return str(value)


def table(rows):
    head = ["area", "case", "comparison", "figure", "bound", "ok"]
    body = [[r["area"], r["case"], r["what"], fmt(r["value"]), r["bound"], common.status(r)]
            for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(c.replace("|", "\\|") for c in b) + " |" for b in body]
    return "\n".join(lines), "\n".join(md)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="", help="comma-separated areas (check_<area>.py)")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    checks = sorted(glob.glob(os.path.join(here, "check_*.py")))
    only = [a for a in args.only.split(",") if a]
    if only:
        names = {os.path.basename(c)[len("check_"):-3] for c in checks}
        unknown = [a for a in only if a not in names]
        if unknown:
            print(f"crosscheck: error: no check named {', '.join(unknown)} "
                  f"(have: {', '.join(sorted(names))})", file=sys.stderr)
            sys.exit(2)
        checks = [c for c in checks if os.path.basename(c)[len("check_"):-3] in only]
    os.makedirs(args.work, exist_ok=True)
    rows, broken, timings = [], [], {}
    for check in checks:
        area = os.path.basename(check)[len("check_"):-3]
        work = os.path.join(args.work, area)
        os.makedirs(work, exist_ok=True)
        common.log(f"crosscheck: {area} ...")
        start = time.time()
        proc = subprocess.run([sys.executable, check, "--replica", args.replica, "--work", work],
                              stdout=subprocess.PIPE, text=True, cwd=common.REPO)
        timings[area] = round(time.time() - start, 1)
        got = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        rows += got
        if proc.returncode != 0:
            broken.append(area)
            rows.append({"area": area, "case": "-", "what": "the check ran to its end",
                         "value": f"exit {proc.returncode}", "bound": "exit 0", "ok": False})
        common.log(f"crosscheck: {area}: {len(got)} rows, "
                   f"{sum(common.status(r).startswith('FAIL') for r in got)} failed, "
                   f"{timings[area]} s")
    text, md = table(rows)
    print(text)
    failed = [r for r in rows if common.status(r).startswith("FAIL")]
    gaps = [r for r in rows if common.status(r) == "GAP"]
    info = [r for r in rows if common.status(r) == "info"]
    print(f"\ncrosscheck: {len(rows)} comparisons, {len(failed)} failed, {len(gaps)} known "
          f"gaps, {len(info)} measurements held to nothing"
          + (f"; checks that did not finish: {', '.join(broken)}" if broken else ""))
    for r in gaps:
        print(f"  GAP  {r['area']} {r['case']}: {r['what'][:90]} ({r['gap']})")
    for r in info:
        print(f"  info {r['area']} {r['case']}: {r['what'][:90]} ({r['info']})")
    report = {"versions": common.versions(), "rows": rows, "seconds": timings,
              "date": time.strftime("%Y-%m-%d")}
    with open(os.path.join(args.work, "report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.work, "report.md"), "w", encoding="utf-8") as f:
        f.write(md + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The table of scripts/bench_bf16 from its runs' JSON (replica bench --json, tools/torch_bench.py,
replica_microbench --benchmark_format=json).

Per model: replica fp32 and bf16 per route (tokens/s, MFU against the GEMM peak of its mode and
against the nominal peak, ratio to replica fp32 and to the fastest PyTorch 2 setting), every
PyTorch setting (the fastest of PyTorch 2 marked), PyTorch 1.13 beside it; the per-op profile of
replica's bf16 steps; then the bf16 GEMM routes at the model's shapes against oneDNN's own matmul on
operands converted beforehand. Writes everything it read to --out as one JSON object.
"""

import argparse
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def torch_label(r):
    s = f"PyTorch {r['torch_version'].split('+')[0]} {r['precision']}, {r['attention']}"
    return s + (", torch.compile" if r.get("compile") else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--gemm", default="null")
    ap.add_argument("--cpu", default="")
    ap.add_argument("--load", default="")
    ap.add_argument("runs", nargs="*")
    a = ap.parse_args()
    runs = [load(p) for p in a.runs]
    models = []
    for r in runs:
        m = r.get("model_config") or r.get("model")
        r["_model"] = m
        if m not in models:
            models.append(m)
    print(f"CPU: {a.cpu}; load average at the end: {a.load}")
    for m in models:
        rep = [r for r in runs if "mfu" in r and r["_model"] == m]
        tor = [r for r in runs if "torch_version" in r and r["_model"] == m]
        t2 = [r for r in tor if not r["torch_version"].startswith("1.")]
        t1 = [r for r in tor if r["torch_version"].startswith("1.")]
        best2 = max(t2, key=lambda r: r["tokens_per_s"]) if t2 else None
        best1 = max(t1, key=lambda r: r["tokens_per_s"]) if t1 else None
        fp32 = next((r for r in rep if r["precision"] == "fp32"), None)
        shape = rep[0] if rep else tor[0]
        print(f"\n{m}: batch {shape['batch']} x seq {shape['seq']}, {shape['threads']} threads")
        print(f"| setting | tokens/s | x replica fp32 | x fastest PyTorch 2 | x fastest PyTorch 1.13 "
              f"| MFU (of its GEMM peak) | MFU nominal |")
        print("|---|---|---|---|---|---|---|")

        def ratio(x, ref):
            return f"{x / ref['tokens_per_s']:.2f}" if ref else "-"

        for r in rep:
            route = r["compute"].get("bf16_matmul", "") if r["precision"] == "bf16" else ""
            name = f"replica {r['precision']}" + (f", {route} (isa {r['compute'].get('isa', '?')})"
                                                  if route else "")
            nom = r["nominal_peak"]
            print(f"| {name} | {r['tokens_per_s']:.1f} | {ratio(r['tokens_per_s'], fp32)} | "
                  f"{ratio(r['tokens_per_s'], best2)} | {ratio(r['tokens_per_s'], best1)} | "
                  f"{r['mfu']:.3f} of {r['peak_gflops']:.1f} GFLOP/s | {r['mfu_nominal']:.3f} of "
                  f"{nom['gflops']:.1f} ({nom['flops_per_cycle_per_core']:g} FLOP/cycle x "
                  f"{nom['clock']['ghz']:.2f} GHz {nom['clock']['source']}) |")
        for r in sorted(tor, key=lambda r: (r["torch_version"].startswith("1."), -r["tokens_per_s"])):
            mark = " **(fastest)**" if r is best2 or r is best1 else ""
            extra = f", compile {r['compile_s']:.0f} s" if r.get("compile") else ""
            print(f"| {torch_label(r)}{mark}{extra} | {r['tokens_per_s']:.1f} | "
                  f"{ratio(r['tokens_per_s'], fp32)} | {ratio(r['tokens_per_s'], best2)} | "
                  f"{ratio(r['tokens_per_s'], best1)} | - | - |")
        for r in rep:
            if r["precision"] != "bf16":
                continue
            prof = r.get("profile_s_per_step", {})
            total = r["step_time_s"]
            print(f"\nreplica bf16 ({r['compute'].get('bf16_matmul', '')}) seconds per step "
                  f"({total:.3f} s; bf16 weight copies {r.get('bf16_weight_conversions_per_step', 0):.0f}"
                  f" per step):")
            for k, v in sorted(prof.items(), key=lambda kv: -kv[1]):
                if v > 0:
                    print(f"  {k:14s} {v:8.3f}  {100 * v / total:5.1f}%")
    gemm = None
    if a.gemm != "null":
        gemm = load(a.gemm)
        rows = {}
        for b in gemm.get("benchmarks", []):
            if b.get("error_occurred"):
                continue
            parts = dict(p.split(":") for p in b["name"].split("/")[1:] if ":" in p)
            key = (int(parts["M"]), int(parts["N"]), int(parts["K"]), int(parts["op"]))
            rows.setdefault(key, {})[b["label"]] = b["FLOP/s"] / 1e9
        names = ["fp32", "onednn-bf16", "onednn-bf16-weight-cached", "onednn-bf16-preconverted",
                 "onednn-raw-matmul-preconverted"]
        ops = {0: "A B", 1: "x W^T", 2: "dy^T x"}
        print("\nGEMM GFLOP/s (replica_microbench BM_Gemm): the bf16 routes against oneDNN's own "
              "matmul on pre-converted operands")
        print("| M x N x K (op) | " + " | ".join(names) + " | weight-cached / raw |")
        print("|---|" + "---|" * (len(names) + 1))
        for key in sorted(rows, key=lambda k: (k[3], k)):
            v = rows[key]
            cells = [f"{v[n]:.1f}" if n in v else "-" for n in names]
            r = (f"{v['onednn-bf16-weight-cached'] / v['onednn-raw-matmul-preconverted']:.2f}"
                 if "onednn-bf16-weight-cached" in v and "onednn-raw-matmul-preconverted" in v
                 else "-")
            print(f"| {key[0]}x{key[1]}x{key[2]} ({ops[key[3]]}) | " + " | ".join(cells) + f" | {r} |")
    for r in runs:
        r.pop("_model", None)
    with open(a.out, "w") as f:
        json.dump({"cpu": a.cpu, "load_end": a.load, "runs": runs, "gemm": gemm}, f, indent=1)
    print(f"\n(all runs: {a.out})")


if __name__ == "__main__":
    sys.exit(main())

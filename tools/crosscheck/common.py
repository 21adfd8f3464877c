"""What every crosscheck script shares: result rows, running replica, safetensors, KL statistics.

The interface (docs/crosscheck.md): each tools/crosscheck/check_<area>.py prints one JSON row per
comparison on stdout, logs on stderr, and exits 0 when it ran to the end.
"""
import datetime
import importlib.metadata as md
import json
import math
import os
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCK = os.path.join(REPO, "tools", "crosscheck", "requirements.lock")
ORACLES = ["torch", "transformers", "ai2-olmo-core", "safetensors", "tokenizers", "tiktoken",
           "numpy"]


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def emit(area, case, what, value, bound, ok, gap=None, info=None):
    """One comparison: `value` held to `bound` (a short human string); `ok` says whether it held.

    gap: a known disagreement, documented where the string says: the row is expected not to
    hold, is shown as GAP and does not fail the run, but fails it once it holds (the gap closed:
    the mark must go). info: a measurement shown beside the checks, held to nothing; the string
    says why it cannot be (report.py shows it as info)."""
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    row = {"area": area, "case": case, "what": what, "value": value, "bound": bound,
           "ok": bool(ok)}
    if gap:
        row["gap"] = gap
    if info:
        row["info"] = info
    print(json.dumps(row), flush=True)
    return bool(ok)


def status(row):
    """'ok', 'FAIL', 'GAP' (a known disagreement, still there) or 'info' for one emitted row."""
    if row.get("info"):
        return "info"
    if row.get("gap"):
        return "FAIL (gap closed: remove its mark)" if row["ok"] else "GAP"
    return "ok" if row["ok"] else "FAIL"


def versions():
    """The installed versions of the oracle packages (what made a piece of reference data)."""
    return {name: md.version(name) for name in ORACLES}


def write_versions(out_dir, generated_by):
    """VERSIONS.json beside generated reference data: the command, the libraries, the date."""
    info = {"generated_by": generated_by, "versions": versions(),
            "python": sys.version.split()[0],
            "date": datetime.date.today().isoformat()}
    with open(os.path.join(out_dir, "VERSIONS.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")


def run_replica(replica, *args, json_output=True, check=True, env=None):
    """Runs the replica binary; returns its parsed --json stdout (or the text when json_output is
    False). Exit 2 (bad input) always raises; exit 1 (a failed check) raises only with check=True."""
    cmd = [replica, *map(str, args)]
    if json_output and "--json" not in cmd:
        cmd.append("--json")
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env)
    if proc.returncode == 2 or (check and proc.returncode != 0):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    if not json_output:
        return proc.stdout
    return json.loads(proc.stdout)


def read_safetensors(path):
    """{name: numpy array}; BF16 tensors come back as float32."""
    from safetensors.torch import load_file
    return {k: (v.float() if str(v.dtype) == "torch.bfloat16" else v).numpy()
            for k, v in load_file(path).items()}


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: numpy array or torch tensor} through a temporary name (never half-written);
    a 0-d array stays a scalar (shape [])."""
    import torch
    from safetensors.torch import save_file
    def as_tensor(v):
        if isinstance(v, torch.Tensor):
            return v.contiguous()
        return torch.from_numpy(np.ascontiguousarray(v).reshape(np.shape(v)))  # keeps 0-d as []
    as_torch = {k: as_tensor(v) for k, v in tensors.items()}
    tmp = path + ".tmp"
    save_file(as_torch, tmp, metadata=metadata)
    os.replace(tmp, path)


def log_softmax64(logits):
    x = np.asarray(logits, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def kl_stats(ref_logits, logits, mask=None):
    """D_KL(P_ref || P) per position in float64 over the last axis: mean, max and top-1 agreement
    (argmax equal), over the positions where `mask` is true (all when None)."""
    lp_ref = log_softmax64(ref_logits).reshape(-1, np.shape(ref_logits)[-1])
    lp = log_softmax64(logits).reshape(-1, np.shape(logits)[-1])
    kl = (np.exp(lp_ref) * (lp_ref - lp)).sum(axis=-1)
    top1 = lp_ref.argmax(axis=-1) == lp.argmax(axis=-1)
    if mask is not None:
        keep = np.asarray(mask).reshape(-1).astype(bool)
        kl, top1 = kl[keep], top1[keep]
    return {"kl_mean": float(kl.mean()), "kl_max": float(kl.max()),
            "top1": float(top1.mean()), "positions": int(kl.size)}


def rel_err(a, b):
    """‖a − b‖ / ‖b‖ in float64 (b the reference); 0 when both are zero."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    nb = float(np.linalg.norm(b))
    d = float(np.linalg.norm(a - b))
    return d / nb if nb > 0 else (0.0 if d == 0 else math.inf)


def drawn_cases_setup(area, description, default_cases):
    """The command line of a check that draws random cases (--replica, --work, --cases, --seed,
    --skip-regen), its work directory made, and the draw: returns (args, work, seed, rng). The
    seed is logged so that a failing draw can be repeated with --seed."""
    import argparse
    import random
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cases", type=int, default=default_cases)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--skip-regen", action="store_true", help="only the drawn cases")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    log(f"{area}: cases drawn with seed {seed}")
    return args, work, seed, random.Random(seed)

"""OLMo-core trains, replica follows: the pieces check_olmo_core_run.py and
generate_olmo_core_run.py share (the reference venv's python).

The run: tools/olmo_core_train.py (OLMo-core's own trainer) over token files that `replica
tokenize` makes from the bundled corpus with the fixture's tokenizer.json; its checkpoints read by
tools/olmo_core_checkpoint.py; `replica train <OLMo-core's config.json>` from them.

Per-step quantities compared (OLMo-core metric -> replica metrics.jsonl key):
  loss       train/CE loss + train/Z loss  -> loss (= ce_loss + z_loss)
  ce_loss    train/CE loss                 -> ce_loss
  grad_norm  optim/total grad norm         -> grad_norm (before clipping)
  lr         optim/LR (group 0)            -> lr
  skipped    optim/step skipped            -> skipped
"""
import json
import math
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from common import REPO, log

TOOLS = os.path.join(REPO, "tools")
CORPUS = [os.path.join(REPO, "data", "corpus", "moby_dick.jsonl.zst"),
          os.path.join(REPO, "data", "corpus", "sotu.jsonl.zst")]
QUANTITIES = ["loss", "ce_loss", "grad_norm", "lr"]
FIXTURE = os.path.join(REPO, "tests", "data", "reference", "olmo_core_run")


def olmo_core_metrics(path):
    """{step: {quantity: value}} from olmo_core_train.py's metrics.jsonl (several lines a step)."""
    merged = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            merged.setdefault(int(row["step"]), {}).update(row)
    out = {}
    for step, row in sorted(merged.items()):
        if "train/CE loss" not in row:
            continue
        out[step] = {"ce_loss": row["train/CE loss"],
                     "loss": row["train/CE loss"] + row.get("train/Z loss", 0.0),
                     "grad_norm": row["optim/total grad norm"],
                     "lr": row["optim/LR (group 0)"],
                     "skipped": bool(row.get("optim/step skipped", 0.0))}
        if "optim/total grad norm float64" in row:
            out[step]["grad_norm_float64"] = row["optim/total grad norm float64"]
    return out


def replica_metrics(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if "ce_loss" not in row:
                continue
            out[int(row["step"])] = {"ce_loss": row["ce_loss"], "loss": row["loss"],
                                     "grad_norm": row["grad_norm"], "lr": row["lr"],
                                     "skipped": bool(row["skipped"])}
    return out


def read_jsonl_metrics(path):
    """The fixture's own files: one {step, quantities...} a line."""
    with open(path, encoding="utf-8") as f:
        return {int(r["step"]): r for r in map(json.loads, f)}


def write_jsonl_metrics(path, metrics):
    with open(path, "w", encoding="utf-8") as f:
        for step, row in sorted(metrics.items()):
            f.write(json.dumps({"step": step, **{k: row[k] for k in QUANTITIES + ["skipped"]}})
                    + "\n")


def diffs(a, b, steps):
    """{quantity: [|a - b| per step]} over `steps`."""
    return {q: [abs(a[s][q] - b[s][q]) for s in steps] for q in QUANTITIES}


def running_max(values):
    out, m = [], 0.0
    for v in values:
        m = max(m, v)
        out.append(m)
    return out


def norm_rounding(metrics, steps):
    """{quantity: [per step]}: zero but for grad_norm, where it is |OLMo-core's reported float32
    norm - the same gradients' norm summed in float64| (olmo_core_train.py records both). The
    rounding perturbations leave torch's norm reduction as it is, so they do not sample this
    error of OLMo-core's own report; replica's norm is summed in float64."""
    out = {q: [0.0] * len(steps) for q in QUANTITIES}
    out["grad_norm"] = [abs(metrics[s]["grad_norm"] - metrics[s]["grad_norm_float64"])
                        for s in steps]
    return out


def envelope(self_diffs):
    """OLMo-core against itself: per quantity, per step, the largest |difference| the rounding
    perturbations made at this step or before (a perturbation's effect grows, and one sample of
    it can pass close to zero at any step; the running maximum does not)."""
    return {q: running_max([max(d[q][i] for d in self_diffs)
                            for i in range(len(self_diffs[0][q]))]) for q in QUANTITIES}


def fp32_half_ulp(x):
    """Half the spacing of float32 numbers at x: OLMo-core records its loss and grad norm as
    float32 scalars, replica as float64, so equal values can differ by this much in the report."""
    import numpy as np
    return float(np.spacing(np.float32(abs(x)))) / 2


def bound(env_value, ref_value):
    """What replica's |difference| from OLMo-core is held to at one step: OLMo-core's
    self-envelope there plus the float32 rounding of OLMo-core's reported value."""
    return env_value + fp32_half_ulp(ref_value)


def lr_bound(lr):
    """lr is a function of the step alone (both compute it in float64); 4 ulp of slack for the
    two libm cosines."""
    return 4 * math.ulp(lr)


def first_and_largest(d, env, steps):
    """The first step where each quantity differs at all, and its largest difference, with the
    envelope there."""
    rows = {}
    for q in QUANTITIES:
        vals = d[q]
        first = next((i for i, v in enumerate(vals) if v != 0), None)
        big = max(range(len(vals)), key=lambda i: vals[i])
        rows[q] = {"first_step": steps[first] if first is not None else None,
                   "first_diff": vals[first] if first is not None else 0.0,
                   "largest_step": steps[big], "largest_diff": vals[big],
                   "bound_at_largest": env[q][big] if env else None}
    return rows


def run(cmd, env=None, cwd=None, log_path=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    log("+", " ".join(cmd))
    if log_path:
        with open(log_path, "w", encoding="utf-8") as f:
            proc = subprocess.run(cmd, env=full_env, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    else:
        proc = subprocess.run(cmd, env=full_env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = open(log_path, encoding="utf-8", errors="replace").read()[-3000:] if log_path \
            else proc.stderr[-3000:]
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    return proc


def tokenize(replica, tokenizer_json, out_dir):
    if REUSE and os.path.isdir(out_dir):
        return out_dir
    shutil.rmtree(out_dir, ignore_errors=True)
    run([replica, "tokenize", "--tokenizer", tokenizer_json, *CORPUS, "--out", out_dir,
         "--no-progress", "--json"])
    os.remove(os.path.join(out_dir, "manifest.json"))  # the trainers read every *.npy there
    return out_dir


def machine():
    """What decides torch's CPU kernels here: the CPU model, torch's CPU capability and the
    vector/matrix extensions its bf16 paths use. Two machines alike in all of these gave the
    same bits; bf16 training on two machines that differ in them does not."""
    import torch
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
    return {"cpu": model, "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "extensions": [x for x in wanted if x in flags]}


def other_cpu_capability():
    """An ATEN_CPU_CAPABILITY other than the one torch picks here: torch's vectorised CPU
    kernels (softmax, norms, reductions) for another vector width, which changes only their
    rounding (MKL's fp32 GEMM gave the same bits at 1 and 2 threads, and under
    MKL_ENABLE_INSTRUCTIONS=AVX2, so those perturb nothing here)."""
    import torch
    cap = torch.backends.cpu.get_cpu_capability().lower()
    return "avx2" if cap.startswith("avx512") else "default"


# Another fp32 GEMM kernel in OLMo-core: MKL's "compatible" conditional-numerical-reproducibility
# path (torch's fp32 matmuls are MKL's sgemm). It moves the fp32 run (grad norm 2.4e-7 apart at
# step 1, 4e-5 by step 44); MKL_CBWR=SSE4_2 or AVX512, MKL_ENABLE_INSTRUCTIONS, DNNL_MAX_CPU_ISA and
# 1 vs 2 threads give the same sgemm bits on an AMD EPYC. bf16 matmuls are oneDNN's: not used there.
GEMM_PERTURBATION = "MKL_CBWR=COMPATIBLE"
# OLMo-core runs and checkpoint reads at a time (each one process on one torch thread).
PARALLEL_RUNS = max(1, min(2, os.cpu_count() or 1))
REUSE = False  # set by --reuse: keep an OLMo-core run that finished (run.json written) before


def olmo_core_train(out_dir, tokens, tokenizer_json, precision="fp32", env=None,
                    resume_from=None, steps=60, extra=()):
    if REUSE and os.path.exists(os.path.join(out_dir, "run.json")):
        log(f"reusing {out_dir}")
        return out_dir
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [sys.executable, os.path.join(TOOLS, "olmo_core_train.py"), "--data-dir", tokens,
           "--out", out_dir, "--tokenizer", tokenizer_json, "--precision", precision,
           "--steps", str(steps), "--threads", "1", *extra]
    if resume_from:
        cmd += ["--resume-from", resume_from]
    os.makedirs(out_dir, exist_ok=True)
    # One thread: on a shared 2-core machine two spinning OpenMP threads per run cost more than
    # they give, and the thread count changes no bits here (1 vs 2 threads: identical losses).
    run(cmd, env={"OMP_WAIT_POLICY": "passive", **(env or {})}, log_path=out_dir + ".log")
    return out_dir


def read_checkpoint(replica, step_dir, out_dir, path_map=()):
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [sys.executable, os.path.join(TOOLS, "olmo_core_checkpoint.py"), step_dir,
           "--out", out_dir, "--replica", replica]
    for item in path_map:
        cmd += ["--path-map", item]
    run(cmd)
    return out_dir


def write_olmo_core_checkpoint(replica, ckpt_dir, config_json, out_dir):
    """tools/replica_to_olmo_core.py: the replica checkpoint `ckpt_dir` as an OLMo-core checkpoint
    of the run of `config_json`."""
    shutil.rmtree(out_dir, ignore_errors=True)
    run([sys.executable, os.path.join(TOOLS, "replica_to_olmo_core.py"), ckpt_dir,
         "--config", config_json, "--out", out_dir, "--replica", replica, "--json"])
    return out_dir


def olmo_core_from_replica(replica, tokens, tokenizer_json, replica_run, config_json, ckpt_out,
                           run_out, step=30):
    """replica's checkpoint of `step` written as an OLMo-core checkpoint, and OLMo-core's own
    trainer resumed from it (to step 60)."""
    write_olmo_core_checkpoint(replica, os.path.join(replica_run, "checkpoints",
                                                     f"step-{step:08d}"), config_json, ckpt_out)
    return olmo_core_train(run_out, tokens, tokenizer_json, resume_from=ckpt_out)


def reverse_bad_inputs(replica, ckpt, config_json, base):
    """tools/replica_to_olmo_core.py on five bad inputs made from the replica checkpoint `ckpt`
    and OLMo-core's `config_json`: [{what, named (the file the message must name), rc, stderr,
    written (what it left beside --out)}]."""
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    cases = []

    def variant(name):
        d = os.path.join(base, name)
        shutil.copytree(ckpt, d)
        return d

    cases.append(("no such checkpoint", os.path.join(base, "absent"), config_json, "absent"))
    d = variant("interrupted")
    os.remove(os.path.join(d, "DONE"))
    cases.append(("a checkpoint without DONE (interrupted)", d, config_json, "interrupted"))
    d = variant("truncated")
    shard = sorted(x for x in os.listdir(d) if x.startswith("shard-"))[0]
    with open(os.path.join(d, shard), "r+b") as fh:
        fh.truncate(os.path.getsize(os.path.join(d, shard)) // 2)
    cases.append(("a truncated shard", d, config_json, shard))
    d = variant("no-state")
    os.remove(os.path.join(d, "state.json"))
    cases.append(("a checkpoint without state.json", d, config_json, "state.json"))
    with open(config_json, encoding="utf-8") as cf:
        other = json.load(cf)
    other["model"]["n_layers"] = other["model"]["n_layers"] - 1
    other_json = os.path.join(base, "other-model.config.json")
    with open(other_json, "w", encoding="utf-8") as cf:
        json.dump(other, cf)
    cases.append(("config.json of another model (one layer fewer)", ckpt, other_json,
                  "config.json"))
    out = []
    for i, (what, src, cfg, named) in enumerate(cases):
        dst = os.path.join(base, f"out-{i}", "step30")
        proc = subprocess.run([sys.executable, os.path.join(TOOLS, "replica_to_olmo_core.py"),
                               src, "--config", cfg, "--out", dst, "--replica", replica],
                              capture_output=True, text=True)
        parent = os.path.dirname(dst)
        out.append({"what": what, "named": named, "rc": proc.returncode, "stderr": proc.stderr,
                    "written": os.listdir(parent) if os.path.isdir(parent) else []})
    return out


def replica_train(replica, config_json, run_dir, path_maps=(), sets=(), env=None):
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [replica, "train", config_json, "--run-dir", run_dir, "--quiet", "--json"]
    for item in path_maps:
        cmd += ["--path-map", item]
    for item in sets:
        cmd += ["--set", item]
    run(cmd, env={"OMP_WAIT_POLICY": "passive", **(env or {})}, log_path=run_dir + ".log")
    return replica_metrics(os.path.join(run_dir, "metrics.jsonl"))


def refused_fields(replica, config_json):
    """The JSON paths replica's importer refuses in `config_json` ([] when it plans)."""
    proc = subprocess.run([replica, "plan", config_json], capture_output=True, text=True)
    if proc.returncode == 0:
        return [], ""
    paths = [line.strip().split(":")[0] for line in proc.stderr.splitlines()
             if line.startswith("  ") and ":" in line]
    return paths, proc.stderr.strip()


def _default_of(config, path):
    """OLMo-core's own dataclass default of the field at dotted `path` of an as_config_dict()
    dict (the class named by the enclosing object's _CLASS_); raises when it has none."""
    import dataclasses
    import importlib
    *parents, field = path.split(".")
    obj = config
    for p in parents:
        obj = obj[p]
    module, name = obj["_CLASS_"].rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    for f in dataclasses.fields(cls):
        if f.name == field:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
    raise KeyError(f"{path}: no default in {obj['_CLASS_']}")


def without_default_fields(config_json, paths, out_json):
    """A copy of `config_json` without the fields at `paths`, each of which must hold OLMo-core's
    own default value (so removing it changes nothing OLMo-core computes); else ValueError."""
    with open(config_json, encoding="utf-8") as f:
        config = json.load(f)
    for path in paths:
        *parents, field = path.split(".")
        obj = config
        for p in parents:
            obj = obj[p]
        default = _default_of(config, path)
        if obj[field] != default:
            raise ValueError(f"{path} = {obj[field]!r} is not OLMo-core's default {default!r}")
        del obj[field]
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    return out_json


def replica_config(replica, config_json, work, name, notes):
    """OLMo-core's config.json as replica takes it. When replica's importer refuses fields that
    hold OLMo-core's own defaults, a copy without them (noted in `notes`, which the check reports
    as failing rows); anything else refused raises."""
    paths, message = refused_fields(replica, config_json)
    if not paths:
        return config_json, []
    out = without_default_fields(config_json, paths, os.path.join(work, name + ".defaults-removed.json"))
    notes.append({"config": config_json, "refused": paths, "message": message})
    return out, paths


def precision_sets(replica, config_json, want, notes):
    """--set compute.precision=WANT only when the importer does not map param_dtype (noted)."""
    got = json.loads(run([replica, "plan", config_json, "--json"]).stdout)["precision"]
    if got == want:
        return []
    notes.append({"config": config_json, "precision": got, "want": want})
    return [f"compute.precision={want}"]


def run_all(replica, work, tokenizer_json, bf16=True, follow=True, reverse=False):
    """Every run of the comparison, in `work` (follow=False: OLMo-core's runs and the checkpoints
    read from them only; reverse=True: also replica's fp32 step-30 checkpoint written as an
    OLMo-core checkpoint and OLMo-core resumed from it, "fp32.from-replica", beside replica's
    other runs). Returns the metrics, directories and what was noted."""
    os.makedirs(work, exist_ok=True)
    tokens = tokenize(replica, tokenizer_json, os.path.join(work, "tokens"))
    cap = other_cpu_capability()
    oc = lambda name: os.path.join(work, "olmo_core", name)  # noqa: E731
    rp = lambda name: os.path.join(work, "replica", name)  # noqa: E731
    os.makedirs(oc(""), exist_ok=True)
    os.makedirs(rp(""), exist_ok=True)
    r = {"perturbation": {"fp32": f"ATEN_CPU_CAPABILITY={cap}; 8 micro-batches of 1; "
                                  f"{GEMM_PERTURBATION}; its norm's float32 rounding",
                          "bf16": f"ATEN_CPU_CAPABILITY={cap}; 8 micro-batches of 1"},
         "notes": [],
         "dirs": {}}
    a, c, d = oc("fp32"), oc("fp32.resume"), oc("bf16")
    step30 = os.path.join(a, "ckpt", "step30")
    ck = lambda name: os.path.join(work, "replica_checkpoints", name)  # noqa: E731
    precisions = ["fp32", "bf16"] if bf16 else ["fp32"]
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        # Each run is one process on one torch thread, so two at a time on a 2-core machine;
        # concurrency changes no bits (each run's arithmetic is its own).
        jobs = {}
        for prec in precisions:
            jobs[prec] = pool.submit(olmo_core_train, oc(prec), tokens, tokenizer_json, prec)
            jobs[prec + ".perturbed"] = pool.submit(
                olmo_core_train, oc(prec + ".perturbed"), tokens, tokenizer_json, prec,
                {"ATEN_CPU_CAPABILITY": cap})
            jobs[prec + ".perturbed-mb1"] = pool.submit(
                olmo_core_train, oc(prec + ".perturbed-mb1"), tokens, tokenizer_json, prec,
                None, None, 60, ["--micro-batch-instances", "1"])
        jobs["fp32.perturbed-gemm"] = pool.submit(
            olmo_core_train, oc("fp32.perturbed-gemm"), tokens, tokenizer_json, "fp32",
            dict([GEMM_PERTURBATION.split("=")]))
        jobs["fp32"].result()  # the resumed run and the step-0/30 reads need its checkpoints
        jobs["fp32.resume"] = pool.submit(olmo_core_train, c, tokens, tokenizer_json,
                                          resume_from=step30)
        reads = {"ckpt_fp32_step0": pool.submit(read_checkpoint, replica,
                                                os.path.join(a, "ckpt", "step0"),
                                                ck("fp32.step0")),
                 "ckpt_fp32_step30": pool.submit(read_checkpoint, replica, step30,
                                                 ck("fp32.step30"))}
        if reverse:
            # OLMo-core's own step 30, read into replica and written back (the read was queued
            # first, so it runs before or beside this job, never after it)
            trip = pool.submit(lambda: write_olmo_core_checkpoint(
                replica, reads["ckpt_fp32_step30"].result(), os.path.join(a, "config.json"),
                os.path.join(work, "olmo_core_checkpoints", "fp32.step30.round-trip")))
        if bf16:
            jobs["bf16"].result()
            reads["ckpt_bf16_step0"] = pool.submit(read_checkpoint, replica,
                                                   os.path.join(d, "ckpt", "step0"),
                                                   ck("bf16.step0"))
        for job in list(jobs.values()) + list(reads.values()):
            job.result()  # re-raises a run's failure
    r["dirs"].update({"fp32": a, "resume": c, **({"bf16": d} if bf16 else {})})
    r["dirs"].update({k: v.result() for k, v in reads.items()})
    if reverse:
        r["dirs"]["round_trip_step30"] = trip.result()
    r["olmo_core"] = {n: olmo_core_metrics(os.path.join(oc(n), "metrics.jsonl")) for n in jobs}
    r["replica"] = {}
    if not follow:
        return r
    cfg, _ = replica_config(replica, os.path.join(a, "config.json"), work, "fp32", r["notes"])
    start = [f"init.from_checkpoint={ck('fp32.step0')}", "init.reset_step=false"]
    r["replica"]["fp32"] = replica_train(replica, cfg, rp("fp32"), sets=start)
    r["dirs"]["replica_fp32"] = rp("fp32")
    with ThreadPoolExecutor(max_workers=2) as pool:
        # OLMo-core resuming from replica's checkpoint, and the converter's bad-input probes, run
        # beside replica's other runs.
        if reverse:
            back = os.path.join(work, "olmo_core_checkpoints", "fp32.from-replica.step30")
            rev = pool.submit(olmo_core_from_replica, replica, tokens, tokenizer_json, rp("fp32"),
                              os.path.join(a, "config.json"), back, oc("fp32.from-replica"))
            probes = pool.submit(reverse_bad_inputs, replica,
                                 os.path.join(rp("fp32"), "checkpoints", "step-00000030"),
                                 os.path.join(a, "config.json"),
                                 os.path.join(work, "reverse_bad_input"))
        cfg, _ = replica_config(replica, os.path.join(c, "config.json"), work, "resume",
                                r["notes"])
        r["replica"]["fp32.resume"] = replica_train(replica, cfg, rp("fp32.resume"),
                                                    path_maps=[f"{step30}={ck('fp32.step30')}"])
        if bf16:
            cfg, _ = replica_config(replica, os.path.join(d, "config.json"), work, "bf16",
                                    r["notes"])
            sets = [f"init.from_checkpoint={ck('bf16.step0')}", "init.reset_step=false"]
            sets += precision_sets(replica, cfg, "bf16-fsdp", r["notes"])
            r["replica"]["bf16"] = replica_train(replica, cfg, rp("bf16"), sets=sets)
        if reverse:
            r["dirs"]["from_replica"] = rev.result()
            r["dirs"]["from_replica_step30"] = back
            r["reverse_bad_input"] = probes.result()
            r["olmo_core"]["fp32.from-replica"] = olmo_core_metrics(
                os.path.join(oc("fp32.from-replica"), "metrics.jsonl"))
    return r


def bounds(env, ref, steps):
    """Per quantity and step: bound(envelope, OLMo-core's value); lr: 4 ulp."""
    out = {q: [bound(env[q][i], ref[s][q]) for i, s in enumerate(steps)]
           for q in ("loss", "ce_loss", "grad_norm")}
    out["lr"] = [lr_bound(ref[s]["lr"]) for s in steps]
    return out


def comparisons(r):
    """Per-step divergences and envelopes of a run_all result."""
    out = {}
    ocm, rpm = r["olmo_core"], r["replica"]
    for prec in [p for p in ("fp32", "bf16") if p in ocm]:
        steps = sorted(ocm[prec])
        self_ds = [diffs(ocm[prec + p], ocm[prec], steps)
                   for p in (".perturbed", ".perturbed-mb1", ".perturbed-gemm") if prec + p in ocm]
        if all("grad_norm_float64" in ocm[prec][s] for s in steps):
            self_ds.append(norm_rounding(ocm[prec], steps))
        self_d = {q: [max(d[q][i] for d in self_ds) for i in range(len(steps))]
                  for q in QUANTITIES}
        env = envelope(self_ds)
        out[prec] = {"steps": steps, "self": self_d, "envelope": env,
                     "bound": bounds(env, ocm[prec], steps)}
        if prec in rpm:
            out[prec]["replica"] = diffs(rpm[prec], ocm[prec], steps)
    if "bf16" in ocm:
        steps = sorted(ocm["bf16"])
        runs = {n: diffs(ocm[n], ocm["fp32"], steps)
                for n in ("bf16", "bf16.perturbed", "bf16.perturbed-mb1")}
        env = envelope(list(runs.values()))
        out["bf16_budget"] = {"steps": steps, "envelope": env, "olmo_core_runs": runs,
                              "bound": bounds(env, ocm["fp32"], steps)}
        if "bf16" in rpm:
            out["bf16_budget"]["replica"] = diffs(rpm["bf16"], ocm["fp32"], steps)
    steps = [s for s in sorted(ocm["fp32.resume"]) if s > 30]
    out["resume"] = {
        "steps": steps,
        "olmo_core_resume_vs_straight": diffs(ocm["fp32.resume"], ocm["fp32"], steps),
        # the resumed runs against each other, bounded by OLMo-core's own rounding envelope
        # over the same steps
        "envelope": {q: out["fp32"]["envelope"][q][out["fp32"]["steps"].index(steps[0]):
                                                    out["fp32"]["steps"].index(steps[-1]) + 1]
                     for q in QUANTITIES},
    }
    out["resume"]["bound"] = bounds(out["resume"]["envelope"], ocm["fp32.resume"], steps)
    if "fp32.from-replica" in ocm and "fp32" in rpm:
        fr = ocm["fp32.from-replica"]
        out["reverse"] = {
            "steps": steps, "envelope": out["resume"]["envelope"],
            # OLMo-core resumed from replica's step 30 against replica's own steps 31..60 (its
            # values are float32: the half ulp around them), and against OLMo-core's straight run
            "vs_replica": diffs(fr, rpm["fp32"], steps),
            "bound": bounds(out["resume"]["envelope"], fr, steps),
            "vs_straight": diffs(fr, ocm["fp32"], steps),
            "bound_straight": bounds(out["resume"]["envelope"], ocm["fp32"], steps),
        }
    if "fp32.resume" in rpm:
        out["resume"]["replica_resume_vs_olmo_core_resume"] = diffs(
            rpm["fp32.resume"], ocm["fp32.resume"], steps)
        out["resume"]["replica_resume_vs_straight"] = diffs(rpm["fp32.resume"], ocm["fp32"],
                                                            steps)
    return out

"""Crosscheck area olmo_core_model: OLMo-core's own Olmo 3 model beside replica's.

    <venv>/bin/python tools/crosscheck/check_olmo_core_model.py --replica BUILD/replica --work DIR

On every parity case (tests/data/olmo3/tiny-{mha,gqa,yarn}, tests/data/long/bytes-mqa-2048)
OLMo-core's Transformer is built by its Olmo 3 config builder and loaded through its HF conversion
(olmo_core_model.py); its logits, its train module's loss (CE + 1e-5 z-loss) and that loss's
gradients are written as a reference dump to DIR and compared with `replica parity --reference
DUMP --grads --z-loss 1e-5`; both are also measured against the float64 truth of the case
(io.safetensors: logits, CE, mean lse², and the gradients of the mean CE). Then each dump is
compared with the committed copy in tests/data/reference/olmo_core_model/ (generate_olmo_core_model.py
writes it). Rows on stdout (common.emit), progress on stderr; docs/crosscheck.md "OLMo-core model"
says what each bound is and why.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bounds  # noqa: E402
import common  # noqa: E402
import olmo_core_model as ocm  # noqa: E402

AREA = "olmo_core_model"
COMMITTED = os.path.join(common.REPO, "tests", "data", "reference", AREA)
GRAD_FLOOR = 1e-3  # replica parity's default --grad-floor, the same definition here
LONG = "bytes-mqa-2048"

# fp32 noise bounds (docs/crosscheck.md "OLMo-core model"): what two correct float32 computations
# of the same math can differ by on these cases, on any CPU kind and GEMM kernel; every mistake
# the fixture READMEs list moves these quantities by orders of magnitude more.
BOUND = {
    "kl_max": {"tiny": 1e-11, "long": 1e-7},
    "kl_mean": {"tiny": 1e-12, "long": 1e-9},
    "ce": 4e-6,        # |Δ mean CE|: a few float32 ulps of a loss near 6 (ulp 4.8e-7)
    "z": 1e-9,         # |Δ 1e-5·mean lse²|: float32 sums of lse² ≈ 40 (ulp 3.8e-6), times 1e-5
    "grad": 1e-5,      # per-tensor (floored) and whole-gradient relative error; leaving the
                       # z-loss term out of the gradient moves it by 3e-5 to 4e-5
}


def size(case):
    return "long" if case == LONG else "tiny"


def grad_errors(g, g_ref):
    """replica parity's two gradient figures for {name: array} against {name: array}: max over
    tensors of ‖g − g_ref‖ / max(‖g_ref‖, 1e-3·‖G_ref‖) (and the tensor), and ‖G − G_ref‖ / ‖G_ref‖."""
    num = {k: float(np.sum((g[k].astype(np.float64) - g_ref[k].astype(np.float64)) ** 2))
           for k in g_ref}
    den = {k: float(np.sum(g_ref[k].astype(np.float64) ** 2)) for k in g_ref}
    floor = GRAD_FLOOR * np.sqrt(sum(den.values()))
    worst = max(g_ref, key=lambda k: np.sqrt(num[k]) / max(np.sqrt(den[k]), floor))
    return (float(np.sqrt(num[worst]) / max(np.sqrt(den[worst]), floor)), worst,
            float(np.sqrt(sum(num.values()) / sum(den.values()))))


def parity(replica, model_dir, reference, grads, z_loss=0.0):
    args = ["parity", "--model", model_dir, "--reference", reference, "--max-kl", "1",
            "--min-top1", "0", "--max-grad-rel", "1"]
    if grads:
        args += ["--grads", "--z-loss", repr(z_loss)]
    return common.run_replica(replica, *args, check=False)


def check_case(name, replica, work, emit, regen_only=False):
    case_dir = os.path.join(common.REPO, ocm.CASES[name])
    tiny = name != LONG
    start = time.time()
    r = ocm.run_case(case_dir, ce_grads=tiny and not regen_only)
    truth = r["truth"]
    common.log(f"{AREA}: {name}: OLMo-core ran in {time.time() - start:.1f} s "
               f"(sliding windows: {r['case'].notes['sliding_window']}; "
               f"YaRN on full layers: {r['case'].notes['yarn']})")
    tensors, meta = ocm.dump_tensors(r, grads=tiny)
    dump = os.path.join(work, f"{name}.safetensors")
    common.write_safetensors(dump, tensors, meta)
    if regen_only:
        regenerated_vs_committed(name, dump, emit)
        return
    config_rows(name, r["case"], emit)

    # --- replica against OLMo-core ---
    p = parity(replica, case_dir, dump, grads=tiny, z_loss=ocm.Z_LOSS_MULTIPLIER)
    cross_rows(name, p, r, emit, grads=tiny)

    # --- both against the float64 truth: replica no farther than OLMo-core fp32 ---
    truth_path = os.path.join(case_dir, "io.safetensors")
    pt = parity(replica, case_dir, truth_path, grads=tiny)
    # Distances to the F32-stored truth are known to its rounding (bounds.no_farther, the same
    # rule as the transformers area); the CE and mean lse² truths are F64, known exactly.
    h = bounds.logit_half_ulp(truth["logits"])
    kl = common.kl_stats(truth["logits"], r["logits"])
    oc = {"kl_mean": kl["kl_mean"], "kl_max": kl["kl_max"]}
    rep = {"kl_mean": pt["kl_mean"], "kl_max": pt["kl_max"]}
    if tiny:
        g_ref = {k[len("grad."):]: v for k, v in truth.items() if k.startswith("grad.")}
        oc["grad_max_rel_err"], _, oc["grad_global_rel_err"] = grad_errors(
            r["ce_only"]["grads"], g_ref)
        rep["grad_max_rel_err"] = pt["grad_max_rel_err"]
        rep["grad_global_rel_err"] = pt["grad_global_rel_err"]
    for m in oc:
        what = m + (" (gradient of the mean CE)" if m.startswith("grad") else "")
        ok, allowed, res = bounds.no_farther(m, rep[m], oc[m], h)
        emit(name, f"{what} vs float64 truth: OLMo-core fp32", oc[m], "reported", True)
        emit(name, f"{what} vs float64 truth: replica fp32", rep[m],
             f"<= {oc[m]:.3g} (OLMo-core fp32) + {res:.3g} (F32 truth's resolution)", ok)
    exact = [("|CE loss - truth|", abs(r["ce_loss"] - float(truth["loss"])),
              abs(pt["loss"] - float(truth["loss"]))),
             ("|mean lse^2 - truth|",
              abs(r["z_loss"] / ocm.Z_LOSS_MULTIPLIER - float(truth["z_loss"])),
              abs(pt["lse_sq_mean"] - float(truth["z_loss"])))]
    for what, o, p_ in exact:
        emit(name, f"{what} (F64 truth): OLMo-core fp32", o, "reported", True)
        emit(name, f"{what} (F64 truth): replica fp32", p_, f"<= {o:.3g} (OLMo-core fp32)",
             p_ <= o)
    emit(name, "top-1 vs float64 truth: OLMo-core fp32", kl["top1"], "reported", True)
    emit(name, "top-1 vs float64 truth: replica fp32", pt["top1_agreement"],
         f">= {kl['top1']:g} (OLMo-core fp32)", pt["top1_agreement"] >= kl["top1"])

    regenerated_vs_committed(name, dump, emit)


def config_rows(name, case, emit):
    """The model OLMo-core built is the case's (from its modules), and what its HF export says."""
    diffs = ocm.model_differences(case.model, case.hf)
    emit(name, "OLMo-core's built model (windows, RoPE per layer, heads, widths, eps) vs "
         "config.json", "identical" if not diffs else "; ".join(diffs), "identical", not diffs)
    exp = ocm.export_differences(case.model, case.hf)
    emit(name, "OLMo-core's HF export of that model (get_hf_config) vs config.json",
         "identical" if not exp else "; ".join(f"{f}: {a} (config.json {b})" for f, a, b in exp),
         "identical, or sliding-layer rope_theta 500000 (transformers 5.x's misreading of the "
         "rope_theta keyword OLMo-core passes)", ocm.known_export_misreading(exp))


def cross_rows(name, p, r, emit, grads):
    """replica parity `p` against OLMo-core's dump of run_case/run_native result `r`."""
    s = size(name)
    emit(name, "KL mean: replica vs OLMo-core", p["kl_mean"],
         f"<= {BOUND['kl_mean'][s]:g} (fp32 noise)", p["kl_mean"] <= BOUND["kl_mean"][s])
    emit(name, "KL max: replica vs OLMo-core", p["kl_max"],
         f"<= {BOUND['kl_max'][s]:g} (fp32 noise)", p["kl_max"] <= BOUND["kl_max"][s])
    emit(name, "top-1 agreement: replica vs OLMo-core", p["top1_agreement"], "== 1",
         p["top1_agreement"] == 1.0)
    d_ce = abs(p["loss"] - p["loss_ref"])
    emit(name, "|CE loss: replica - OLMo-core train module|", d_ce, f"<= {BOUND['ce']:g}",
         d_ce <= BOUND["ce"])
    z_rep = ocm.Z_LOSS_MULTIPLIER * p["lse_sq_mean"]
    d_z = abs(z_rep - r["z_loss"])
    emit(name, "|z-loss (1e-5 mean lse^2): replica - OLMo-core train module|", d_z,
         f"<= {BOUND['z']:g}", d_z <= BOUND["z"])
    if grads:
        emit(name, "grad max rel err (CE + 1e-5 z-loss): replica vs OLMo-core",
             p["grad_max_rel_err"], f"<= {BOUND['grad']:g} ({p['grad_worst_tensor']})",
             p["grad_max_rel_err"] <= BOUND["grad"])
        emit(name, "grad global rel err (CE + 1e-5 z-loss): replica vs OLMo-core",
             p["grad_global_rel_err"], f"<= {BOUND['grad']:g}",
             p["grad_global_rel_err"] <= BOUND["grad"])


def check_native(replica, work, emit, regen_only=False):
    """The case OLMo-core makes alone (olmo_core_model.run_native): its builder and init, exported
    by its save_hf_model; replica loads the export and must give OLMo-core's logits, CE, z-loss and
    gradients of the objective."""
    name = ocm.NATIVE
    export = os.path.join(work, name)
    start = time.time()
    r = ocm.run_native(export)
    common.log(f"{AREA}: {name}: OLMo-core built, initialised and exported in "
               f"{time.time() - start:.1f} s")
    tensors, meta = ocm.dump_tensors(r, grads=True)
    dump = os.path.join(work, f"{name}.safetensors")
    common.write_safetensors(dump, tensors, meta)
    if not regen_only:
        diffs = ocm.model_differences(r["model"], r["case"].hf)
        emit(name, "OLMo-core's model vs its own HF export (save_hf_model's config.json)",
             "identical" if not diffs else "; ".join(diffs), "identical", not diffs)
        p = parity(replica, export, dump, grads=True, z_loss=ocm.Z_LOSS_MULTIPLIER)
        cross_rows(name, p, r, emit, grads=True)
    regenerated_vs_committed(name, dump, emit)
    committed = os.path.join(COMMITTED, name, "model.safetensors")
    if os.path.exists(committed):
        new = common.read_safetensors(os.path.join(export, "model.safetensors"))
        old = common.read_safetensors(committed)
        same = new.keys() == old.keys() and all(np.array_equal(new[k], old[k]) for k in old)
        emit(name, "regenerated vs committed: OLMo-core's initial weights (init_seed "
             f"{ocm.NATIVE_SHAPE['init_seed']}), as exported", "identical" if same else "differ",
             "identical (torch's CPU generator)", same)
    else:
        emit(name, f"regenerated vs committed: {os.path.relpath(committed, common.REPO)}",
             "missing", "present", False)


def regenerated_vs_committed(name, dump, emit):
    path = os.path.join(COMMITTED, f"{name}.safetensors")
    what = "regenerated vs committed"
    if not os.path.exists(path):
        emit(name, f"{what}: {os.path.relpath(path, common.REPO)}", "missing", "present", False)
        return
    new, old = common.read_safetensors(dump), common.read_safetensors(path)
    same_ids = all(np.array_equal(new[k], old[k]) for k in ("input_ids", "labels"))
    emit(name, f"{what}: input_ids, labels", "identical" if same_ids else "differ", "identical",
         same_ids)
    s = size(name)
    kl = common.kl_stats(old["logits"], new["logits"])
    emit(name, f"{what}: logits KL max", kl["kl_max"], f"<= {BOUND['kl_max'][s]:g} (fp32 noise)",
         kl["kl_max"] <= BOUND["kl_max"][s])
    d = abs(np.asarray(new["loss"]).item() - np.asarray(old["loss"]).item())
    emit(name, f"{what}: CE loss", d, f"<= {BOUND['ce']:g}", d <= BOUND["ce"])
    d = ocm.Z_LOSS_MULTIPLIER * abs(np.asarray(new["z_loss"]).item()
                                    - np.asarray(old["z_loss"]).item())
    emit(name, f"{what}: z-loss (1e-5 mean lse^2)", d, f"<= {BOUND['z']:g}", d <= BOUND["z"])
    old_g = {k: v for k, v in old.items() if k.startswith("grad.")}
    if old_g:
        worst, tensor, glob = grad_errors({k: new[k] for k in old_g}, old_g)
        emit(name, f"{what}: grad max rel err", worst, f"<= {BOUND['grad']:g} ({tensor})",
             worst <= BOUND["grad"])
        emit(name, f"{what}: grad global rel err", glob, f"<= {BOUND['grad']:g}",
             glob <= BOUND["grad"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--regen-only", action="store_true",
                    help="only the regenerated-vs-committed rows (no replica comparisons)")
    ap.add_argument("--cases", default=",".join([*ocm.CASES, ocm.NATIVE]),
                    help="comma-separated case names")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    replica = os.path.abspath(args.replica)

    def emit(case, what, value, bound, ok):
        common.emit(AREA, case, what, value, bound, ok)

    start = time.time()
    for name in args.cases.split(","):
        if name == ocm.NATIVE:
            check_native(replica, args.work, emit, regen_only=args.regen_only)
            continue
        if name not in ocm.CASES:
            sys.exit(f"{AREA}: unknown case {name!r} (have: {', '.join(ocm.CASES)}, "
                     f"{ocm.NATIVE})")
        check_case(name, replica, args.work, emit, regen_only=args.regen_only)
    common.log(f"{AREA}: done in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()

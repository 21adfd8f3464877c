#!/usr/bin/env python3
"""replica beside transformers' own Olmo3ForCausalLM (eager attention) on every parity case.

    <venv>/bin/python tools/crosscheck/check_transformers.py --replica BUILD/replica --work DIR

Per case (hf_run.CASES): transformers fp32 (logits, loss, every gradient), bf16 weights and fp32
weights under autocast; replica fp32 and bf16 (`replica parity`); both against the case's float64
truth, and replica against transformers directly (`replica parity --reference` on a dump of
transformers' outputs). Then the committed reference (generate_transformers.py) is regenerated into
DIR/regen and compared with tests/data/reference/transformers. Rows: docs/crosscheck.md.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bounds  # noqa: E402
import common  # noqa: E402
import generate_transformers as gen  # noqa: E402
import hf_run  # noqa: E402

AREA = "transformers"
COMMITTED = os.path.join(common.REPO, "tests", "data", "reference", "transformers")
KL_METRICS = ("kl_mean", "kl_max")
GRAD_METRICS = ("grad_max_rel_err", "grad_global_rel_err")
# The project's fp32 gradient bar (replica parity --max-grad-rel default), used where no float64
# gradient truth exists to derive a bound from (the long case).
PARITY_GRAD_BAR = 1e-4


def parity(replica, model, reference, *extra):
    return common.run_replica(replica, "parity", "--model", model, "--reference", reference,
                              "--max-kl", "1e9", "--min-top1", "0", "--max-grad-rel", "1e9",
                              *extra, check=False)


def g(x):
    return f"{x:.3g}"


def no_farther_rows(case, label, rep, ref, ref_name, h, metrics):
    for m in metrics:
        if rep.get(m) is None or ref.get(m) is None:
            continue
        ok, allowed, res = bounds.no_farther(m, rep[m], ref[m], h)
        common.emit(AREA, case, f"{m} vs float64 truth: replica {label}", rep[m],
                    f"<= {g(ref[m])} ({ref_name}) + {g(res)} (F32 truth's resolution)", ok)


def top1_row(case, label, rep_top1, ref_top1, ref_name):
    common.emit(AREA, case, f"top-1 vs float64 truth: replica {label}", rep_top1,
                f">= {ref_top1:.4f} ({ref_name})", rep_top1 >= ref_top1)


def check_case(replica, work, case, rel, legacy_theta_rows):
    case_dir = os.path.join(common.REPO, rel)
    truth_path = os.path.join(case_dir, "io.safetensors")
    res = gen.compute(case_dir, os.path.join(work, case))
    truth, tx = res["truth"], res["figures"]
    h = bounds.logit_half_ulp(truth["logits"])
    has_truth_grads = any(k.startswith("grad.") for k in truth)

    # What transformers reads from the case's own config.json (legacy spelling when it has one).
    with open(os.path.join(case_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if "rope_theta" in cfg and "rope_parameters" not in cfg:
        read = hf_run.sliding_theta_read(case_dir)
        legacy_theta_rows.append((case, cfg["rope_theta"], read))

    full = os.path.join(work, "full", f"{case}.safetensors")
    hf_run.write_dump(full, truth["input_ids"], truth["labels"], res["fp32"], rel, "float32")
    gen.write_reference(os.path.join(work, "regen"), case, rel, res)

    grads = ["--grads"] if has_truth_grads else []
    r32 = parity(replica, case_dir, truth_path, *grads)
    r16 = parity(replica, case_dir, truth_path, "--precision", "bf16")
    direct = parity(replica, case_dir, full, "--grads")
    same_spelling = parity(replica, os.path.join(work, case, "hf"), full, "--grads")

    # fp32: replica against transformers, both against the truth.
    no_farther_rows(case, "fp32", r32, tx["fp32"], "transformers fp32", h,
                    KL_METRICS + GRAD_METRICS)
    top1_row(case, "fp32", r32["top1_agreement"], tx["fp32"]["top1"], "transformers fp32")
    for m, rm in (("kl_mean", "kl_mean"), ("kl_max", "kl_max"),
                  ("max_abs_logit_diff", "max_abs_logit_diff")):
        lim = bounds.between(m, r32[rm], tx["fp32"][m])
        common.emit(AREA, case, f"{m}: replica fp32 vs transformers fp32", direct[rm],
                    f"<= {g(lim)} (both truth distances combined)", direct[rm] <= lim)
    # (plus the float64 rounding of the three subtractions)
    loss_lim = ((abs(r32["loss"] - float(truth["loss"])) + tx["fp32"]["loss_abs_diff"])
                + 4e-16 * abs(float(truth["loss"])))
    common.emit(AREA, case, "|loss - loss_ref|: replica fp32 vs transformers fp32",
                abs(direct["loss"] - direct["loss_ref"]),
                f"<= {g(loss_lim)} (both truth distances added)",
                abs(direct["loss"] - direct["loss_ref"]) <= loss_lim)
    for m in GRAD_METRICS:
        if has_truth_grads:
            lim = bounds.between(m, r32[m], tx["fp32"][m])
            why = "both truth distances combined"
        else:
            lim, why = PARITY_GRAD_BAR, "replica parity's fp32 gradient bar; no gradient truth"
        common.emit(AREA, case, f"{m}: replica fp32 vs transformers fp32", direct[m],
                    f"<= {g(lim)} ({why})", direct[m] <= lim)
    common.emit(AREA, case, "replica on the per-layer-type RoPE spelling vs the case's own",
                "identical" if all(same_spelling[k] == direct[k] for k in
                                   ("kl_mean", "kl_max", "max_abs_logit_diff", "loss",
                                    "grad_max_rel_err")) else "differs",
                "identical (same model)", all(same_spelling[k] == direct[k] for k in
                                              ("kl_mean", "kl_max", "max_abs_logit_diff",
                                               "loss", "grad_max_rel_err")))

    # bf16: replica bf16 against transformers bf16 weights and fp32 weights under autocast.
    for name, fig in (("transformers bf16", tx["bf16"]), ("transformers autocast", tx["autocast"])):
        for m in KL_METRICS:
            common.emit(AREA, case, f"{m} vs float64 truth: replica bf16", r16[m],
                        f"<= {g(fig[m])} ({name})", r16[m] <= fig[m])
    # Top-1 counts the near ties (a few of 96..2048 positions) that a bf16 rounding decides one
    # way or the other: transformers' two bf16 recipes, two roundings of one model, differ by a
    # position or more, and each moves by one between CPU kinds. That spread is the resolution
    # at which top-1 ranks bf16 results, so replica is held to the lower of the two.
    lo = min(tx["bf16"]["top1"], tx["autocast"]["top1"])
    common.emit(AREA, case, "top-1 vs float64 truth: replica bf16 (transformers bf16 "
                f"{tx['bf16']['top1']:.4f}, autocast {tx['autocast']['top1']:.4f})",
                r16["top1_agreement"], f">= {lo:.4f} (the lower of transformers' two bf16 "
                "recipes: their spread is top-1's resolution)", r16["top1_agreement"] >= lo)
    return res["figures"]


def regen_rows(work, figures):
    """The regenerated reference against the committed copy."""
    regen = os.path.join(work, "regen")
    gen.write_figures(regen, figures)
    path = os.path.join(COMMITTED, "figures.json")
    if not os.path.exists(path):
        common.emit(AREA, "committed", "tests/data/reference/transformers present", "missing",
                    "present", False)
        return
    with open(path, encoding="utf-8") as f:
        committed_figs = json.load(f)
    for case, rel in hf_run.CASES:
        a = common.read_safetensors(os.path.join(regen, f"{case}.safetensors"))
        cpath = os.path.join(COMMITTED, f"{case}.safetensors")
        if not os.path.exists(cpath) or case not in committed_figs:
            common.emit(AREA, case, "regenerated vs committed", "missing", "committed", False)
            continue
        b = common.read_safetensors(cpath)
        now, then = figures[case]["fp32"], committed_figs[case]["fp32"]
        same_inputs = ((a["input_ids"] == b["input_ids"]).all()
                       and (a["labels"] == b["labels"]).all())
        common.emit(AREA, case, "regenerated vs committed: input_ids, labels",
                    "identical" if same_inputs else "differ", "identical", bool(same_inputs))
        d = float(abs(a["logits"].astype("float64") - b["logits"].astype("float64")).max())
        lim = bounds.between("max_abs_logit_diff", now["max_abs_logit_diff"],
                             then["max_abs_logit_diff"])
        common.emit(AREA, case, "regenerated vs committed: max |d logit|", d,
                    f"<= {g(lim)} (both truth distances added)", d <= lim)
        kl = common.kl_stats(b["logits"], a["logits"])["kl_max"]
        lim = bounds.between("kl_max", now["kl_max"], then["kl_max"])
        common.emit(AREA, case, "regenerated vs committed: KL max", kl,
                    f"<= {g(lim)} (both truth distances combined)", kl <= lim)
        dl = abs(float(a["loss"]) - float(b["loss"]))
        lim = now["loss_abs_diff"] + then["loss_abs_diff"] + 4e-16 * abs(float(b["loss"]))
        common.emit(AREA, case, "regenerated vs committed: |d loss|", dl,
                    f"<= {g(lim)} (both truth distances added)", dl <= lim)
        ga = {k[5:]: v for k, v in a.items() if k.startswith("grad.")}
        gb = {k[5:]: v for k, v in b.items() if k.startswith("grad.")}
        if gb:
            e = hf_run.grad_errors(ga, gb)["grad_global_rel_err"]
            lim = bounds.between("grad_global_rel_err", now["grad_global_rel_err"],
                                 then["grad_global_rel_err"])
            common.emit(AREA, case, "regenerated vs committed: grad global rel err", e,
                        f"<= {g(lim)} (both truth distances combined)", e <= lim)
        # The regenerated and the committed fp32 results are two roundings of one computation
        # (another CPU kind or GEMM kernel): neither is nearer the truth by construction, so
        # each one's distance to the truth is shown beside the other's, held to nothing; the
        # rows above hold the two results to each other.
        for m in KL_METRICS + ("max_abs_logit_diff",) + GRAD_METRICS:
            if m in now and m in then:
                common.emit(AREA, case, f"regenerated vs committed: transformers fp32 {m} "
                            f"vs truth (committed: {g(then[m])})", now[m], "none", True,
                            info="two roundings of one computation; neither is privileged")
        for p in ("bf16", "autocast"):
            for m in KL_METRICS:
                # bf16 results move with the CPU's bf16 paths; the committed figure is a
                # measurement of the same computation, held to a factor of 2.
                common.emit(AREA, case, f"regenerated vs committed: transformers {p} {m}",
                            figures[case][p][m], f"within 2x of {g(committed_figs[case][p][m])}",
                            0.5 <= figures[case][p][m] / committed_figs[case][p][m] <= 2.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--regen-only", action="store_true",
                    help="only regenerate the committed reference into WORK/regen and compare")
    args = ap.parse_args()
    hf_run.torch_threads()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    replica = os.path.abspath(args.replica)
    figures, legacy = {}, []
    for case, rel in hf_run.CASES:
        t0 = time.time()
        if args.regen_only:
            res = gen.compute(os.path.join(common.REPO, rel), os.path.join(work, case))
            gen.write_reference(os.path.join(work, "regen"), case, rel, res)
            figures[case] = res["figures"]
        else:
            figures[case] = check_case(replica, work, case, rel, legacy)
        figures[case]["grads_in_dump"] = case in gen.GRAD_CASES
        common.log(f"check_transformers: {case} in {time.time() - t0:.1f} s")
    for case, theta, read in legacy:
        # transformers 5.x's Olmo3Config pops a legacy top-level rope_theta for the full-attention
        # layers and then finds it gone for the sliding ones, which get the class default 500000.
        # The cases above load through the per-layer-type spelling, which it reads as written.
        known = read == theta or read == 500000.0
        common.emit(AREA, case, "sliding-layer rope_theta transformers reads from the legacy "
                    "top-level rope_theta", read,
                    f"= {theta:g} as written, or 500000 (transformers 5.x's known misreading)",
                    known)
    regen_rows(work, figures)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/data/reference/olmo_core_run/: OLMo-core's own run and what replica needs to
follow it without Python (the reference venv's python, from the repository root).

    generate_olmo_core_run.py --replica build/replica --work WORKDIR
                              [--out tests/data/reference/olmo_core_run] [--new-tokenizer]

Runs everything of olmo_core_follow.run_all in WORKDIR (OLMo-core fp32, fp32 under a rounding
perturbation, fp32 resumed from its step-30 checkpoint, bf16 and bf16 perturbed; replica following
each), then writes OUT (README.md says what each file is). The tokenizer is OUT/tokenizer.json;
--new-tokenizer (or none there yet) first trains it: a 384-entry byte-level BPE fitted by Hugging
Face `tokenizers` on the bundled Moby-Dick, special tokens <|endoftext|> = 0, <|pad|> = 1.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import olmo_core_follow as f  # noqa: E402
from common import REPO, log, write_versions  # noqa: E402

VOCAB = 384


def train_tokenizer(path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    text = subprocess.run(["zstd", "-dc", f.CORPUS[0]], check=True, capture_output=True).stdout
    docs = [json.loads(line)["text"] for line in text.decode("utf-8").splitlines() if line.strip()]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>", "<|pad|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(docs, trainer)
    assert tok.get_vocab_size() == VOCAB and tok.token_to_id("<|endoftext|>") == 0
    tok.save(path)


def bounds_tsv(path, ref, bnd, steps):
    """One line a step: the OLMo-core values replica is held to and the bounds around them
    (olmo_core_follow.bound: the envelope plus half a float32 ulp; lr: 4 ulp)."""
    with open(path, "w", encoding="utf-8") as out:
        out.write("step\tloss\tloss_bound\tgrad_norm\tgrad_norm_bound\tlr\tlr_bound\tskipped\n")
        for i, s in enumerate(steps):
            r = ref[s]
            out.write(f"{s}\t{r['loss']!r}\t{bnd['loss'][i]!r}\t{r['grad_norm']!r}\t"
                      f"{bnd['grad_norm'][i]!r}\t{r['lr']!r}\t{bnd['lr'][i]!r}\t"
                      f"{int(r['skipped'])}\n")


def as_replica_metrics(run_dir, metrics, field_values=None):
    """A directory `replica plot` reads: metrics.jsonl with replica's keys (loss, grad_norm, lr
    per step). field_values replaces `loss` by other per-step values (differences)."""
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "metrics.jsonl"), "w", encoding="utf-8") as out:
        for i, (step, m) in enumerate(sorted(metrics.items())):
            row = {"step": step, "loss": m["loss"] if field_values is None else field_values[i],
                   "grad_norm": m["grad_norm"], "lr": m["lr"]}
            out.write(json.dumps(row) + "\n")


def plots(replica, r, cmp, out_dir, precisions=("fp32", "bf16")):
    """replica plot of OLMo-core's and replica's curves, and of replica's per-step loss
    difference beside OLMo-core's self-envelope (each drawn as a run's `loss`)."""
    written = []
    for prec in precisions:
        base = os.path.join(out_dir, prec)
        shutil.rmtree(base, ignore_errors=True)
        oc, rp = r["olmo_core"][prec], r["replica"][prec]
        as_replica_metrics(os.path.join(base, "curves", f"olmo-core-{prec}"), oc)
        as_replica_metrics(os.path.join(base, "curves", f"replica-{prec}"), rp)
        c = cmp[prec]
        as_replica_metrics(os.path.join(base, "diff", f"abs-loss-diff-replica-vs-olmo-core-{prec}"),
                           oc, c["replica"]["loss"])
        as_replica_metrics(os.path.join(base, "diff", f"olmo-core-self-envelope-{prec}"), oc,
                           c["envelope"]["loss"])
        for kind, names in (("curves", [f"olmo-core-{prec}", f"replica-{prec}"]),
                            ("diff", [f"abs-loss-diff-replica-vs-olmo-core-{prec}",
                                      f"olmo-core-self-envelope-{prec}"])):
            dirs = [os.path.join(base, kind, n) for n in names]
            f.run([replica, "plot", *dirs, "--out", os.path.join(base, kind, "plots")])
            written.append(os.path.join(base, kind, "plots"))
    return written


def copy_checkpoint(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)


def write_bf16_kind(replica, r, cmp, work, out):
    """The bf16 run of this CPU kind alone: what make test needs to hold replica's bf16 follow
    of it (olmo_core_follow.sh); the step-0 weights are the fixture's (a seeded init, the same
    bits on every machine)."""
    import torch
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(r["dirs"]["bf16"], "config.json"), os.path.join(out, "config.bf16.json"))
    for name in ("bf16", "bf16.perturbed", "bf16.perturbed-mb1"):
        f.write_jsonl_metrics(os.path.join(out, f"olmo_core.{name}.jsonl"), r["olmo_core"][name])
    c = cmp["bf16"]
    bounds_tsv(os.path.join(out, "bounds.bf16.tsv"), r["olmo_core"]["bf16"], c["bound"], c["steps"])
    with open(os.path.join(out, "paths.txt"), "w", encoding="utf-8") as pf:
        pf.write(f"tokens\t{os.path.join(work, 'tokens')}\n")
    summary = {"perturbation": r["perturbation"]["bf16"], "machine": f.machine(),
               "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
               "bf16": f.first_and_largest(c["replica"], c["bound"], c["steps"])}
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as sf:
        json.dump(summary, sf, indent=2)
        sf.write("\n")
    write_versions(out, "tools/crosscheck/generate_olmo_core_run.py --replica build/replica "
                        "--work WORKDIR --bf16-kind-out " + os.path.relpath(out, REPO))
    log("plots:", plots(replica, r, cmp, os.path.join(work, "plots-bf16-kind"), ("bf16",)))
    log(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", default=f.FIXTURE)
    ap.add_argument("--new-tokenizer", action="store_true")
    ap.add_argument("--reuse", action="store_true",
                    help="keep OLMo-core runs already finished in WORKDIR (after a failure)")
    ap.add_argument("--bf16-kind-out", metavar="DIR",
                    help="write only the bf16 run made on this CPU kind into DIR (its config, "
                         "OLMo-core's metrics, bounds.bf16.tsv, paths.txt, summary.json), for "
                         "following it with compute.torch_cpu set to this kind")
    args = ap.parse_args()
    f.REUSE = args.reuse
    replica = os.path.abspath(args.replica)
    work = os.path.abspath(args.work)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    tok = os.path.join(out, "tokenizer.json")
    if args.new_tokenizer or not os.path.exists(tok):
        train_tokenizer(tok)

    r = f.run_all(replica, work, tok)
    cmp = f.comparisons(r)
    d = r["dirs"]
    if args.bf16_kind_out:
        write_bf16_kind(replica, r, cmp, work, os.path.abspath(args.bf16_kind_out))
        return
    shutil.copy(os.path.join(d["fp32"], "config.json"), os.path.join(out, "config.json"))
    shutil.copy(os.path.join(d["resume"], "config.json"), os.path.join(out, "config.resume.json"))
    shutil.copy(os.path.join(d["bf16"], "config.json"), os.path.join(out, "config.bf16.json"))
    copy_checkpoint(d["ckpt_fp32_step0"], os.path.join(out, "step0"))
    copy_checkpoint(d["ckpt_fp32_step30"], os.path.join(out, "step30"))
    shutil.rmtree(os.path.join(out, "step0.bf16"), ignore_errors=True)
    for name, m in r["olmo_core"].items():
        f.write_jsonl_metrics(os.path.join(out, f"olmo_core.{name}.jsonl"), m)
    for prec in ("fp32", "bf16"):
        c = cmp[prec]
        bounds_tsv(os.path.join(out, f"bounds.{prec}.tsv"), r["olmo_core"][prec], c["bound"],
                   c["steps"])
    # bf16's own budget: OLMo-core bf16 against OLMo-core fp32 (running max + half an ulp),
    # around OLMo-core's fp32 values
    b = cmp["bf16_budget"]
    bounds_tsv(os.path.join(out, "bounds.bf16-budget.tsv"), r["olmo_core"]["fp32"], b["bound"],
               b["steps"])
    c = cmp["resume"]
    bounds_tsv(os.path.join(out, "bounds.resume.tsv"), r["olmo_core"]["fp32.resume"],
               c["bound"], c["steps"])
    with open(os.path.join(out, "paths.txt"), "w", encoding="utf-8") as pf:
        # the absolute paths OLMo-core's configs name, which the CLI test maps (--path-map)
        pf.write(f"tokens\t{os.path.join(work, 'tokens')}\n")
        pf.write(f"step30\t{os.path.join(d['fp32'], 'ckpt', 'step30')}\n")
    summary = {"perturbation": r["perturbation"], "notes": r["notes"], "machine": f.machine()}
    for prec in ("fp32", "bf16"):
        summary[prec] = f.first_and_largest(cmp[prec]["replica"], cmp[prec]["bound"],
                                            cmp[prec]["steps"])
    summary["resume"] = f.first_and_largest(cmp["resume"]["replica_resume_vs_olmo_core_resume"],
                                            cmp["resume"]["bound"], cmp["resume"]["steps"])
    summary["resume"]["olmo_core_resume_vs_straight_max_loss"] = max(
        cmp["resume"]["olmo_core_resume_vs_straight"]["loss"])
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as sf:
        json.dump(summary, sf, indent=2)
        sf.write("\n")
    log("plots:", plots(replica, r, cmp, os.path.join(work, "plots")))
    write_versions(out, "tools/crosscheck/generate_olmo_core_run.py --replica build/replica "
                        "--work WORKDIR")
    log(f"wrote {out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""transformers' Olmo3ForCausalLM on every parity case: the committed reference for `make test`.

    <venv>/bin/python tools/crosscheck/generate_transformers.py --out tests/data/reference/transformers

Writes, per case (hf_run.CASES), `<case>.safetensors`: a reference dump (docs/formats.md) of
transformers' fp32 logits and loss on the case's io.safetensors batch, with every parameter's
gradient where the case is small enough (GRAD_CASES); `figures.json`: transformers' distances to
the case's float64 truth in fp32, bf16 weights (torch_dtype=torch.bfloat16) and fp32 weights under
torch.autocast("cpu", torch.bfloat16); VERSIONS.json. check_transformers.py calls compute() and
write_reference() the same way to regenerate the files into its work directory.
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bounds  # noqa: E402
import common  # noqa: E402
import hf_run  # noqa: E402

# Cases whose dump carries grad.* (the ~8 MB budget: tiny-gqa's gradients are 3.5 MB, the long
# case has no gradient truth and 10 MB of them). check_transformers.py compares every case's
# gradients live.
GRAD_CASES = ("tiny-mha", "tiny-yarn")
PRECISIONS = ("fp32", "bf16", "autocast")


def compute(case_dir, work_dir, grads=True):
    """transformers on one case: {"truth", "fp32", "bf16", "autocast"} results (hf_run.run) and
    {"figures": {precision: distances to the truth}} ; `work_dir` receives the loadable copy."""
    truth = common.read_safetensors(os.path.join(case_dir, "io.safetensors"))
    hf_dir = hf_run.unambiguous_copy(case_dir, os.path.join(work_dir, "hf"))
    ids, labels = truth["input_ids"], truth["labels"]
    out = {"truth": truth}
    fp32 = hf_run.load(hf_dir, "float32")
    out["fp32"] = hf_run.run(fp32, ids, labels, grads=grads)
    out["autocast"] = hf_run.run(fp32, ids, labels, autocast=True)
    del fp32
    out["bf16"] = hf_run.run(hf_run.load(hf_dir, "bfloat16"), ids, labels)
    out["figures"] = {p: hf_run.distances(out[p], truth) for p in PRECISIONS}
    out["figures"]["truth_logit_half_ulp"] = bounds.logit_half_ulp(truth["logits"])
    return out


def write_reference(out_dir, case, case_dir, result):
    """`<case>.safetensors` as committed: fp32 logits + loss, grads for GRAD_CASES."""
    truth = result["truth"]
    path = os.path.join(out_dir, f"{case}.safetensors")
    hf_run.write_dump(path, truth["input_ids"], truth["labels"], result["fp32"], case_dir,
                      "float32", with_grads=case in GRAD_CASES)
    return path


def write_figures(out_dir, figures):
    with open(os.path.join(out_dir, "figures.json"), "w", encoding="utf-8") as f:
        json.dump(figures, f, indent=2, sort_keys=True)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    hf_run.torch_threads()
    os.makedirs(args.out, exist_ok=True)
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case, rel in hf_run.CASES:
            t0 = time.time()
            case_dir = os.path.join(common.REPO, rel)
            result = compute(case_dir, os.path.join(tmp, case))
            write_reference(args.out, case, rel, result)
            figures[case] = result["figures"]
            figures[case]["grads_in_dump"] = case in GRAD_CASES
            common.log(f"generate_transformers: {case} in {time.time() - t0:.1f} s")
    write_figures(args.out, figures)
    common.write_versions(args.out, "tools/crosscheck/generate_transformers.py --out "
                          + os.path.relpath(os.path.abspath(args.out), common.REPO))


if __name__ == "__main__":
    main()

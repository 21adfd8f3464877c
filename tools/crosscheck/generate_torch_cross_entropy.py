"""Writes torch's fp32 cross-entropy and z-loss, as OLMo-core's cross_entropy_loss computes them,
on bf16-valued logits, for tests/ops/torch_cross_entropy_test.cc:

    <venv>/bin/python tools/crosscheck/generate_torch_cross_entropy.py --out tests/data/reference/torch_cross_entropy

Per case: logits [N, V] (random normal times a scale, rounded to bf16, stored as float32), labels
(about 10% and the last row -100), and the batch token count `div` (this case's labelled rows plus
3, as a micro-batch of a larger batch). torch computes, on one thread, what OLMo-core's loss does
(olmo_core/nn/functional/cross_entropy_loss.py, lm_head.py's divide): ce = F.cross_entropy(L,
labels, reduction="sum"), lse = L.logsumexp(-1), zsq = (lse.pow(2) * mask).sum(), ce / div,
(1e-5 * zsq) / div, and the gradient of ((ce + 1e-5 * zsq) / div) with respect to L. Written: for
each case <name>.logits, <name>.grad (float32), <name>.labels (int32), <name>.lse (float32), and
cases.json with the shapes, div and the fp32 scalars (as Python floats, exact), plus VERSIONS.json.
The machine's torch CPU capability is recorded: the log_softmax vector width follows it (AVX2: 8).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

CASES = [("v384", 48, 384, 0.3), ("v384-wide", 48, 384, 2.0), ("v1000-tail", 13, 1000, 1.0),
         ("v100", 120, 100, 1.0), ("v7", 20, 7, 1.0)]
Z_LOSS = 1e-5


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import numpy as np
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    cases = []
    for i, (name, N, V, scale) in enumerate(CASES):
        g = torch.Generator().manual_seed(i)
        L = (torch.randn(N, V, generator=g) * scale).bfloat16().float()
        lab = torch.randint(0, V, (N,), generator=g)
        lab[torch.rand(N, generator=g) < 0.1] = -100
        lab[-1] = -100
        div = torch.tensor(int((lab != -100).sum()) + 3)
        Lr = L.clone().requires_grad_(True)
        ce = F.cross_entropy(Lr, lab, ignore_index=-100, reduction="sum")
        lse = Lr.logsumexp(-1)
        zsq = (lse.pow(2) * (lab != -100)).sum()
        z = Z_LOSS * zsq
        ((ce + z) / div).backward()
        L.numpy().tofile(os.path.join(args.out, name + ".logits"))
        Lr.grad.numpy().tofile(os.path.join(args.out, name + ".grad"))
        lab.numpy().astype(np.int32).tofile(os.path.join(args.out, name + ".labels"))
        lse.detach().numpy().tofile(os.path.join(args.out, name + ".lse"))
        cases.append({"name": name, "rows": N, "vocab": V, "div": int(div),
                      "ce_sum": ce.item(), "lse_sq_sum": zsq.item(),
                      "ce": (ce.detach() / div).item(), "z": (z.detach() / div).item()})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"z_loss_multiplier": Z_LOSS, "torch_threads": 1,
                   "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cases": cases},
                  f, indent=1)
    common.write_versions(args.out, "tools/crosscheck/generate_torch_cross_entropy.py --out "
                          + os.path.relpath(args.out, common.REPO))


if __name__ == "__main__":
    main()

"""Writes torch's bf16 linear layer, forward and backward, for tests/ops/torch_linear_test.cc:

    <venv>/bin/python tools/crosscheck/generate_torch_linear.py --out tests/data/reference/torch_linear

Per case: x [N, in], W [out, in] and the output gradient dy [N, out] (random normal times a scale,
rounded to bf16). torch computes, on one thread, y = F.linear(x, W) and autograd's dx and dW, all
bf16 (their fp32 orders are those of torch's bf16 GEMM on this CPU kind: ATen's own loops where
torch does not hand the GEMM to oneDNN). The sizes put tails after the 64- and 16-term blocks of
the forward's dot product. Written per case, bf16 (16 bits each), little-endian: <name>.x, .w,
.dy, .y, .dx, .dw; cases.json with the shapes and the torch CPU capability; VERSIONS.json.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

# name, N, in, out
CASES = [("k128", 96, 128, 80), ("k100", 64, 100, 48), ("k200", 40, 200, 72), ("k37", 50, 37, 9),
         ("k1024", 24, 1024, 16), ("n500", 500, 64, 48), ("n300", 300, 64, 40), ("n200", 200, 48, 24)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    bf = torch.bfloat16
    cases = []
    for i, (name, N, n_in, n_out) in enumerate(CASES):
        g = torch.Generator().manual_seed(200 + i)
        x = torch.randn(N, n_in, generator=g).to(bf).requires_grad_(True)
        w = (torch.randn(n_out, n_in, generator=g) * 0.1).to(bf).requires_grad_(True)
        dy = (torch.randn(N, n_out, generator=g) * 0.01).to(bf)
        y = F.linear(x, w)
        y.backward(dy)
        save = {"x": x, "w": w, "dy": dy, "y": y, "dx": x.grad, "dw": w.grad}
        for key, t in save.items():
            t.detach().contiguous().view(torch.int16).numpy().tofile(
                os.path.join(args.out, f"{name}.{key}"))
        cases.append({"name": name, "N": N, "in": n_in, "out": n_out})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"torch_threads": 1, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                   "cases": cases}, f, indent=1)
    common.write_versions(args.out, "tools/crosscheck/generate_torch_linear.py --out "
                          + os.path.relpath(args.out, common.REPO))


if __name__ == "__main__":
    main()

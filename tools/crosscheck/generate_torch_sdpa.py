"""Writes torch's CPU attention on bf16 tensors, forward and backward, as OLMo-core's torch
attention backend calls it, for tests/ops/torch_sdpa_test.cc:

    <venv>/bin/python tools/crosscheck/generate_torch_sdpa.py --out tests/data/reference/torch_sdpa

Per case: q [B, T, H, D], k and v [B, T, KV, D] and the output gradient dO [B, T, H, D] (random
normal times a scale, rounded to bf16). As olmo_core/nn/attention/backend.py does: k and v are
repeated per query head (_repeat_kv: unsqueeze, expand, reshape), the heads moved before the
sequence, and F.scaled_dot_product_attention called with the sliding-window mask as a bool
attn_mask, or with is_causal=True where the layer has no window. autograd's backward gives dq, dk,
dv (dk and dv summed over the repeated heads by the expand's backward). The log-sum-exp, which
F.scaled_dot_product_attention does not return, is read from the op it dispatches to
(aten._scaled_dot_product_flash_attention_for_cpu, called with the same inputs; its output is
checked equal to the public call's). Written per case, little-endian: <name>.q, .k, .v, .dout,
.out ([B, T, H, D]) and .dq, .dk, .dv as bf16 (16 bits each), .lse ([B, H, T]) as float32;
cases.json with the shapes and the window, the torch CPU capability (the kernels' vector width and
GEMM path follow it) and VERSIONS.json.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

# name, B, T, H, KV, D, window (0: full causal), q/k scale
CASES = [("w32-gqa", 2, 128, 8, 2, 16, 32, 2.0),
         ("causal-gqa", 2, 128, 8, 2, 16, 0, 2.0),
         ("d64-w64", 1, 200, 4, 4, 64, 64, 1.5),
         ("d24-causal", 1, 130, 4, 2, 24, 0, 1.5),
         ("d128-w100", 1, 300, 2, 1, 128, 100, 1.0),
         ("d8-causal", 2, 70, 4, 1, 8, 0, 2.0),
         ("d16-q1", 1, 193, 2, 1, 16, 0, 2.0),
         ("long-causal", 1, 700, 2, 1, 32, 0, 1.5),
         ("d64-w300", 1, 800, 1, 1, 64, 300, 1.0),
         ("w32-gqa-t300", 1, 300, 8, 2, 16, 32, 2.0),
         ("causal-gqa-t500", 1, 500, 8, 2, 16, 0, 2.0)]


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
    for i, (name, B, T, H, KV, D, window, qk_scale) in enumerate(CASES):
        g = torch.Generator().manual_seed(100 + i)
        q = (torch.randn(B, T, H, D, generator=g) * qk_scale).to(bf).requires_grad_(True)
        k = (torch.randn(B, T, KV, D, generator=g) * qk_scale).to(bf).requires_grad_(True)
        v = torch.randn(B, T, KV, D, generator=g).to(bf).requires_grad_(True)
        dout = (torch.randn(B, T, H, D, generator=g) * 0.01).to(bf)
        n_rep = H // KV

        def repeat(x):
            if n_rep == 1:
                return x
            return x.unsqueeze(3).expand(B, T, KV, n_rep, D).reshape(B, T, KV * n_rep, D)

        qt, kt, vt = q.transpose(1, 2), repeat(k).transpose(1, 2), repeat(v).transpose(1, 2)
        mask = None
        if window:
            ii = torch.arange(T)[:, None]
            jj = torch.arange(T)[None, :]
            mask = (jj <= ii) & (jj > ii - window)
        att = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, is_causal=mask is None,
                                             scale=D ** -0.5)
        att.transpose(1, 2).backward(dout)
        fmask = None if mask is None else torch.zeros(T, T, dtype=bf).masked_fill(~mask, float("-inf"))
        out2, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            qt.detach(), kt.detach(), vt.detach(), 0.0, mask is None, attn_mask=fmask,
            scale=D ** -0.5)
        assert torch.equal(out2, att.detach()), name
        save = {"q": q, "k": k, "v": v, "dout": dout, "out": att.transpose(1, 2), "lse": lse,
                "dq": q.grad, "dk": k.grad, "dv": v.grad}
        for key, t in save.items():
            t = t.detach().contiguous()
            if key == "lse":
                t.float().numpy().tofile(os.path.join(args.out, f"{name}.{key}"))
            else:  # bf16 values: their 16 bits
                t.to(bf).view(torch.int16).numpy().tofile(os.path.join(args.out, f"{name}.{key}"))
        cases.append({"name": name, "B": B, "T": T, "H": H, "KV": KV, "D": D, "window": window})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"torch_threads": 1, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                   "cases": cases}, f, indent=1)
    common.write_versions(args.out, "tools/crosscheck/generate_torch_sdpa.py --out "
                          + os.path.relpath(args.out, common.REPO))


if __name__ == "__main__":
    main()

"""Measures, against torch's own CPU flash attention on bf16 inputs, the fp32 summation orders of
its forward that replica's bf16-fsdp follows (docs/bf16-fsdp-spec.md §9):

    <venv>/bin/python tools/crosscheck/probe_torch_sdpa_order.py pv --keys 300 --head-dim 128
    <venv>/bin/python tools/crosscheck/probe_torch_sdpa_order.py scores --keys 194 --head-dim 16

`pv` sets q = 0, so that every visible key's probability rounds to exactly 1 in bf16 and the
output is (Σ over the visible keys of v) / l: causal attention over `--keys` keys with V drawn
with exponents spread over 2^-12 .. 2^12, so that the order of the sum shows in the bf16 output.
It prints, per candidate split of the P·V sum over a 512-key block into pieces (each summed from
zero in key order, then added into the output), how many outputs differ from torch's. `rule` is
replica's (src/ops/cpu/fsdp_bf16_attention.cc, PvPiecesOf); `none` one piece; a list such
as `100` or `192,384` puts the piece boundaries there.

`scores` makes key 0 dominate every query (its score ≥ 100, every other key's 0), so that torch's
log-sum-exp is that score plus log(fexp(0)): each row reads one score's fp32 bits. It prints, per
candidate order of the dot product q·k over the head dim, how many rows differ, separately for
query blocks of at least 4 queries and for a last block of fewer (choose --keys so that there is
one: the kernel's query blocks are 32 below 192 keys, 64 below 768, else 256).

Both are measurements for a person to read, not tests; tests/ops/torch_sdpa_test.cc checks the
result on the committed fixture.
"""
import argparse
import struct
import sys

import numpy as np

F32 = np.float32


def bf16_round(x):
    u = np.asarray(x, np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.view(np.float32)


def fexp_u20_of_zero():
    """ATen's fexp_u20(0): 2^(0 − c0) put together in the exponent bits (the fraction is 0)."""
    c0 = F32(0.00010703434948458272)
    scaled = F32(np.float64(2**23) * np.float64(F32(-c0)) + np.float64(2**23 * 127.0))
    return F32(struct.unpack("<f", struct.pack("<I", int(scaled)))[0])


def block_row_sum(p):
    """The kernel's row sum of a block's exp values on the AVX2 kind (BlockRowSum in C++)."""
    n = len(p)
    lane = [F32(0)] * 16
    full16, full8 = n - n % 16, n - n % 8
    for c in range(0, full16, 16):
        for k in range(16):
            lane[k] = F32(lane[k] + p[c + k])
    for j in range(full16, full8):
        lane[j - full16] = F32(lane[j - full16] + p[j])
    w = 8
    while w >= 1:
        for k in range(w):
            lane[k] = F32(lane[k] + lane[k + w])
        w //= 2
    s = lane[0]
    for j in range(full8, n):
        s = F32(s + p[j])
    return s


def pieces(length, rows, spec):
    if spec == "none":
        return [length]
    if spec == "rule":
        if length <= 192 or rows < 4:
            return [length]
        if length <= 384:
            return [length // 2, length]
        return list(range(192, length, 192)) + [length]
    return [int(x) for x in spec.split(",")] + [length]


def probe_pv(torch, keys, hd, candidates, trials):
    bf = torch.bfloat16
    block, qs = 512, 32 if keys < 192 else 64 if keys < 768 else 256
    e0 = fexp_u20_of_zero()
    assert bf16_round(e0) == 1.0
    q = torch.zeros(1, 1, keys, hd, dtype=bf)
    k = torch.randn(1, 1, keys, hd).to(bf)
    g = torch.Generator().manual_seed(3)
    bad = {c: 0 for c in candidates}
    for _ in range(trials):
        spread = torch.exp2(torch.randint(-12, 12, (1, 1, keys, hd), generator=g).float())
        v = (torch.randn(1, 1, keys, hd, generator=g) * spread).to(bf)
        out, _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, True, scale=hd ** -0.5)
        out, V = out[0, 0].float().numpy(), v[0, 0].float().numpy()
        for cand in candidates:
            dst = np.zeros((keys, hd), F32)
            l = np.zeros(keys, F32)
            for n0 in range(0, keys, block):
                length = min(block, keys - n0)
                full8 = length - length % 8  # keys past it take std::exp(0) = 1 exactly
                for i in range(n0, keys):
                    visible = min(length, i + 1 - n0)
                    p = [(e0 if j < full8 else F32(1)) if j < visible else F32(0)
                         for j in range(length)]
                    # l = fma(exp(m_old − m_new), l, block sum), and m never moves here (q = 0)
                    l[i] = F32(l[i] + block_row_sum(p)) if n0 else block_row_sum(p)
                    start = 0
                    for end in pieces(length, min(qs, keys - i // qs * qs), cand):
                        hi = min(end, visible)
                        part = np.zeros(hd, F32)
                        for j in range(start, hi):
                            part = (part + V[n0 + j]).astype(F32)
                        dst[i] = (dst[i] + part).astype(F32)
                        start = end
            mine = bf16_round(dst * (F32(1) / l)[:, None])
            bad[cand] += int((mine != out).sum())
    print(f"pv: {keys} keys, head dim {hd}, {trials} x {keys * hd} outputs differing:", bad)


def dot_orders():
    def seq(a, b):
        acc = F32(0)
        for x, y in zip(a, b):
            acc = F32(acc + F32(x * y))
        return acc

    def lanes(width):
        def f(a, b):
            lane = [F32(0)] * width
            whole = len(a) - len(a) % width
            for d in range(whole):
                lane[d % width] = F32(lane[d % width] + F32(a[d] * b[d]))
            w = width // 2
            while w >= 1:
                for e in range(w):
                    lane[e] = F32(lane[e] + lane[e + w])
                w //= 2
            acc = lane[0]
            for d in range(whole, len(a)):
                acc = F32(acc + F32(a[d] * b[d]))
            return acc
        return f

    def ilp4(a, b):
        part = [F32(0)] * 4
        whole = len(a) - len(a) % 4
        for d in range(len(a)):
            s = d % 4 if d < whole else 0
            part[s] = F32(part[s] + F32(a[d] * b[d]))
        return F32(F32(F32(part[0] + part[1]) + part[2]) + part[3])

    return {"seq": seq, "lanes8": lanes(8), "lanes16": lanes(16), "lanes32": lanes(32),
            "ilp4": ilp4}


def probe_scores(torch, keys, hd, trials):
    bf = torch.bfloat16
    qs = 32 if keys < 192 else 64 if keys < 768 else 256
    last = (keys - 1) // qs * qs
    small_last = keys - last < 4
    scale = F32(1.0 / np.sqrt(np.float64(hd)))
    log_e0 = F32(np.log(np.float64(fexp_u20_of_zero())))
    orders = dot_orders()
    g = torch.Generator().manual_seed(11)
    bad = {o: [0, 0] for o in orders}
    rows = [0, 0]
    for _ in range(trials):
        spread = torch.exp2(torch.randint(-3, 4, (1, 1, keys, hd), generator=g).float())
        q = (torch.randn(1, 1, keys, hd, generator=g) * spread).to(bf)
        k = torch.zeros(1, 1, keys, hd)
        mag = torch.exp2(torch.randint(2, 6, (hd,), generator=g).float())
        k[0, 0, 0] = torch.sign(q[0, 0, last].float()) * mag * (1 + torch.rand(hd, generator=g))
        k = k.to(bf)
        v = torch.randn(1, 1, keys, hd, generator=g).to(bf)
        _, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, True, scale=hd ** -0.5)
        kn = k[0, 0, 0].float().numpy()
        for row in range(keys):
            qn = q[0, 0, row].float().numpy()
            if F32(orders["seq"](qn, kn) * scale) < 100:  # key 0 does not dominate this row
                continue
            group = 1 if (small_last and row >= last) else 0
            rows[group] += 1
            for name, fn in orders.items():
                if F32(F32(fn(qn, kn) * scale) + log_e0) != F32(float(lse[0, 0, row])):
                    bad[name][group] += 1
    print(f"scores: {keys} keys, head dim {hd}: rows read {rows[0]} in query blocks of >= 4 "
          f"queries, {rows[1]} in a last block of < 4; differing [>= 4, < 4]:", bad)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["pv", "scores"])
    ap.add_argument("--keys", type=int, required=True)
    ap.add_argument("--head-dim", type=int, required=True)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--candidates", nargs="*", default=["rule", "none"],
                    help="pv: rule, none, or piece boundaries such as 100 or 192,384")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    if torch.backends.cpu.get_cpu_capability() != "AVX2":
        sys.exit("these orders are the AVX2 kind's; torch's CPU capability here is "
                 + torch.backends.cpu.get_cpu_capability())
    if a.what == "pv":
        probe_pv(torch, a.keys, a.head_dim, a.candidates, a.trials)
    else:
        probe_scores(torch, a.keys, a.head_dim, a.trials)


if __name__ == "__main__":
    main()

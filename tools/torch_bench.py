#!/usr/bin/python3
"""PyTorch baseline for `replica bench`: the same Olmo 3 training step, in plain PyTorch.

Builds the Olmo 3 decoder of a Hugging Face config.json (fixture README "Model math": post-norm
blocks, QK-norm over the whole q / k projection, rotate-half RoPE after the norm, causal or sliding
window attention as a materialised masked softmax over T x T -- what PyTorch 1.13 / HF "eager"
attention does -- SwiGLU MLP, final norm, untied LM head), with random weights (matrices
N(0, 0.02^2), norms 1) and uniformly random tokens and labels, all fp32.

A training step = forward, mean cross-entropy over all B x T positions, backward, global gradient
norm clip at 1.0, AdamW (0.9, 0.95, eps 1e-8, weight decay 0.1 on everything but the embedding).
--precision bf16 runs the forward under torch.autocast("cpu", dtype=torch.bfloat16) (fp32 master
weights and AdamW, as replica's bf16). --precision bf16-weights is the mixed precision of
OLMo-core's FSDP policy (param_dtype bf16, reduce_dtype fp32): the model computes with bf16 copies
of the weights made once per step from the fp32 master weights, forward and backward in bf16 (the
RMSNorm statistics in fp32, the loss on fp32 logits), gradients cast to fp32 for the clip and AdamW
on the master weights. Attention scores are one baddbmm of the additive mask with
q kT (--attention baddbmm, the default): one fused kernel and one T x T temporary instead of the
three (matmul, scale, add) of --attention matmul; see docs/BENCHMARKS.md for the measured effect.
--attention sdpa (PyTorch 2) calls F.scaled_dot_product_attention: is_causal on full layers, the
boolean band mask on sliding ones. --compile (PyTorch 2) runs the model through torch.compile
(inductor); its compile time is reported apart and is not in the step times.
Reports the median of --steps timed steps after --warmup untimed ones, and torch's fp32 GEMM rate
(2048^3 matmul, best of 3) measured in the same process with the same thread count.

Run with Debian's interpreter, which has python3-torch (1.13), or the reference environment's
(PyTorch 2):
    /usr/bin/python3 tools/torch_bench.py --model-config CONFIG.json --batch 4 --seq 1024 --threads 2
Prints one JSON object on stdout:
    {tokens_per_s, step_time_s, step_times_s, gemm_gflops, batch, seq, threads, precision,
     attention, compile, compile_s, torch_version, loss}
"""

import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def load_config(path):
    with open(path) as f:
        c = json.load(f)
    cfg = {
        "V": int(c["vocab_size"]),
        "D": int(c["hidden_size"]),
        "I": int(c["intermediate_size"]),
        "L": int(c["num_hidden_layers"]),
        "H": int(c["num_attention_heads"]),
        "KV": int(c.get("num_key_value_heads") or c["num_attention_heads"]),
        "eps": float(c.get("rms_norm_eps", 1e-6)),
        "theta": float(c.get("rope_theta", 10000.0)),
        "W": int(c.get("sliding_window") or 0),
        "tied": bool(c.get("tie_word_embeddings", False)),
    }
    cfg["hd"] = int(c.get("head_dim") or cfg["D"] // cfg["H"])
    types = c.get("layer_types")
    if types is None:
        types = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
                 for i in range(cfg["L"])]
    if len(types) != cfg["L"]:
        sys.exit(f"{path}: layer_types has {len(types)} entries, expected {cfg['L']}")
    cfg["sliding"] = [t == "sliding_attention" for t in types]
    return cfg


class Olmo3(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        V, D, I, H, KV, hd = cfg["V"], cfg["D"], cfg["I"], cfg["H"], cfg["KV"], cfg["hd"]

        def mat(rows, cols):
            return torch.nn.Parameter(torch.randn(rows, cols) * 0.02)

        def ones(n):
            return torch.nn.Parameter(torch.ones(n))

        self.embed = mat(V, D)
        self.layers = torch.nn.ModuleList()
        for _ in range(cfg["L"]):
            layer = torch.nn.Module()
            layer.q = mat(H * hd, D)
            layer.k = mat(KV * hd, D)
            layer.v = mat(KV * hd, D)
            layer.o = mat(D, H * hd)
            layer.q_norm = ones(H * hd)
            layer.k_norm = ones(KV * hd)
            layer.gate = mat(I, D)
            layer.up = mat(I, D)
            layer.down = mat(D, I)
            layer.post_attn = ones(D)
            layer.post_ff = ones(D)
            self.layers.append(layer)
        self.norm = ones(D)
        self.lm_head = None if cfg["tied"] else mat(V, D)

    def rms(self, x, w):
        if x.dtype == torch.bfloat16:  # statistics in fp32, as OLMo-core's RMSNorm
            xf = x.float()
            y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.cfg["eps"])
            return y.to(x.dtype) * w
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.cfg["eps"]) * w

    def forward(self, ids, labels, cos, sin, masks, attention="baddbmm"):
        c = self.cfg
        B, T = ids.shape
        H, KV, hd = c["H"], c["KV"], c["hd"]
        half = hd // 2
        scale = 1.0 / math.sqrt(hd)

        def rope(x):  # x: [B, n, T, hd], rotate-half pairing j <-> j + hd/2
            x1, x2 = x[..., :half], x[..., half:]
            return x * cos + torch.cat((-x2, x1), dim=-1) * sin

        h = F.embedding(ids, self.embed)
        for li, p in enumerate(self.layers):
            q = self.rms(F.linear(h, p.q), p.q_norm).view(B, T, H, hd).transpose(1, 2)
            k = self.rms(F.linear(h, p.k), p.k_norm).view(B, T, KV, hd).transpose(1, 2)
            v = F.linear(h, p.v).view(B, T, KV, hd).transpose(1, 2)
            q, k = rope(q), rope(k)
            if KV != H:
                k = k.repeat_interleave(H // KV, dim=1)
                v = v.repeat_interleave(H // KV, dim=1)
            if attention == "sdpa":
                sliding = c["sliding"][li] and c["W"] > 0
                a = F.scaled_dot_product_attention(
                    q, k, v, attn_mask=masks["band"].to(q.device) if sliding else None,
                    is_causal=not sliding, scale=scale)
            elif attention == "baddbmm":
                qf, kf = q.reshape(B * H, T, hd), k.reshape(B * H, T, hd)
                s = torch.baddbmm(masks[c["sliding"][li]].to(qf.dtype), qf, kf.transpose(1, 2),
                                  alpha=scale)
                a = torch.bmm(torch.softmax(s, dim=-1).to(v.dtype),
                              v.reshape(B * H, T, hd)).view(B, H, T, hd)
            else:
                s = torch.matmul(q, k.transpose(-1, -2)) * scale + masks[c["sliding"][li]]
                a = torch.matmul(torch.softmax(s, dim=-1), v)
            a = F.linear(a.transpose(1, 2).reshape(B, T, H * hd), p.o)
            h = h + self.rms(a, p.post_attn)
            m = F.linear(F.silu(F.linear(h, p.gate)) * F.linear(h, p.up), p.down)
            h = h + self.rms(m, p.post_ff)
        head = self.embed if self.lm_head is None else self.lm_head
        logits = F.linear(self.rms(h, self.norm), head)
        return F.cross_entropy(logits.view(B * T, -1).float(), labels.view(B * T))


def rope_tables(cfg, T):
    hd = cfg["hd"]
    inv = cfg["theta"] ** (-torch.arange(0, hd // 2, dtype=torch.float64) * 2.0 / hd)
    phi = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    phi = torch.cat((phi, phi), dim=-1)
    return phi.cos().float(), phi.sin().float()


def attention_masks(cfg, T):
    """Additive [T, T] masks: key j visible to query i iff j <= i (full) and i - W < j (sliding)."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    full = j <= i
    masks = {False: torch.zeros(T, T).masked_fill(~full, float("-inf"))}
    if cfg["W"] > 0:
        sliding = full & (j > i - cfg["W"])
        masks[True] = torch.zeros(T, T).masked_fill(~sliding, float("-inf"))
        masks["band"] = sliding  # boolean, True = visible (scaled_dot_product_attention)
    else:
        masks[True] = masks[False]
    return masks


def gemm_gflops(n=2048, reps=3):
    a = torch.randn(n, n)
    b = torch.randn(n, n)
    torch.matmul(a, b)  # warm-up
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-config", required=True, help="Hugging Face config.json")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--steps", type=int, default=3, help="timed steps (median reported)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--precision", choices=["fp32", "bf16", "bf16-weights"], default="fp32",
                    help="bf16: forward under torch.autocast('cpu', dtype=torch.bfloat16); "
                         "bf16-weights: bf16 weights and compute, fp32 master weights")
    ap.add_argument("--attention", choices=["baddbmm", "matmul", "sdpa"], default="baddbmm")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2)")
    args = ap.parse_args()
    if args.batch < 1 or args.seq < 1 or args.steps < 1 or args.warmup < 0 or args.threads < 1:
        sys.exit("torch_bench: --batch, --seq, --steps, --threads must be >= 1, --warmup >= 0")
    torch2 = int(torch.__version__.split(".")[0]) >= 2
    if (args.attention == "sdpa" or args.compile) and not torch2:
        sys.exit(f"torch_bench: --attention sdpa and --compile need PyTorch 2 "
                 f"(this is {torch.__version__})")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = load_config(args.model_config)
    B, T = args.batch, args.seq

    model = Olmo3(cfg)
    master = model  # the weights AdamW updates (fp32)
    compute = model  # the weights the step computes with
    if args.precision == "bf16-weights":
        compute = Olmo3(cfg).to(torch.bfloat16)
    decay = [p for n, p in master.named_parameters() if n != "embed"]
    opt = torch.optim.AdamW([{"params": [master.embed], "weight_decay": 0.0},
                             {"params": decay, "weight_decay": 0.1}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    cos, sin = rope_tables(cfg, T)
    masks = attention_masks(cfg, T)
    if args.precision == "bf16-weights":
        cos, sin = cos.to(torch.bfloat16), sin.to(torch.bfloat16)
        masks = {k: (m if k == "band" else m.to(torch.bfloat16)) for k, m in masks.items()}
    ids = torch.randint(0, cfg["V"], (B, T))
    labels = torch.randint(0, cfg["V"], (B, T))
    forward = compute
    compile_s = 0.0
    if args.compile:
        forward = torch.compile(compute)

    gflops = gemm_gflops()

    pairs = list(zip(master.parameters(), compute.parameters()))
    times, loss = [], None
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if compute is not master:
            with torch.no_grad():
                for p32, p16 in pairs:
                    p16.copy_(p32)
                    p16.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = forward(ids, labels, cos, sin, masks, args.attention)
        loss.backward()
        if compute is not master:
            for p32, p16 in pairs:
                p32.grad = p16.grad.float()
        torch.nn.utils.clip_grad_norm_(master.parameters(), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        if args.compile and step == 0:
            compile_s = dt  # the first step compiles forward and backward
        if step >= args.warmup:
            times.append(dt)
        print(f"torch_bench: step {step} {dt:.3f}s loss {loss.item():.4f}", file=sys.stderr)

    step_time = statistics.median(times)
    print(json.dumps({
        "tokens_per_s": B * T / step_time,
        "step_time_s": step_time,
        "step_times_s": times,
        "gemm_gflops": gflops,
        "model_config": args.model_config,
        "batch": B, "seq": T, "threads": args.threads,
        "precision": args.precision, "attention": args.attention,
        "compile": args.compile, "compile_s": compile_s,
        "loss": float(loss.item()),
        "torch_version": torch.__version__,
    }))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""PyTorch 1.13 baseline for `replica parity --precision bf16`: the same model on the same inputs.

Reads a parity case (a directory with config.json, model.safetensors and io.safetensors, as in
tests/data/olmo3/* and tests/data/long/*), runs the Hugging Face Olmo 3 forward written in plain
PyTorch -- in float32, and under torch.autocast("cpu", dtype=torch.bfloat16) the way transformers
runs Olmo 3 in bf16 (RMSNorm computed in fp32 and the weight multiplied in fp32 before the cast
back, RoPE in fp32, eager attention with an fp32 softmax cast back to bf16) -- and reports, for
each, KL(truth || computed) mean/max and top-1 agreement against the float64 truth in io.safetensors
(`logits`). Prints one JSON object:
    {"case", "positions", "fp32": {kl_mean, kl_max, top1}, "bf16_autocast": {...}, "torch_version"}

    /usr/bin/python3 tools/torch_parity.py tests/data/long/bytes-mqa-2048 --threads 2
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "BF16": np.uint16, "F16": np.float16}


def read_safetensors(path):
    """name -> numpy array (BF16 widened to float32)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(data[a:b], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        if info["dtype"] == "BF16":
            arr = (arr.astype(np.uint32) << 16).view(np.float32)
        out[name] = arr.copy()
    return out


def fail(msg):
    print(f"torch_parity: error: {msg}", file=sys.stderr)
    sys.exit(2)


class Olmo3:
    """The HF Olmo 3 forward over a dict of HF-named fp32 tensors."""

    def __init__(self, cfg, w):
        self.c = cfg
        self.w = {k: torch.from_numpy(v) for k, v in w.items()}
        if cfg.get("rope_scaling"):
            fail("rope_scaling (YaRN) is not implemented in this baseline")

    def rms(self, x, weight):
        # transformers' Olmo3RMSNorm: fp32 math, weight multiplied in fp32, then the input dtype.
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c["rms_norm_eps"])
        return (weight * x).to(dtype)

    def forward(self, ids):
        c, w = self.c, self.w
        B, T = ids.shape
        H, KV = c["num_attention_heads"], c["num_key_value_heads"]
        hd = c.get("head_dim") or c["hidden_size"] // H
        L = c["num_hidden_layers"]
        types = c.get("layer_types") or ["full_attention" if (i + 1) % 4 == 0
                                         else "sliding_attention" for i in range(L)]
        W = c.get("sliding_window") or 0
        inv = c["rope_theta"] ** (-torch.arange(0, hd // 2, dtype=torch.float64) * 2.0 / hd)
        phi = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        phi = torch.cat((phi, phi), dim=-1)
        cos, sin = phi.cos().float(), phi.sin().float()
        i = torch.arange(T)[:, None]
        j = torch.arange(T)[None, :]
        full = j <= i
        masks = {"full_attention": torch.zeros(T, T).masked_fill(~full, float("-inf")),
                 "sliding_attention": torch.zeros(T, T).masked_fill(
                     ~(full & (j > i - W)) if W > 0 else ~full, float("-inf"))}

        def rope(x):  # transformers: computed against fp32 cos/sin, cast back to x's dtype
            dtype = x.dtype
            xf = x.float()
            x1, x2 = xf[..., : hd // 2], xf[..., hd // 2:]
            return (xf * cos + torch.cat((-x2, x1), dim=-1) * sin).to(dtype)

        h = F.embedding(ids, w["model.embed_tokens.weight"])
        for li in range(L):
            p = f"model.layers.{li}."
            q = self.rms(F.linear(h, w[p + "self_attn.q_proj.weight"]),
                         w[p + "self_attn.q_norm.weight"])
            k = self.rms(F.linear(h, w[p + "self_attn.k_proj.weight"]),
                         w[p + "self_attn.k_norm.weight"])
            v = F.linear(h, w[p + "self_attn.v_proj.weight"])
            q = rope(q.view(B, T, H, hd).transpose(1, 2))
            k = rope(k.view(B, T, KV, hd).transpose(1, 2))
            v = v.view(B, T, KV, hd).transpose(1, 2)
            if KV != H:
                k = k.repeat_interleave(H // KV, dim=1)
                v = v.repeat_interleave(H // KV, dim=1)
            s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + masks[types[li]]
            a = torch.matmul(torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype), v)
            a = F.linear(a.transpose(1, 2).reshape(B, T, H * hd), w[p + "self_attn.o_proj.weight"])
            h = h + self.rms(a, w[p + "post_attention_layernorm.weight"])
            m = F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) *
                         F.linear(h, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
            h = h + self.rms(m, w[p + "post_feedforward_layernorm.weight"])
        head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        return F.linear(self.rms(h, w["model.norm.weight"]), head).float()


def stats(truth, logits):
    lp_t = torch.log_softmax(truth.double(), dim=-1)
    lp = torch.log_softmax(logits.double(), dim=-1)
    kl = (lp_t.exp() * (lp_t - lp)).sum(-1).flatten()
    top1 = (truth.argmax(-1) == logits.argmax(-1)).double().mean().item()
    return {"kl_mean": kl.mean().item(), "kl_max": kl.max().item(), "top1": top1}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", help="directory with config.json, model.safetensors, io.safetensors")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--grads", action="store_true",
                    help="also the relative error ||g_bf16 - g_fp32|| / ||g_fp32|| of all parameter "
                         "gradients of the mean CE over io's labels (autocast vs float32)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    for f in ("config.json", "model.safetensors", "io.safetensors"):
        if not os.path.exists(os.path.join(args.case, f)):
            fail(f"{args.case}: missing {f}")
    with open(os.path.join(args.case, "config.json")) as f:
        cfg = json.load(f)
    model = Olmo3(cfg, read_safetensors(os.path.join(args.case, "model.safetensors")))
    io = read_safetensors(os.path.join(args.case, "io.safetensors"))
    ids = torch.from_numpy(io["input_ids"].astype(np.int64))
    truth = torch.from_numpy(io["logits"])
    out = {"case": args.case, "positions": int(ids.numel()), "torch_version": torch.__version__}
    with torch.no_grad():
        out["fp32"] = stats(truth, model.forward(ids))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model.forward(ids)
        out["bf16_autocast"] = stats(truth, logits.float())
    if args.grads:
        labels = torch.from_numpy(io["labels"].astype(np.int64))
        grads = {}
        for mode in ("fp32", "bf16"):
            for t in model.w.values():
                t.requires_grad_(True)
                t.grad = None
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"):
                logits = model.forward(ids)
            loss = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100)
            loss.backward()
            grads[mode] = torch.cat([t.grad.flatten().double() for t in model.w.values()])
        diff = (grads["bf16"] - grads["fp32"]).norm() / grads["fp32"].norm()
        out["grad_rel_err_bf16_vs_fp32"] = diff.item()
    print(json.dumps(out))


if __name__ == "__main__":
    main()

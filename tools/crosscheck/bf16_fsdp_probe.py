#!/usr/bin/env python3
"""One bf16 training step of OLMo-core (FSDP, param_dtype bfloat16) against the explicit
emulation in bf16_fsdp_reference.py (the reference venv's python).

    bf16_fsdp_probe.py [--weights STEP0/model.safetensors] [--seed 0] [--threads 1]
                       [--json OUT.json] [--dump DIR]

The model and train module are built by tools/olmo_core_train.py's own build_config for
`--precision bf16` (fixture model of tests/data/reference/olmo_core_run/config.bf16.json: FSDP on
one gloo process, param_dtype bfloat16, reduce_dtype float32, rank micro-batch 4 instances of
128 tokens, global batch 8 instances = 2 micro-batches, z-loss 1e-5). The step-0 weights (HF
names) are put in through OLMo-core's convert_state_from_hf. The batch: 8 x 128 tokens drawn in
[2, 384) by torch.Generator(seed). OLMo-core's TransformerTrainModule.train_batch runs forward
and backward (no optimizer step); the gradients are read from the FSDP sharded parameters
(float32, summed over the micro-batches by FSDP).

Printed: first each op of the reference fed with OLMo-core's own inputs of that op (captured by
module hooks in micro-batch 0; the per-op rounding check), then CE and Z loss of both (float32
ulps apart), the total grad norms, and per parameter tensor the fraction of elements bit-equal,
max |diff|, max |diff| / max |grad| and the grad norm.
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)

DEFAULT_WEIGHTS = os.path.join(ROOT, "tests/data/reference/olmo_core_run/step0/model.safetensors")


class Recorder:
    """Stands where OLMo-core's Trainer receives the train module's metrics: keeps them."""

    def __init__(self):
        self.metrics = {}

    def record_metric(self, name, value, reduce_type=None, namespace=None, merge_strategy=None):
        key = f"{namespace}/{name}" if namespace else name
        self.metrics[key] = value.detach().clone() if hasattr(value, "detach") else value

    def record_ce_loss(self, value, reduce_type=None):
        self.metrics["train/CE loss"] = value.detach().clone()


def build(threads):
    import torch
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    import olmo_core_tools
    import olmo_core_train
    from olmo_core.utils import seed_all
    olmo_core_tools.prepare_environment(True)
    tmp = tempfile.mkdtemp(prefix="bf16_probe_")
    import numpy as np
    np.arange(4096, dtype=np.uint16).tofile(os.path.join(tmp, "x.npy"))
    args = argparse.Namespace(precision="bf16", vocab_size=384, eos_id=0, pad_id=1, tokenizer=None,
                              data_dir=tmp, out=tmp, micro_batch_instances=4, float8=False,
                              steps=1, save_interval=1, resume_from=None)
    config = olmo_core_train.build_config(args)
    seed_all(config.init_seed)
    model = config.model.build(init_device="meta")
    tm = config.train_module.build(model)
    tm._trainer = Recorder()
    return tm


def load_weights(tm, path):
    import torch
    from safetensors.torch import load_file
    from olmo_core.nn.hf.config import get_hf_config
    from olmo_core.nn.hf.convert import convert_state_from_hf
    hf = load_file(path)
    state = convert_state_from_hf(get_hf_config(tm.model), {k: v.float() for k, v in hf.items()})
    names = {n for n, _ in tm.model.named_parameters()}
    if set(state) != names:
        raise SystemExit(f"weights: names differ: {sorted(set(state) ^ names)}")
    with torch.no_grad():
        for n, p in tm.model.named_parameters():
            local = p.to_local() if hasattr(p, "to_local") else p
            local.copy_(state[n].reshape(local.shape))
    return {n: state[n].clone() for n in sorted(state)}


def batch_of(seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    return torch.randint(2, 384, (8, 128), generator=g, dtype=torch.long)


def olmo_core_step(tm, input_ids):
    import torch
    for p in tm.model.parameters():
        p.grad = None
    tm.train_batch({"input_ids": input_ids.clone()})
    m = tm._trainer.metrics
    grads = {}
    for n, p in tm.model.named_parameters():
        g = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
        grads[n] = g.detach().clone()
    return {"ce": m["train/CE loss"].float(), "z": m["train/Z loss"].float(), "grads": grads}


def capture(tm):
    """Forward hooks on every module of OLMo-core's model: the first call's input and output, and
    (tensor hook) the gradient arriving at that output — micro-batch 0 of the step."""
    import torch
    cap, gcap = {}, {}

    def hook(name):
        def f(mod, inp, out):
            if name in cap or not torch.is_tensor(out):
                return
            x = inp[0].detach().clone() if inp and torch.is_tensor(inp[0]) else None
            cap[name] = (x, out.detach().clone())
            if out.requires_grad:
                out.register_hook(lambda g: gcap.setdefault(name, g.detach().clone()))
        return f

    handles = [m.register_forward_hook(hook(n)) for n, m in tm.model.named_modules() if n]
    return cap, gcap, handles


def bit_eq(a, b):
    import torch
    return (a.float().contiguous().view(torch.int32) == b.float().contiguous().view(torch.int32)).float().mean().item()


def attention_from(ref, c, B, T, window, sin, cos):
    """The reference's attention from OLMo-core's captured q_norm, k_norm and w_v outputs of one
    block (c: name -> (input, output)): RoPE, the GQA repeat, (B, H, T, D) layouts, the mask and
    the flash forward. Returns q, k, v, mask, out, lse."""
    qn, kn = c("attention.q_norm")[1].float(), c("attention.k_norm")[1].float()
    v = c("attention.w_v")[1].float()
    H, KV, D = ref.N_HEADS, ref.N_KV, ref.HEAD_DIM
    qr = ref.rope_fwd(qn.view(B, T, H, D), sin, cos)
    kr = ref.rope_fwd(kn.view(B, T, KV, D), sin, cos)
    kx = kr.unsqueeze(3).expand(B, T, KV, H // KV, D).reshape(B, T, H, D)
    vx = v.view(B, T, KV, D).unsqueeze(3).expand(B, T, KV, H // KV, D).reshape(B, T, H, D)
    qt, kt, vt = qr.transpose(1, 2), kx.transpose(1, 2), vx.transpose(1, 2)
    allowed = ref.window_mask(T, window)
    att, lse = ref.flash_fwd(qt, kt, vt, allowed, D ** -0.5)
    return qt, kt, vt, allowed, att, lse


def per_op(ref, weights, cap, gcap, windows=(32, 32, 32, None)):
    """Each op of the reference fed with OLMo-core's own inputs of that op (micro-batch 0):
    the fraction of output elements bit-equal to OLMo-core's. Isolates per-op rounding from the
    chaotic spread of single-ulp differences through the network."""
    r = ref.r
    P = {n: r(w.float()) for n, w in weights.items()}
    T = cap["embeddings"][1].shape[1]
    B = cap["embeddings"][1].shape[0]
    sin, cos = ref.rope_tables(T, ref.HEAD_DIM)
    rows = []
    add = lambda name, a, b: rows.append((name, bit_eq(a, b)))
    for i, w in enumerate(windows):
        pre = f"blocks.{i}."
        c = lambda n: cap[pre + n]
        x = c("attention.w_q")[0].float()
        for n in ("q", "k", "v"):
            add(f"{pre}w_{n} fwd", ref.lin(x, P[pre + f"attention.w_{n}.weight"]), c(f"attention.w_{n}")[1])
        for n in ("q", "k"):
            add(f"{pre}{n}_norm fwd", ref.rms_fwd(c(f"attention.w_{n}")[1].float(),
                                                  P[pre + f"attention.{n}_norm.weight"])[0],
                c(f"attention.{n}_norm")[1])
        att = attention_from(ref, c, B, T, w, sin, cos)[4]
        add(f"{pre}rope+sdpa fwd", att.transpose(1, 2).reshape(B, T, -1), c("attention.w_out")[0])
        add(f"{pre}w_out fwd", ref.lin(c("attention.w_out")[0].float(), P[pre + "attention.w_out.weight"]),
            c("attention.w_out")[1])
        add(f"{pre}attention_norm fwd", ref.rms_fwd(c("attention_norm")[0].float(), P[pre + "attention_norm.weight"])[0],
            c("attention_norm")[1])
        h = c("feed_forward.w1")[0].float()
        add(f"{pre}h = x + norm", r(x + c("attention_norm")[1].float()), h)
        a1 = ref.lin(h, P[pre + "feed_forward.w1.weight"])
        a3 = ref.lin(h, P[pre + "feed_forward.w3.weight"])
        add(f"{pre}w1 fwd", a1, c("feed_forward.w1")[1])
        add(f"{pre}w3 fwd", a3, c("feed_forward.w3")[1])
        a1, a3 = c("feed_forward.w1")[1].float(), c("feed_forward.w3")[1].float()
        add(f"{pre}silu*up", r(ref.silu_fwd(a1) * a3), c("feed_forward.w2")[0])
        add(f"{pre}w2 fwd", ref.lin(c("feed_forward.w2")[0].float(), P[pre + "feed_forward.w2.weight"]),
            c("feed_forward.w2")[1])
        add(f"{pre}feed_forward_norm fwd", ref.rms_fwd(c("feed_forward_norm")[0].float(), P[pre + "feed_forward_norm.weight"])[0],
            c("feed_forward_norm")[1])
        add(f"{pre}out = h + norm", r(h + c("feed_forward_norm")[1].float()), cap[f"blocks.{i}"][1])
    add("lm_head.norm fwd", ref.rms_fwd(cap["lm_head.norm"][0].float(), P["lm_head.norm.weight"])[0], cap["lm_head.norm"][1])
    add("lm_head.w_out fwd", ref.lin(cap["lm_head.w_out"][0].float(), P["lm_head.w_out.weight"]), cap["lm_head.w_out"][1])
    # backward, each op from OLMo-core's gradient at its output
    g_hn = r(ref.mm(gcap["lm_head.w_out"].float(), P["lm_head.w_out.weight"]))
    add("lm_head.w_out bwd dX", g_hn, gcap["lm_head.norm"])
    _, Sn = ref.rms_fwd(cap["lm_head.norm"][0].float(), P["lm_head.norm.weight"])
    add("lm_head.norm bwd dX", ref.rms_bwd(gcap["lm_head.norm"].float(), P["lm_head.norm.weight"], Sn)[0], gcap["blocks.3"])
    for i, w in reversed(list(enumerate(windows))):
        pre = f"blocks.{i}."
        c = lambda n: cap[pre + n]
        g = lambda n: gcap[pre + n].float()
        gout = gcap[f"blocks.{i}"].float()
        _, S = ref.rms_fwd(c("feed_forward_norm")[0].float(), P[pre + "feed_forward_norm.weight"])
        add(f"{pre}feed_forward_norm bwd dX", ref.rms_bwd(gout, P[pre + "feed_forward_norm.weight"], S)[0], g("feed_forward.w2"))
        g_mm = r(ref.mm(g("feed_forward.w2"), P[pre + "feed_forward.w2.weight"]))
        a1, a3 = c("feed_forward.w1")[1].float(), c("feed_forward.w3")[1].float()
        add(f"{pre}mul bwd (up)", r(g_mm * ref.silu_fwd(a1)), g("feed_forward.w3"))
        add(f"{pre}mul+silu bwd (gate)", ref.silu_bwd(r(g_mm * a3), a1), g("feed_forward.w1"))
        gh3 = r(ref.mm(g("feed_forward.w3"), P[pre + "feed_forward.w3.weight"]))
        gh1 = r(ref.mm(g("feed_forward.w1"), P[pre + "feed_forward.w1.weight"]))
        add(f"{pre}dh = (res + w3) + w1", r(r(gout + gh3) + gh1), g("attention_norm"))
        _, S = ref.rms_fwd(c("attention_norm")[0].float(), P[pre + "attention_norm.weight"])
        add(f"{pre}attention_norm bwd dX", ref.rms_bwd(g("attention_norm"), P[pre + "attention_norm.weight"], S)[0],
            g("attention.w_out"))
        H, KV, D = ref.N_HEADS, ref.N_KV, ref.HEAD_DIM
        g_att = r(ref.mm(g("attention.w_out"), P[pre + "attention.w_out.weight"])).view(B, T, H, D).transpose(1, 2)
        qt, kt, vt, allowed, att, lse = attention_from(ref, c, B, T, w, sin, cos)
        gq, gk, gv = ref.flash_bwd(g_att, qt, kt, vt, att, lse, allowed, D ** -0.5)
        gk = r(gk.transpose(1, 2).reshape(B, T, KV, H // KV, D).sum(3))
        gv = r(gv.transpose(1, 2).reshape(B, T, KV, H // KV, D).sum(3)).reshape(B, T, -1)
        add(f"{pre}sdpa bwd dV", gv, g("attention.w_v"))
        add(f"{pre}sdpa+rope bwd dK", ref.rope_bwd(gk, sin, cos).reshape(B, T, -1), g("attention.k_norm"))
        add(f"{pre}sdpa+rope bwd dQ", ref.rope_bwd(gq.transpose(1, 2), sin, cos).reshape(B, T, -1), g("attention.q_norm"))
        for n in ("q", "k"):
            _, S = ref.rms_fwd(c(f"attention.w_{n}")[1].float(), P[pre + f"attention.{n}_norm.weight"])
            add(f"{pre}{n}_norm bwd dX", ref.rms_bwd(g(f"attention.{n}_norm"), P[pre + f"attention.{n}_norm.weight"], S)[0],
                g(f"attention.w_{n}"))
        parts = {"res": g("attention_norm")}
        for n in "qkv":
            parts[n] = r(ref.mm(g(f"attention.w_{n}"), P[pre + f"attention.w_{n}.weight"]))
        acc = parts["res"]
        for n in ref.X_ORDER[1:]:
            acc = r(acc + parts[n])
        add(f"{pre}dx = ((res + v) + k) + q", acc, gcap[f"blocks.{i - 1}"] if i else gcap["embeddings"])
    return rows


def ulps(a, b):
    import numpy as np
    ia = np.array([a], dtype=np.float32).view(np.int32)[0].astype(np.int64)
    ib = np.array([b], dtype=np.float32).view(np.int32)[0].astype(np.int64)
    return int(abs(ia - ib))


def compare(ours, theirs):
    import torch
    rows = []
    for n in theirs["grads"]:
        a, b = ours["grads"][n].float(), theirs["grads"][n].float()
        eq = (a.view(torch.int32) == b.view(torch.int32)).float().mean().item()
        d = (a - b).abs()
        rel = d.max().item() / max(b.abs().max().item(), 1e-30)
        rows.append({"name": n, "bit_equal": eq, "max_abs": d.max().item(), "max_rel": rel,
                     "norm_ref": a.norm().item(), "norm_olmo": b.norm().item()})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", default=DEFAULT_WEIGHTS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    import bf16_fsdp_reference as ref
    tm = build(args.threads)
    weights = load_weights(tm, args.weights)
    input_ids = batch_of(args.seed)
    cap, gcap, handles = capture(tm)
    theirs = olmo_core_step(tm, input_ids)
    for h in handles:
        h.remove()
    ops = per_op(ref, weights, cap, gcap)
    print("per op, fed with OLMo-core's own inputs (micro-batch 0): bit-equal elements")
    for name, eq in ops:
        print(f"  {name:40s} {100 * eq:8.4f}%")
    ours = ref.train_step(weights, input_ids, n_micro=2, z_loss_multiplier=1e-5)
    ce_o, z_o = theirs["ce"].item(), theirs["z"].item()
    ce_r, z_r = ours["ce"].item(), ours["z"].item()
    print(f"CE  olmo-core {ce_o:.9g}  reference {ce_r:.9g}  ulps {ulps(ce_o, ce_r)}")
    print(f"Z   olmo-core {z_o:.9g}  reference {z_r:.9g}  ulps {ulps(z_o, z_r)}")
    rows = compare(ours, theirs)
    tot_r = sum(r["norm_ref"] ** 2 for r in rows) ** 0.5
    tot_o = sum(r["norm_olmo"] ** 2 for r in rows) ** 0.5
    print(f"grad norm  olmo-core {tot_o:.9g}  reference {tot_r:.9g}")
    print(f"{'tensor':50s} {'bit-eq':>8s} {'max abs':>10s} {'rel':>10s} {'norm':>12s}")
    for r in rows:
        print(f"{r['name']:50s} {100 * r['bit_equal']:7.3f}% {r['max_abs']:10.3g} "
              f"{r['max_rel']:10.3g} {r['norm_olmo']:12.6g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ce": [ce_o, ce_r], "z": [z_o, z_r], "grad_norm": [tot_o, tot_r],
                       "rows": rows, "per_op": ops}, f, indent=1)
    from olmo_core.train import teardown_training_environment
    teardown_training_environment()


if __name__ == "__main__":
    main()

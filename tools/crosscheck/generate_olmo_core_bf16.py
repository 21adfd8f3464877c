"""Writes OLMo-core's bf16 (FSDP param_dtype bfloat16) training-step dumps that `make test` reads:

    <venv>/bin/python tools/crosscheck/generate_olmo_core_bf16.py --out tests/data/reference/olmo_core_bf16

OLMo-core's train module is built as tools/olmo_core_train.py builds it for `--precision bf16`
(FSDP on one gloo process, the model of tests/data/reference/olmo_core_run), loaded with that
fixture's step-0 weights (step0/model.safetensors), and run on seeded batches of 4 × 128 tokens
(one micro-batch; `--shape BxT` another shape of at most 512 tokens, OLMo-core's micro-batch for
that config, written as batch-<seed>-<shape>.safetensors). Each batch-<seed>.safetensors is a
reference dump (docs/formats.md) for
`replica parity --reference DUMP --grads --z-loss 1e-5 --precision bf16-fsdp`: input_ids, labels,
OLMo-core's bf16 logits (lm_head.w_out's output), its CE (`loss`), mean lse² (`z_loss`, no
multiplier), the gradients of CE + 1e-5·z-loss as FSDP leaves them (fp32 of the bf16
gradients), named as HF names them, and its RoPE table (`rope.cos`, `rope.sin`); the metadata records torch's CPU capability (its bf16
kernels differ between CPU kinds: replica's `--torch-cpu`). Plus VERSIONS.json; README.md is
written by hand.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bf16_fsdp_probe as probe  # noqa: E402
import common  # noqa: E402

SEEDS = (0, 1)
Z_LOSS = 1e-5


def step_dump(tm, input_ids):
    """OLMo-core's train_batch on one micro-batch, with the logits captured on their way out."""
    import torch
    from olmo_core.nn.hf.config import get_hf_config
    from olmo_core.nn.hf.convert import convert_state_to_hf
    got = {}
    w_out = dict(tm.model.named_modules())["lm_head.w_out"]

    def keep(module, inputs, output):  # returns None: the output stays the model's
        got.setdefault("logits", output.detach().clone())

    handle = w_out.register_forward_hook(keep)
    result = probe.olmo_core_step(tm, input_ids)
    handle.remove()
    labels = torch.cat([input_ids[:, 1:], torch.full((input_ids.shape[0], 1), -100)], dim=1)
    hf = convert_state_to_hf(get_hf_config(tm.model), result["grads"])
    t = {"input_ids": input_ids.numpy().astype(np.int64), "labels": labels.numpy().astype(np.int64),
         "logits": got["logits"].float().numpy(),
         "loss": np.array(float(result["ce"]), dtype=np.float64),
         "z_loss": np.array(float(result["z"]) / Z_LOSS, dtype=np.float64)}
    for name in sorted(hf):
        t["grad." + name] = hf[name].float().numpy()
    # OLMo-core's own RoPE table for these positions (its sin and cos are torch's), for
    # `replica parity --rope-table reference`: the first half of the head dim's columns.
    rope = tm.model.blocks["0"].attention.rope
    buffers = rope.get_buffers(input_ids.shape[1], torch.device("cpu"))
    half = buffers.pos_cos.shape[-1] // 2
    t["rope.cos"] = buffers.pos_cos[:, :half].float().contiguous().numpy()
    t["rope.sin"] = buffers.pos_sin[:, :half].float().contiguous().numpy()
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)),
                    help="comma-separated batch seeds (default: %(default)s)")
    ap.add_argument("--shape", default="4x128",
                    help="instances x tokens of the micro-batch (default: %(default)s)")
    args = ap.parse_args()
    n_inst, n_tok = (int(x) for x in args.shape.split("x"))
    os.makedirs(args.out, exist_ok=True)
    import torch
    tm = probe.build(args.threads)
    probe.load_weights(tm, probe.DEFAULT_WEIGHTS)
    for seed in (int(x) for x in args.seeds.split(",")):
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(2, 384, (n_inst, n_tok), generator=g, dtype=torch.long)
        tensors = step_dump(tm, ids)
        meta = {"format": "pt",
                "description": "OLMo-core's train module (FSDP, param_dtype bfloat16) on one "
                               f"micro-batch of {n_inst} x {n_tok} seeded tokens, step-0 weights of "
                               "tests/data/reference/olmo_core_run: its bf16 logits, CE (loss), "
                               "mean lse^2 (z_loss, no multiplier), grad.* of CE + 1e-5 z-loss",
                "z_loss_multiplier": repr(Z_LOSS),
                "seed": str(seed), "torch_threads": str(torch.get_num_threads()),
                "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()}
        stem = f"batch-{seed}" if args.shape == "4x128" else f"batch-{seed}-{args.shape}"
        path = os.path.join(args.out, f"{stem}.safetensors")
        common.write_safetensors(path, tensors, meta)
        common.log(f"wrote {path} ({os.path.getsize(path):,} bytes): CE {tensors['loss']:.9f}")
    common.write_versions(args.out, "tools/crosscheck/generate_olmo_core_bf16.py --out "
                          + os.path.relpath(args.out, common.REPO) + f" --seeds {args.seeds}"
                          + ("" if args.shape == "4x128" else f" --shape {args.shape}"))


if __name__ == "__main__":
    main()

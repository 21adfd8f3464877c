#!/usr/bin/env python3
"""Dump reference logits (and optionally gradients) from Hugging Face transformers.

Writes the reference dump that `replica parity --reference REF.safetensors` reads
(docs/formats.md, "Reference dump"):

    input_ids      I64 [B, T]     the tokens the model ran on
    logits         F32 [B, T, V]  model(input_ids).logits
    labels         I64 [B, T]     target of logits[b, t]; -100 = ignored     (not with --labels none)
    loss           F64 []         mean cross-entropy over labels != -100      (not with --labels none)
    grad.<name>    F32            d loss / d parameter, HF parameter names    (with --grads)

Labels are ALIGNED with the logits (no shift inside the consumer): with the default
`--labels shifted`, labels[b, t] = input_ids[b, t + 1] and labels[b, T - 1] = -100.

Needs torch, transformers, numpy and safetensors (`pip install torch transformers safetensors`).
Examples:

    python3 tools/hf_reference.py --model allenai/Olmo-3-1025-7B --input-ids ids.npy --out ref.safetensors
    python3 tools/hf_reference.py --model ./my-model --input-ids '[[1, 2, 3, 4]]' --out ref.safetensors --grads
    python3 tools/hf_reference.py --model ./my-model --text prompts.txt --seq-len 128 --out ref.safetensors
"""

import argparse
import json
import math
import os
import sys

import numpy as np


def fail(message):
    print(f"hf_reference: error: {message}", file=sys.stderr)
    sys.exit(2)


def load_ids_argument(value):
    """--input-ids: a .npy file, a .json file, or an inline JSON list (of lists) of token ids."""
    if value.endswith(".npy"):
        try:
            arr = np.load(value)
        except (OSError, ValueError) as e:
            fail(f"{value}: cannot read: {e}")
        if not np.issubdtype(arr.dtype, np.integer):
            fail(f"{value}: expected an integer array, got dtype {arr.dtype}")
        rows = arr.tolist()
        source = value
    else:
        if os.path.exists(value):
            with open(value, encoding="utf-8") as f:
                text, source = f.read(), value
        else:
            text, source = value, "--input-ids"
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as e:
            fail(f"{source}: not a .npy file or valid JSON: {e}")
    if isinstance(rows, list) and rows and all(isinstance(x, int) for x in rows):
        rows = [rows]  # one flat sequence = batch of one
    if (not isinstance(rows, list) or not rows
            or not all(isinstance(r, list) and r and all(isinstance(x, int) for x in r) for r in rows)):
        fail(f"{source}: expected a non-empty list of non-empty lists of integer token ids")
    if len({len(r) for r in rows}) != 1:
        fail(f"{source}: all sequences must have the same length, got {sorted({len(r) for r in rows})}")
    return rows


def tokenize_text(path, tokenizer_name, seq_len, add_special_tokens):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_name)
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if not lines:
        fail(f"{path}: no non-empty lines")
    rows = [tok(line, add_special_tokens=add_special_tokens)["input_ids"] for line in lines]
    T = seq_len or min(len(r) for r in rows)
    for i, r in enumerate(rows):
        if len(r) < T:
            fail(f"{path}: line {i + 1} has {len(r)} tokens, fewer than --seq-len {T}")
    return [r[:T] for r in rows]


def mean_ce_f64(logits, labels, chunk=1024):
    """Mean cross-entropy over labels != -100, in float64, a chunk of positions at a time."""
    import torch

    V = logits.shape[-1]
    flat_logits = logits.reshape(-1, V)
    flat_labels = labels.reshape(-1)
    total, count = 0.0, 0
    for s in range(0, flat_labels.numel(), chunk):
        lab = flat_labels[s:s + chunk]
        keep = lab != -100
        if not bool(keep.any()):
            continue
        lg = flat_logits[s:s + chunk][keep].double()
        lse = torch.logsumexp(lg, dim=-1)
        picked = lg.gather(1, lab[keep].unsqueeze(1)).squeeze(1)
        total += float((lse - picked).sum())
        count += int(keep.sum())
    return total / count if count else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="HF model directory or hub id")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--input-ids", help="token ids: .npy [B,T] file, .json file, or inline JSON list of lists")
    src.add_argument("--text", help="text file, one sequence per non-empty line (needs a tokenizer)")
    p.add_argument("--tokenizer", help="tokenizer for --text (default: --model)")
    p.add_argument("--seq-len", type=int, default=0, help="with --text: tokens per row (default: shortest line)")
    p.add_argument("--add-special-tokens", action="store_true", help="with --text: let the tokenizer add BOS/EOS")
    p.add_argument("--out", required=True, help="output .safetensors file")
    p.add_argument("--labels", choices=["shifted", "none"], default="shifted",
                   help="shifted (default): labels[b,t] = input_ids[b,t+1], last position -100; none: no labels/loss")
    p.add_argument("--grads", action="store_true", help="also write grad.<name> of the mean CE loss")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32", help="model compute dtype")
    p.add_argument("--attn-implementation", default="eager", help="transformers attention backend (default eager)")
    args = p.parse_args()

    if args.grads and args.labels == "none":
        fail("--grads needs labels (drop --labels none)")
    if args.seq_len < 0:
        fail("--seq-len must be positive")

    import torch
    import torch.nn.functional as F
    import transformers
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM

    if args.input_ids is not None:
        rows = load_ids_argument(args.input_ids)
    else:
        rows = tokenize_text(args.text, args.tokenizer or args.model, args.seq_len, args.add_special_tokens)

    dtype = torch.float32 if args.dtype == "float32" else torch.bfloat16
    model = AutoModelForCausalLM.from_pretrained(
        args.model, torch_dtype=dtype, attn_implementation=args.attn_implementation)
    model.eval()
    V = model.config.vocab_size

    input_ids = torch.tensor(rows, dtype=torch.int64)
    B, T = input_ids.shape
    bad = (input_ids < 0) | (input_ids >= V)
    if bool(bad.any()):
        fail(f"token id {int(input_ids[bad][0])} is outside the vocabulary [0, {V})")
    pad = getattr(model.config, "pad_token_id", None)
    if args.grads and pad is not None and bool((input_ids == pad).any()):
        print(f"hf_reference: warning: input_ids contain pad_token_id {pad}; transformers gives that "
              "embedding row no gradient", file=sys.stderr)

    labels = None
    if args.labels == "shifted":
        labels = torch.full_like(input_ids, -100)
        labels[:, :-1] = input_ids[:, 1:]
        if int((labels != -100).sum()) == 0:
            fail("no position has a label (T = 1): use longer sequences or --labels none")

    with torch.set_grad_enabled(args.grads):
        logits = model(input_ids=input_ids, use_cache=False).logits  # [B, T, V]
        if args.grads:
            # What is differentiated: the plain mean CE, in the model's precision, as a trainer would.
            loss_for_grad = F.cross_entropy(logits.float().reshape(-1, V), labels.reshape(-1),
                                            ignore_index=-100, reduction="mean")
            loss_for_grad.backward()

    out = {"input_ids": input_ids.contiguous(), "logits": logits.detach().float().contiguous()}
    if labels is not None:
        out["labels"] = labels.contiguous()
        loss = mean_ce_f64(out["logits"], labels)
        if not math.isfinite(loss):
            fail(f"loss is {loss}")
        out["loss"] = torch.tensor(loss, dtype=torch.float64)
    if args.grads:
        for name, param in model.named_parameters():
            if param.grad is None:
                fail(f"parameter {name} got no gradient")
            out["grad." + name] = param.grad.detach().float().contiguous()

    metadata = {
        "format": "pt",
        "description": "replica reference dump: logits of input_ids; labels aligned with logits "
                       "(-100 = ignored); loss = mean CE over labels != -100 (fp64, from the F32 logits)"
                       + ("; grad.* = d(mean CE)/d(param)" if args.grads else ""),
        "model": args.model,
        "dtype": args.dtype,
        "labels": args.labels,
        "attn_implementation": args.attn_implementation,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    tmp = args.out + ".tmp"
    save_file(out, tmp, metadata=metadata)
    os.replace(tmp, args.out)  # never leave a partial dump under the final name
    summary = {"out": args.out, "batch": B, "seq": T, "vocab": V, "tensors": len(out)}
    if "loss" in out:
        summary["loss"] = float(out["loss"])
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

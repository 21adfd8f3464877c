"""transformers' own Olmo 3 on a model directory: logits, loss and gradients as the reference
computes them, their distance to another result, and the reference-dump file replica parity reads.

Used by check_transformers.py, generate_transformers.py and check_hf_roundtrip.py.
"""
import json
import os
import shutil

import numpy as np

import common

# The parity cases: (name, directory relative to the repository root).
CASES = [("tiny-mha", "tests/data/olmo3/tiny-mha"),
         ("tiny-gqa", "tests/data/olmo3/tiny-gqa"),
         ("tiny-yarn", "tests/data/olmo3/tiny-yarn"),
         ("bytes-mqa-2048", "tests/data/long/bytes-mqa-2048")]

GRAD_FLOOR = 1e-3  # replica parity's --grad-floor default (docs/design.md section 5)


def torch_threads():
    import torch
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def sliding_theta_read(model_dir):
    """The RoPE theta transformers' Olmo3Config gives the sliding-attention layers of a config."""
    from transformers import AutoConfig
    cfg = AutoConfig.from_pretrained(model_dir)
    return float(cfg.rope_parameters["sliding_attention"]["rope_theta"])


def per_layer_type_config(config):
    """The same model's config.json with RoPE in the per-layer-type `rope_parameters` spelling:
    full-attention layers take `rope_scaling` (or plain RoPE), sliding layers plain RoPE, both with
    the config's theta. A config already in a `rope_parameters` spelling is returned unchanged."""
    cfg = dict(config)
    if "rope_parameters" in cfg and cfg["rope_parameters"] is not None:
        return cfg
    theta = cfg.pop("rope_theta")
    scaling = cfg.pop("rope_scaling", None) or {"rope_type": "default"}
    full = dict(scaling)
    if "type" in full and "rope_type" not in full:
        full["rope_type"] = full.pop("type")
    full["rope_theta"] = theta
    cfg["rope_parameters"] = {"full_attention": full,
                              "sliding_attention": {"rope_type": "default", "rope_theta": theta}}
    return cfg


def unambiguous_copy(model_dir, out_dir):
    """A directory transformers reads as the model `model_dir` describes: config.json in the
    per-layer-type RoPE spelling (transformers 5.x reads a legacy top-level `rope_theta` only for
    the full-attention layers and gives sliding layers its default 500000), weights linked."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(per_layer_type_config(cfg), f, indent=2)
    for name in os.listdir(model_dir):
        if name.endswith(".safetensors") or name.endswith(".index.json"):
            dst = os.path.join(out_dir, name)
            if os.path.lexists(dst):
                os.remove(dst)
            os.symlink(os.path.abspath(os.path.join(model_dir, name)), dst)
    return out_dir


def load(model_dir, dtype="float32"):
    import torch
    from transformers import Olmo3ForCausalLM
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    model = Olmo3ForCausalLM.from_pretrained(model_dir, torch_dtype=torch_dtype,
                                             attn_implementation="eager")
    model.eval()
    return model


def mean_ce64(logits, labels):
    """Mean cross-entropy over labels != -100 in float64 from the given (F32) logits."""
    lp = common.log_softmax64(logits).reshape(-1, logits.shape[-1])
    lab = np.asarray(labels).reshape(-1)
    keep = lab != -100
    return float(-lp[keep, lab[keep]].mean())


def run(model, input_ids, labels, grads=False, autocast=False):
    """model(input_ids).logits as float32 numpy; with grads, d(mean CE)/d(param) of
    torch.nn.functional.cross_entropy on the float32 logits, for every named parameter."""
    import torch
    import torch.nn.functional as F
    ids = torch.from_numpy(np.asarray(input_ids, dtype=np.int64))
    lab = torch.from_numpy(np.asarray(labels, dtype=np.int64))
    model.zero_grad(set_to_none=True)
    with torch.set_grad_enabled(grads), torch.autocast("cpu", dtype=torch.bfloat16,
                                                       enabled=autocast):
        logits = model(input_ids=ids, use_cache=False).logits
    out = {"logits": logits.detach().float().numpy()}
    if grads:
        V = logits.shape[-1]
        loss = F.cross_entropy(logits.float().reshape(-1, V), lab.reshape(-1), ignore_index=-100)
        loss.backward()
        out["grads"] = {n: p.grad.detach().float().numpy() for n, p in model.named_parameters()}
    out["loss"] = mean_ce64(out["logits"], labels)
    return out


def grad_errors(grads, ref_grads, floor=GRAD_FLOOR):
    """replica parity's gradient figures of `grads` against `ref_grads` (docs/design.md section 5):
    max over parameters of ||g - g_ref|| / max(||g_ref||, floor * ||G_ref||), and
    ||G - G_ref|| / ||G_ref|| over the whole gradient."""
    names = list(ref_grads)
    ref_norm2 = {n: float(np.sum(np.asarray(ref_grads[n], np.float64) ** 2)) for n in names}
    diff_norm2 = {n: float(np.sum((np.asarray(grads[n], np.float64)
                                   - np.asarray(ref_grads[n], np.float64)) ** 2)) for n in names}
    total = sum(ref_norm2.values()) ** 0.5
    worst, worst_name = 0.0, None
    for n in names:
        e = diff_norm2[n] ** 0.5 / max(ref_norm2[n] ** 0.5, floor * total)
        if e > worst:
            worst, worst_name = e, n
    return {"grad_max_rel_err": worst, "grad_worst_tensor": worst_name,
            "grad_global_rel_err": sum(diff_norm2.values()) ** 0.5 / total}


def distances(result, truth):
    """KL mean/max, top-1, max |d logit|, |d loss| and (when both have them) the gradient figures
    of a result against the truth dictionary (io.safetensors contents)."""
    d = common.kl_stats(truth["logits"], result["logits"])
    d["max_abs_logit_diff"] = float(np.max(np.abs(result["logits"].astype(np.float64)
                                                  - truth["logits"].astype(np.float64))))
    d["loss_abs_diff"] = abs(result["loss"] - float(truth["loss"]))
    truth_grads = {k[5:]: v for k, v in truth.items() if k.startswith("grad.")}
    if truth_grads and "grads" in result:
        d.update(grad_errors(result["grads"], truth_grads))
    return d


def write_dump(path, input_ids, labels, result, model_dir, dtype, with_grads=True):
    """The reference dump (docs/formats.md): input_ids, logits, labels, loss [, grad.*]."""
    import torch
    import transformers
    tensors = {"input_ids": np.asarray(input_ids, dtype=np.int64),
               "logits": np.ascontiguousarray(result["logits"], dtype=np.float32),
               "labels": np.asarray(labels, dtype=np.int64),
               "loss": np.array(result["loss"], dtype=np.float64)}
    if with_grads and "grads" in result:
        for n, g in result["grads"].items():
            tensors["grad." + n] = np.ascontiguousarray(g, dtype=np.float32)
    meta = {"format": "pt", "model": model_dir, "dtype": dtype, "attn_implementation": "eager",
            "transformers_version": transformers.__version__, "torch_version": torch.__version__,
            "description": "transformers Olmo3ForCausalLM logits of input_ids; labels aligned "
                           "with logits (-100 = ignored); loss = mean CE (fp64, from the F32 "
                           "logits)" + ("; grad.* = d(mean CE)/d(param)"
                                        if with_grads and "grads" in result else "")}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    common.write_safetensors(path, tensors, meta)


def fresh_dir(path):
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    return path

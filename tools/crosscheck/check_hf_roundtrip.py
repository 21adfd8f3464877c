#!/usr/bin/env python3
"""Hugging Face round trip: what `replica convert` exports loads in transformers with replica's
logits, loss and gradients; greedy generation agrees; what transformers' `save_pretrained` writes
loads in replica with transformers' logits.

    <venv>/bin/python tools/crosscheck/check_hf_roundtrip.py --replica BUILD/replica --work DIR

Models: the demo model (configs/demo.yaml, dolma2 vocabulary, trained a few steps here: exports
carry tokenizer files and generation_config.json), the trained byte-level fixture
tests/data/long/bytes-mqa-2048 (rope_theta 10000). Each
directory is compared against transformers run on it in float64 (`torch_dtype=torch.float64`):
replica and transformers fp32 each have a distance to that, and their mutual distance is held to
what the two allow (bounds.between). Rows: docs/crosscheck.md, "HF round trip".
"""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bounds  # noqa: E402
import common  # noqa: E402
import hf_run  # noqa: E402

AREA = "hf_roundtrip"
BYTES = os.path.join(common.REPO, "tests", "data", "long", "bytes-mqa-2048")
DEMO_TEXT = ("In this address the President spoke about the economy, the budget and the "
             "strength of the Union, and asked the Congress to act on jobs and schools.")
PROMPTS = ["The state of the Union is", "Call me Ishmael. Some years ago"]
NEW_TOKENS = 24
# Greedy ids are compared up to the first step whose top-2 logit gap is below this many times the
# largest |d logit| measured between the two on the same directory (an argmax can only flip when
# the gap is below twice the difference of the logits; the factor covers the KV-cache path's
# different summation order).
GAP_FACTOR = 10.0
# The project's fp32 parity bars (docs/precision.md, replica parity --max-grad-rel's default).
FP32_KL_BAR = 1e-8
FP32_GRAD_BAR = 1e-4


def g(x):
    return f"{x:.3g}"


def replica_json(replica, *args):
    return common.run_replica(replica, *args, check=False)


def shifted_labels(ids):
    lab = np.full_like(ids, -100)
    lab[:, :-1] = ids[:, 1:]
    return lab


def load_as(model_dir, dtype):
    import torch
    from transformers import Olmo3ForCausalLM
    m = Olmo3ForCausalLM.from_pretrained(model_dir, torch_dtype=dtype,
                                         attn_implementation="eager")
    m.eval()
    return m


def compare_dir(replica, work, case, model_dir, ids, grads=True):
    """transformers fp32 and float64 on `model_dir` against replica parity on it. Returns the
    largest |d logit| between replica and transformers fp32 (for the greedy comparison)."""
    import torch
    labels = shifted_labels(ids)
    try:
        tx32 = hf_run.run(load_as(model_dir, torch.float32), ids, labels, grads=grads)
        m64 = load_as(model_dir, torch.float64)
        tx64 = hf_run.run(m64, ids, labels, grads=grads)
        common.emit(AREA, case, "transformers from_pretrained loads it", "loaded", "loads", True)
    except Exception as e:  # noqa: BLE001 - the row names what failed
        common.emit(AREA, case, "transformers from_pretrained loads it", type(e).__name__ + ": "
                    + str(e)[:200], "loads", False)
        return None
    d32 = os.path.join(work, f"{case}.tx32.safetensors")
    d64 = os.path.join(work, f"{case}.tx64.safetensors")
    hf_run.write_dump(d32, ids, labels, tx32, model_dir, "float32", with_grads=grads)
    hf_run.write_dump(d64, ids, labels, tx64, model_dir, "float64", with_grads=grads)
    flags = ["--max-kl", "1e9", "--min-top1", "0", "--max-grad-rel", "1e9"]
    flags += ["--grads"] if grads else []
    try:
        direct = replica_json(replica, "parity", "--model", model_dir, "--reference", d32, *flags)
        r64 = replica_json(replica, "parity", "--model", model_dir, "--reference", d64, *flags)
    except RuntimeError as e:
        common.emit(AREA, case, "replica loads it", str(e).splitlines()[-1][:200], "loads", False)
        return None
    common.emit(AREA, case, "replica loads it", "loaded", "loads", True)
    truth = {"logits": np.asarray(tx64["logits"], dtype=np.float32), "loss": tx64["loss"]}
    if grads:
        truth.update({"grad." + n: v for n, v in tx64["grads"].items()})
    t = hf_run.distances(tx32, truth)
    # The same model read: the project's fp32 parity bars (a misread setting moves KL by 1e-5 or
    # more, docs/crosscheck.md), then the two results as close as their distances allow.
    common.emit(AREA, case, "kl_max: replica vs transformers fp32 (the fp32 parity bar)",
                direct["kl_max"], f"<= {g(FP32_KL_BAR)}", direct["kl_max"] <= FP32_KL_BAR)
    if grads:
        common.emit(AREA, case, "grad_max_rel_err: replica vs transformers fp32 (the fp32 "
                    "parity bar)", direct["grad_max_rel_err"], f"<= {g(FP32_GRAD_BAR)}",
                    direct["grad_max_rel_err"] <= FP32_GRAD_BAR)
    for m in ("kl_mean", "kl_max", "max_abs_logit_diff"):
        lim = bounds.between(m, r64[m], t[m])
        common.emit(AREA, case, f"{m}: replica vs transformers fp32", direct[m],
                    f"<= {g(lim)} (their distances to transformers float64 combined)",
                    direct[m] <= lim)
    common.emit(AREA, case, "top-1: replica vs transformers fp32", direct["top1_agreement"],
                ">= top-1 of each against float64, less the positions both miss",
                direct["top1_agreement"] >= r64["top1_agreement"] + t["top1"] - 1.0)
    dl = abs(direct["loss"] - direct["loss_ref"])
    lim = abs(r64["loss"] - r64["loss_ref"]) + t["loss_abs_diff"] + 4e-16 * abs(tx64["loss"])
    common.emit(AREA, case, "|loss - loss_ref|: replica vs transformers fp32", dl,
                f"<= {g(lim)} (their distances to float64 added)", dl <= lim)
    if grads:
        for m in ("grad_max_rel_err", "grad_global_rel_err"):
            lim = bounds.between(m, r64[m], t[m])
            common.emit(AREA, case, f"{m}: replica vs transformers fp32", direct[m],
                        f"<= {g(lim)} (their distances to float64 combined)", direct[m] <= lim)
    return direct["max_abs_logit_diff"]


def greedy(replica, case, model_dir, prompts, tokenizer, encode, max_diff):
    """replica generate (greedy) against transformers' generate on the same prompt ids."""
    import torch
    from transformers import GenerationConfig
    model = load_as(model_dir, torch.float32)
    gap_min = GAP_FACTOR * max_diff
    for k, prompt in enumerate(prompts):
        out = replica_json(replica, "generate", "--model", model_dir, "--prompt", prompt,
                           "--tokenizer", tokenizer, "--max-new-tokens", NEW_TOKENS,
                           "--ignore-eos")
        if isinstance(out, list):
            out = out[0]
        rep_ids = list(out["completion_ids"])
        ids = torch.tensor([encode(prompt)], dtype=torch.int64)
        cfg = GenerationConfig(do_sample=False, max_new_tokens=NEW_TOKENS, min_new_tokens=0,
                               eos_token_id=None, pad_token_id=model.config.pad_token_id,
                               return_dict_in_generate=True, output_logits=True, use_cache=True)
        gen = model.generate(ids, generation_config=cfg)
        tx_ids = gen.sequences[0, ids.shape[1]:].tolist()
        # Compare up to the first step whose decision is within noise.
        n = len(tx_ids)
        for step, lg in enumerate(gen.logits):
            top2 = torch.topk(lg[0].double(), 2).values
            if float(top2[0] - top2[1]) < gap_min:
                n = step
                break
        same = rep_ids[:n] == tx_ids[:n] and len(rep_ids) >= n
        common.emit(AREA, case, f"greedy ids, prompt {k}: replica generate vs transformers "
                    "generate", f"identical ({n} of {len(tx_ids)} tokens)" if same else
                    f"differ: replica {rep_ids[:n]} vs transformers {tx_ids[:n]}",
                    f"identical up to the first top-2 gap < {g(gap_min)}", same and n > 0)


def train_demo(replica, work):
    """The demo model (configs/demo.yaml's model), trained 3 steps on the bundled addresses."""
    data = os.path.join(work, "demo-data")
    run = os.path.join(work, "demo-run")
    for d in (data, run):
        if os.path.exists(d):
            shutil.rmtree(d)
    common.run_replica(replica, "tokenize", "--tokenizer", "dolma2",
                       os.path.join(common.REPO, "data", "corpus", "moby_dick.jsonl.zst"),
                       "--out", data, json_output=False)
    common.run_replica(replica, "train", os.path.join(common.REPO, "configs", "demo.yaml"),
                       "--run-dir", run, "--set", f"data.paths={data}/moby_dick.npy",
                       "--set", "train.max_steps=3", "--set", "data.seq_len=32",
                       "--set", "train.global_batch_instances=2",
                       "--set", "train.micro_batch_instances=2", "--set", "eval.sets=[]",
                       "--set", "eval.leak_guard=off", "--set", "checkpoint.interval=3",
                       "--set", "optim.schedule.warmup=1", json_output=False)
    return run


def export(replica, src, dst, *flags):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    return common.run_replica(replica, "convert", "--from", src, "--to", dst, *flags)


def exports_of(replica, work, name, ckpt_source, shard_bytes,
               tags=("f32", "bf16", "bf16-sharded")):
    """fp32, bf16 and sharded bf16 exports of one model."""
    out = {}
    for tag, flags in (("f32", []), ("bf16", ["--dtype", "bf16"]),
                       ("bf16-sharded", ["--dtype", "bf16", "--max-shard-size",
                                         str(shard_bytes)])):
        if tag not in tags:
            continue
        d = os.path.join(work, f"{name}-{tag}")
        export(replica, ckpt_source, d, *flags)
        out[tag] = d
    return out


def shard_count(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(idx):
        return 1
    with open(idx, encoding="utf-8") as f:
        return len(set(json.load(f)["weight_map"].values()))


def demo_checks(replica, work):
    from transformers import AutoTokenizer, GenerationConfig
    run = train_demo(replica, work)
    dirs = exports_of(replica, work, "demo", run, 20_000_000, ("f32", "bf16-sharded"))
    tok = AutoTokenizer.from_pretrained(dirs["f32"])
    gen_cfg = GenerationConfig.from_pretrained(dirs["f32"])
    with open(os.path.join(dirs["f32"], "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    common.emit(AREA, "demo", "generation_config.json: eos/pad ids as config.json",
                f"eos {gen_cfg.eos_token_id}, pad {gen_cfg.pad_token_id}",
                f"eos {cfg['eos_token_id']}, pad {cfg['pad_token_id']}",
                gen_cfg.eos_token_id == cfg["eos_token_id"]
                and gen_cfg.pad_token_id == cfg["pad_token_id"])
    # The exported tokenizer files: AutoTokenizer's ids equal replica's dolma2 ids.
    lines = os.path.join(work, "demo-text.jsonl")
    with open(lines, "w", encoding="utf-8") as f:
        for text in [DEMO_TEXT] + PROMPTS:
            f.write(json.dumps({"text": text}) + "\n")
    rep = common.run_replica(replica, "tokenizer", "encode", "--tokenizer", "dolma2",
                             "--jsonl", lines, json_output=False)
    rep_ids = [json.loads(line)["ids"] for line in rep.splitlines() if line.strip()]
    hf_ids = [tok(t, add_special_tokens=False)["input_ids"] for t in [DEMO_TEXT] + PROMPTS]
    common.emit(AREA, "demo", "exported tokenizer files: AutoTokenizer ids vs replica's",
                "identical" if rep_ids == hf_ids else "differ", "identical", rep_ids == hf_ids)
    ids = np.asarray([hf_ids[0]], dtype=np.int64)
    legacy_theta_row(dirs["f32"], "demo-f32-export")
    for tag, d in dirs.items():
        case = f"demo {tag} export ({shard_count(d)} shard{'s' if shard_count(d) > 1 else ''})"
        diff = compare_dir(replica, work, case.split(" (")[0].replace(" ", "-"), d, ids,
                           grads=tag == "f32")
        if tag == "f32" and diff is not None:
            greedy(replica, "demo f32 export", d, PROMPTS, "dolma2",
                   lambda s: tok(s, add_special_tokens=False)["input_ids"], diff)


def byte_checks(replica, work):
    ckpt = os.path.join(work, "bytes-ckpt")
    export(replica, BYTES, ckpt)  # HF -> checkpoint
    dirs = exports_of(replica, work, "bytes", ckpt, 2_000_000)
    truth = common.read_safetensors(os.path.join(BYTES, "io.safetensors"))
    ids = np.asarray(truth["input_ids"][:, :128], dtype=np.int64)
    legacy_theta_row(dirs["f32"], "bytes-f32-export")
    for tag, d in dirs.items():
        diff = compare_dir(replica, work, f"bytes-{tag}-export", d, ids, grads=tag == "f32")
        if tag == "f32" and diff is not None:
            greedy(replica, "bytes f32 export", d, ["The state of the Union is strong, and ",
                                                    "We the people "],
                   "bytes", lambda s: list(s.encode("utf-8")), diff)
    return ids


def legacy_theta_row(export_dir, case):
    """What transformers reads for the sliding layers' RoPE theta from replica's config.json."""
    with open(os.path.join(export_dir, "config.json"), encoding="utf-8") as f:
        written = json.load(f)
    theta = written.get("rope_theta")
    if theta is None:
        return
    read = hf_run.sliding_theta_read(export_dir)
    common.emit(AREA, case, "sliding-layer rope_theta transformers reads from replica's "
                "config.json", read, f"= {theta:g} (what replica wrote)", read == theta)


def save_pretrained_checks(replica, work, ids):
    """Directories transformers writes load in replica with transformers' logits."""
    import torch
    src = hf_run.unambiguous_copy(BYTES, os.path.join(work, "bytes-hf"))
    for tag, dtype, shard in (("f32", torch.float32, None), ("bf16", torch.bfloat16, None),
                              ("f32-sharded", torch.float32, "2MB")):
        d = os.path.join(work, f"saved-{tag}")
        if os.path.exists(d):
            shutil.rmtree(d)
        kw = {"max_shard_size": shard} if shard else {}
        load_as(src, dtype).save_pretrained(d, **kw)
        n = shard_count(d)
        common.log(f"check_hf_roundtrip: save_pretrained {tag}: {n} shard(s), "
                   f"{sorted(os.listdir(d))}")
        compare_dir(replica, work, f"save_pretrained-{tag}", d, ids, grads=tag == "f32")
        if shard:
            common.emit(AREA, f"save_pretrained-{tag}", "shards written", n, "> 1", n > 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--regen-only", action="store_true", help="no committed data: does nothing")
    args = ap.parse_args()
    if args.regen_only:
        return
    hf_run.torch_threads()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    replica = os.path.abspath(args.replica)
    t0 = time.time()
    ids = byte_checks(replica, work)
    common.log(f"check_hf_roundtrip: exports of the byte model in {time.time() - t0:.1f} s")
    t0 = time.time()
    save_pretrained_checks(replica, work, ids)
    common.log(f"check_hf_roundtrip: save_pretrained directories in {time.time() - t0:.1f} s")
    t0 = time.time()
    demo_checks(replica, work)
    common.log(f"check_hf_roundtrip: the demo model in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

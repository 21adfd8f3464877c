#!/usr/bin/python3
"""Writes a random-weight Hugging Face directory of the exact Olmo-3-1025-7B shape and config.

    /usr/bin/python3 tools/make_random_olmo3_7b.py OUT_DIR [--rope-scaling yarn|none] [--seed S]
                                                   [--layers N]

What it writes (about 14.6 GB; not run in CI):
  config.json                         Olmo3Config of the release: d 4096, 32 layers, 32 heads, MLP
                                      11008, vocab 100352, window 4096, theta 500000, layer types
                                      S S S F x 8; rope_scaling YaRN (factor 8, original context 8192,
                                      beta_fast 32, beta_slow 1, attention factor 1.2079441541679836,
                                      max_position_embeddings 65536) unless --rope-scaling none
                                      (then max_position_embeddings 8192).
  model-0000k-of-0000N.safetensors    BF16 tensors in transformers' state-dict order, packed into
                                      shards greedily at transformers' default 5 GB per shard, as
                                      save_pretrained does (3 shards for this model)
  model.safetensors.index.json        {"metadata": {"total_size"}, "weight_map"}
  generation_config.json

--layers N keeps the first N layers of that model (their release layer types; every other width
the 7B's): a 7B-shaped model whose per-layer memory and time are the release's, small enough to
run at long context (one layer: about 2 GB of weights).

Matrices are N(0, 0.02^2) rounded to bf16 (drawn once into a pool of 2^24 values that each tensor
reads from a random offset, so writing is disk-bound); RMSNorm weights are 1. numpy only.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

D, I, L, H, V = 4096, 11008, 32, 32, 100352
HD = D // H
MAX_SHARD = 5_000_000_000


def tensor_list(layers):
    t = [("model.embed_tokens.weight", [V, D], "normal")]
    for l in range(layers):
        p = f"model.layers.{l}."
        t += [(p + "self_attn.q_proj.weight", [H * HD, D], "normal"),
              (p + "self_attn.k_proj.weight", [H * HD, D], "normal"),
              (p + "self_attn.v_proj.weight", [H * HD, D], "normal"),
              (p + "self_attn.o_proj.weight", [D, H * HD], "normal"),
              (p + "self_attn.q_norm.weight", [H * HD], "ones"),
              (p + "self_attn.k_norm.weight", [H * HD], "ones"),
              (p + "mlp.gate_proj.weight", [I, D], "normal"),
              (p + "mlp.up_proj.weight", [I, D], "normal"),
              (p + "mlp.down_proj.weight", [D, I], "normal"),
              (p + "post_attention_layernorm.weight", [D], "ones"),
              (p + "post_feedforward_layernorm.weight", [D], "ones")]
    t += [("model.norm.weight", [D], "ones"), ("lm_head.weight", [V, D], "normal")]
    return t


def config(rope_scaling, layers):
    c = {
        "architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "vocab_size": V,
        "hidden_size": D, "intermediate_size": I, "num_hidden_layers": layers,
        "num_attention_heads": H, "num_key_value_heads": H, "hidden_act": "silu",
        "max_position_embeddings": 65536, "initializer_range": 0.02, "pad_token_id": 100277,
        "bos_token_id": None, "eos_token_id": 100257, "tie_word_embeddings": False,
        "rope_theta": 500000.0, "attention_bias": False, "attention_dropout": 0.0,
        "rms_norm_eps": 1e-06, "sliding_window": 4096,
        "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
                        for i in range(layers)],
        "torch_dtype": "bfloat16", "use_cache": True,
        "rope_scaling": {"rope_type": "yarn", "factor": 8.0,
                         "original_max_position_embeddings": 8192, "beta_fast": 32.0,
                         "beta_slow": 1.0, "attention_factor": 1.2079441541679836},
    }
    if rope_scaling == "none":
        c["rope_scaling"] = None
        c["max_position_embeddings"] = 8192
    return c


def to_bf16(x):
    u = x.astype(np.float32).view(np.uint32)
    u = u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))
    return (u >> np.uint32(16)).astype(np.uint16)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--rope-scaling", choices=["yarn", "none"], default="yarn")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=L, help=f"layers to keep (1..{L}; default {L})")
    a = ap.parse_args()
    if not 1 <= a.layers <= L:
        ap.error(f"--layers must be in 1..{L}, got {a.layers}")
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    pool = to_bf16(rng.normal(0.0, 0.02, size=1 << 24))
    one = np.uint16(0x3F80)

    shards, cur, cur_bytes = [], [], 0
    for name, shape, kind in tensor_list(a.layers):
        nbytes = int(np.prod(shape)) * 2
        if cur and cur_bytes + nbytes > MAX_SHARD:
            shards.append(cur)
            cur, cur_bytes = [], 0
        cur.append((name, shape, kind))
        cur_bytes += nbytes
    shards.append(cur)
    n = len(shards)
    weight_map, total = {}, 0
    for k, shard in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{n:05d}.safetensors"
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for name, shape, _ in shard:
            nb = int(np.prod(shape)) * 2
            header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + nb]}
            off += nb
            weight_map[name] = fname
        total += off
        hj = json.dumps(header, separators=(",", ":")).encode()
        hj += b" " * ((8 - len(hj) % 8) % 8)
        tmp = os.path.join(a.out, fname + ".tmp")
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(hj)))
            f.write(hj)
            for name, shape, kind in shard:
                count = int(np.prod(shape))
                if kind == "ones":
                    np.full(count, one, dtype=np.uint16).tofile(f)
                    continue
                done = 0
                while done < count:
                    start = int(rng.integers(0, pool.size))
                    m = min(count - done, pool.size - start)
                    pool[start:start + m].tofile(f)
                    done += m
        os.replace(tmp, os.path.join(a.out, fname))
        print(f"wrote {fname} ({off / 1e9:.2f} GB)", file=sys.stderr)
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config(a.rope_scaling, a.layers), f, indent=2)
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump({"_from_model_config": True, "eos_token_id": 100257, "pad_token_id": 100277},
                  f, indent=2)
    print(f"{a.out}: {n} shards, {total} bytes of BF16 weights", file=sys.stderr)


if __name__ == "__main__":
    main()

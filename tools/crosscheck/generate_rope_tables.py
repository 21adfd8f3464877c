"""Writes OLMo-core's RoPE tables that `make test` compares bf16-fsdp's tables with:

    <venv>/bin/python tools/crosscheck/generate_rope_tables.py --out tests/data/reference/rope_tables

For each case of CASES, OLMo-core's own RotaryEmbedding (plain RoPE, or YaRNRoPEScalingConfig)
builds its sin/cos buffers for `positions` positions on the CPU (_get_rotary_embedding, fp32), and
its inverse frequencies (compute_inv_freqs / compute_scaled_inv_freq). Written per case, float32
little-endian: <name>.inv [head_dim/2], <name>.cos and <name>.sin [positions, head_dim/2] (the
first half of each row: the second repeats it). cases.json lists the cases with the attention
factor OLMo-core multiplies the tables by. Plus VERSIONS.json; README.md is written by hand.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

# name, theta, head_dim, positions, YaRN (factor, beta_fast, beta_slow, old_context_len) or None
CASES = (
    ("plain-7b", 500000, 128, 512, None),
    ("plain-small", 10000, 64, 512, None),
    ("yarn-7b", 500000, 128, 512, (8.0, 32, 1, 8192)),
    ("yarn-small", 10000, 16, 512, (4.0, 32, 1, 64)),
    ("yarn-narrow", 10000, 32, 512, (2.0, 8, 2, 16)),
)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import torch
    from olmo_core.nn.rope import RotaryEmbedding, YaRNRoPEScalingConfig, compute_inv_freqs
    torch.set_num_threads(1)
    cpu = torch.device("cpu")
    os.makedirs(args.out, exist_ok=True)
    cases = []
    for name, theta, hd, positions, yarn in CASES:
        scaling = None
        if yarn is not None:
            factor, beta_fast, beta_slow, old = yarn
            scaling = YaRNRoPEScalingConfig(factor=factor, beta_fast=beta_fast,
                                            beta_slow=beta_slow, old_context_len=old)
        rope = RotaryEmbedding(head_size=hd, theta=theta, scaling=scaling)
        pos_sin, pos_cos = rope._get_rotary_embedding(positions, cpu)
        if scaling is None:
            inv, attention_factor = compute_inv_freqs(theta, hd, cpu), 1.0
        else:
            inv, attention_factor = scaling.compute_scaled_inv_freq(theta, hd, cpu)
        half = hd // 2
        inv.numpy().astype("<f4").tofile(os.path.join(args.out, name + ".inv"))
        pos_cos[:, :half].contiguous().numpy().astype("<f4").tofile(
            os.path.join(args.out, name + ".cos"))
        pos_sin[:, :half].contiguous().numpy().astype("<f4").tofile(
            os.path.join(args.out, name + ".sin"))
        case = {"name": name, "theta": theta, "head_dim": hd, "positions": positions,
                "attention_factor": attention_factor}
        if yarn is not None:
            case.update(factor=yarn[0], beta_fast=yarn[1], beta_slow=yarn[2],
                        original_max_position_embeddings=yarn[3])
        cases.append(case)
        common.log(f"{name}: {positions} positions, head_dim {hd}")
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    common.write_versions(args.out, "tools/crosscheck/generate_rope_tables.py --out " + args.out)


if __name__ == "__main__":
    main()

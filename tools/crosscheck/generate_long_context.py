#!/usr/bin/env python3
"""Writes a tiny long-context config.json with OLMo-core's own classes (the reference venv).

    generate_long_context.py --tokens DIR --out tests/data/reference/long_context

The run is olmo_core_train.py's small Olmo 3 (TransformerConfig.olmo3_14M shrunk: d_model 128,
4 layers, windows 32/32/32/full, the same trainer, optimizer and schedule) changed the way
OLMo-Core's official long-context script changes the midtrained 7B:
  - `with_rope_scaling(YaRNRoPEScalingConfig(factor=8, old_context_len=64))` on the
    full-attention layers only;
  - `NumpyPackedFSLDatasetConfig` over the token files (sequence length 512, `generate_doc_lengths:
    true`, `long_doc_strategy: truncate`, `source_group_size: 8`, `source_permutation_seed: 123`);
  - a rank micro-batch of one instance, a global batch of 4;
  - `dp_config` FSDP with `param_dtype: bfloat16`, context parallelism of degree 2
    (`TransformerContextParallelConfig.llama3(2, head_stride=1)`), and the stage's float8 setting.
The file is `ExperimentConfig.as_config_dict()` as ConfigSaverCallback writes it; the token files'
directory is recorded in DIR/paths.txt ("tokens<TAB>DIR") so that a test can map it with
--path-map. Nothing is trained: OLMo-core's CPU attention backend refuses intra-document masking
and float8 needs torchao, so OLMo-core only writes the config here.
"""
import argparse
import json
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import olmo_core_train  # noqa: E402

SEQ_LEN = 512
OLD_CONTEXT = 64
GLOBAL_BATCH_INSTANCES = 4


def build(tokens, tokenizer):
    from olmo_core.config import DType
    from olmo_core.data import LongDocStrategy, NumpyPackedFSLDatasetConfig
    from olmo_core.distributed.parallel import DataParallelType
    from olmo_core.float8 import AOFloat8LinearConfig, Float8Config
    from olmo_core.nn.rope import YaRNRoPEScalingConfig
    from olmo_core.train.train_module import (TransformerContextParallelConfig,
                                              TransformerDataParallelConfig,
                                              TransformerDataParallelWrappingStrategy)

    args = types.SimpleNamespace(data_dir=tokens, out=os.path.join(tokens, "unused"),
                                 precision="bf16", threads=1, steps=20, save_interval=10,
                                 resume_from=None, micro_batch_instances=1, vocab_size=384,
                                 eos_id=0, pad_id=1, float8=False, tokenizer=tokenizer)
    config = olmo_core_train.build_config(args)
    config.model = config.model.with_rope_scaling(
        YaRNRoPEScalingConfig(factor=8, old_context_len=OLD_CONTEXT), full_attn_layers_only=True)
    old = config.dataset
    config.dataset = NumpyPackedFSLDatasetConfig(
        paths=old.paths, tokenizer=old.tokenizer, sequence_length=SEQ_LEN,
        generate_doc_lengths=True, long_doc_strategy=LongDocStrategy.truncate,
        source_group_size=8, source_permutation_seed=123, work_dir=old.work_dir)
    config.data_loader.global_batch_size = GLOBAL_BATCH_INSTANCES * SEQ_LEN
    tm = config.train_module
    tm.rank_microbatch_size = SEQ_LEN
    tm.max_sequence_length = SEQ_LEN
    tm.dp_config = TransformerDataParallelConfig(
        name=DataParallelType.fsdp, param_dtype=DType.bfloat16, reduce_dtype=DType.float32,
        wrapping_strategy=TransformerDataParallelWrappingStrategy.blocks)
    tm.cp_config = TransformerContextParallelConfig.llama3(2, head_stride=1)
    tm.float8_config = Float8Config(ao=AOFloat8LinearConfig(enable_fsdp_float8_all_gather=True,
                                                            round_scales_to_power_of_2=True),
                                    enabled=True)
    return config


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", required=True, help="directory of token files (*.npy)")
    ap.add_argument("--tokenizer", help="the tokenizer.json the token files were made with")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    tokens = os.path.abspath(a.tokens)
    config = build(tokens, a.tokenizer)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config.as_config_dict(), f, indent=2)
        f.write("\n")
    with open(os.path.join(a.out, "paths.txt"), "w", encoding="utf-8") as f:
        f.write(f"tokens\t{tokens}\n")
    print(f"wrote {a.out}/config.json")


if __name__ == "__main__":
    main()

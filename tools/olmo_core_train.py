#!/usr/bin/env python3
"""Trains a small Olmo 3 with OLMo-core's own trainer on the CPU (the reference venv's python).

    olmo_core_train.py --data-dir TOKENS --out DIR [--precision fp32|bf16] [--threads N]
                       [--steps 60] [--save-interval 30] [--resume-from DIR/ckpt/stepN]
                       [--tokenizer TOKENIZER_JSON]

The run is built as OLMo-core's official Olmo 3 scripts build theirs (src/scripts/official/OLMo3/,
script_utils.main): `TransformerConfig.olmo3_14M` shrunk by its own arguments (d_model 128, 4 layers,
8 heads with 2 KV heads, QK-norm, FFN 128, windows
32/32/32/full), `NumpyFSLDatasetConfig` over the token files of
TOKENS (*.npy, sorted by name), `NumpyDataLoaderConfig`, `TransformerTrainModuleConfig` with
`SkipStepAdamWConfig` (embeddings without weight decay), `CosWithWarmup`, z-loss 1e-5, max grad
norm 1.0, and a `TrainerConfig` with the checkpointer (steps 0, 30, 60) and the config saver.
Global batch 8 instances of 128 tokens, rank micro-batch 4 instances: 2 micro-batches a step.

`--precision bf16` sets `dp_config` (FSDP) with `param_dtype: bfloat16`, as the official scripts do;
fp32 runs without a `dp_config` (one process, no data parallelism).

Written to DIR:
  config.json         ExperimentConfig.as_config_dict(), as ConfigSaverCallback writes it
  metrics.jsonl       one line per step: everything OLMo-core's trainer records (train/CE loss,
                      train/Z loss, optim/total grad norm, optim/LR (group 0), optim/step skipped;
                      and optim/total grad norm float64, the same gradients' norm summed in
                      float64, a measurement that changes nothing)
  ckpt/stepN/         OLMo-core checkpoints (model_and_optim/ DCP directory, train/rank0.pt)
  run.json            what ran: arguments, torch threads, versions

`--resume-from DIR/ckpt/step30` starts a fresh run directory from that checkpoint with its trainer
state (OLMo-core's load_path with load_trainer_state), so it continues at step 31.
"""
import argparse
import json
import os
import shutil
import sys
import time

import olmo_core_tools


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", required=True, help="directory of token files (*.npy)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--save-interval", type=int, default=30)
    ap.add_argument("--resume-from", help="an OLMo-core checkpoint directory (ckpt/stepN)")
    ap.add_argument("--micro-batch-instances", type=int, default=4,
                    help="instances per rank micro-batch (rank_microbatch_size / 128)")
    ap.add_argument("--vocab-size", type=int, default=384)
    ap.add_argument("--eos-id", type=int, default=0)
    ap.add_argument("--pad-id", type=int, default=1)
    ap.add_argument("--float8", action="store_true",
                    help="float8 linear layers as the long-context stage sets them (torchao "
                    "Float8Linear: AOFloat8LinearConfig(enable_fsdp_float8_all_gather=True, "
                    "round_scales_to_power_of_2=True)); needs torchao importable, which the "
                    "reference lock does not install")
    ap.add_argument("--tokenizer", help="the tokenizer.json the token files were made with "
                    "(recorded as dataset.tokenizer.identifier)")
    return ap.parse_args()


SEQ_LEN = 128
GLOBAL_BATCH_INSTANCES = 8
LR = 1e-3
WARMUP = 10
DATA_SEED = 34521
MODEL_INIT_SEED = 12536


def build_config(args):
    from olmo_core.config import DType
    from olmo_core.data import NumpyDataLoaderConfig, NumpyFSLDatasetConfig, TokenizerConfig
    from olmo_core.distributed.parallel import DataParallelType
    from olmo_core.nn.attention import AttentionBackendName, SlidingWindowAttentionConfig
    from olmo_core.nn.transformer import TransformerConfig
    from olmo_core.optim import CosWithWarmup, OptimGroupOverride, SkipStepAdamWConfig
    from olmo_core.script_utils import ExperimentConfig
    from olmo_core.train import Duration, TrainerConfig
    from olmo_core.train.callbacks import CheckpointerCallback, ConfigSaverCallback
    from olmo_core.train.train_module import (TransformerDataParallelConfig,
                                              TransformerDataParallelWrappingStrategy,
                                              TransformerTrainModuleConfig)

    tokenizer = TokenizerConfig(vocab_size=args.vocab_size, eos_token_id=args.eos_id,
                                pad_token_id=args.pad_id,
                                identifier=os.path.abspath(args.tokenizer) if args.tokenizer
                                else None)
    model = TransformerConfig.olmo3_14M(
        vocab_size=tokenizer.padded_vocab_size(),
        n_kv_heads=2,
        hidden_size_multiplier=0.25,
        hidden_size_multiple_of=128,
        sliding_window=SlidingWindowAttentionConfig(
            force_full_attention_on_first_layer=False,
            force_full_attention_on_last_layer=True,
            pattern=[32, 32, 32, -1]),
        attn_backend=AttentionBackendName.torch,
    )
    model.init_seed = MODEL_INIT_SEED
    paths = sorted(os.path.join(os.path.abspath(args.data_dir), f)
                   for f in os.listdir(args.data_dir) if f.endswith(".npy"))
    if not paths:
        sys.exit(f"olmo_core_train.py: {args.data_dir}: no .npy token files")
    work_dir = os.path.join(os.path.abspath(args.out), "work")
    dataset = NumpyFSLDatasetConfig(paths=paths, tokenizer=tokenizer, sequence_length=SEQ_LEN,
                                    max_target_sequence_length=SEQ_LEN, work_dir=work_dir)
    data_loader = NumpyDataLoaderConfig(global_batch_size=GLOBAL_BATCH_INSTANCES * SEQ_LEN,
                                        seed=DATA_SEED, num_workers=0)
    dp_config = None
    if args.precision == "bf16":
        dp_config = TransformerDataParallelConfig(
            name=DataParallelType.fsdp, param_dtype=DType.bfloat16, reduce_dtype=DType.float32,
            wrapping_strategy=TransformerDataParallelWrappingStrategy.blocks)
    float8_config = None
    if args.float8:
        from olmo_core.float8 import AOFloat8LinearConfig, Float8Config
        float8_config = Float8Config(ao=AOFloat8LinearConfig(enable_fsdp_float8_all_gather=True,
                                                             round_scales_to_power_of_2=True),
                                     enabled=True)
    train_module = TransformerTrainModuleConfig(
        rank_microbatch_size=args.micro_batch_instances * SEQ_LEN,
        max_sequence_length=SEQ_LEN,
        optim=SkipStepAdamWConfig(
            lr=LR, weight_decay=0.1, betas=(0.9, 0.95), rolling_interval_length=20,
            group_overrides=[OptimGroupOverride(params=["embeddings.weight"],
                                                opts=dict(weight_decay=0.0))]),
        scheduler=CosWithWarmup(warmup_steps=WARMUP),
        compile_model=False,
        dp_config=dp_config,
        float8_config=float8_config,
        z_loss_multiplier=1e-5,
        max_grad_norm=1.0,
    )
    trainer = (
        TrainerConfig(save_folder=os.path.join(os.path.abspath(args.out), "ckpt"),
                      work_dir=work_dir, save_overwrite=True, metrics_collect_interval=1,
                      cancel_check_interval=1000, max_duration=Duration.steps(args.steps))
        .with_callback("checkpointer", CheckpointerCallback(save_interval=args.save_interval,
                                                            ephemeral_save_interval=None,
                                                            save_async=False))
        .with_callback("config_saver", ConfigSaverCallback())
    )
    if args.resume_from:
        trainer.load_path = os.path.abspath(args.resume_from)
        trainer.load_trainer_state = True
        trainer.load_optim_state = True
    return ExperimentConfig(model=model, dataset=dataset, data_loader=data_loader,
                            train_module=train_module, trainer=trainer, init_seed=MODEL_INIT_SEED)


def metrics_recorder(path):
    from olmo_core.train.callbacks import Callback

    class MetricsJsonl(Callback):
        """Appends every step's recorded metrics to a JSONL file (added after the config is
        built, so it is not part of config.json)."""

        def log_metrics(self, step, metrics):
            row = {"step": int(step)}
            row.update({k: float(v) for k, v in metrics.items()})
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")

    return MetricsJsonl()


def record_exact_grad_norm(train_module, path):
    """Records, beside OLMo-core's own `optim/total grad norm` (torch's float32 reduction), the
    norm of the same gradients summed in float64 (`optim/total grad norm float64`): how far
    OLMo-core's reported norm lies from the exact norm of its gradients. A measurement only:
    the clipping and everything after it use OLMo-core's float32 norm, unchanged."""
    import torch

    clip = train_module._clip_grad_norm

    def measured(max_grad_norm, *a, **kw):
        sq = torch.zeros((), dtype=torch.float64)
        for p in train_module.model.parameters():
            if p.grad is None:
                continue
            g = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
            sq += g.detach().to(torch.float64).pow(2).sum()
        # Written beside the trainer's metrics, not through record_metric (which stores float32).
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"step": int(train_module.trainer.global_step),
                                "optim/total grad norm float64": float(sq.sqrt())}) + "\n")
        return clip(max_grad_norm, *a, **kw)

    train_module._clip_grad_norm = measured


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    metrics_path = os.path.join(args.out, "metrics.jsonl")
    if os.path.exists(metrics_path):
        os.remove(metrics_path)
    # OLMo-core's trainer resumes from any checkpoint in its save folder: start clean.
    shutil.rmtree(os.path.join(args.out, "ckpt"), ignore_errors=True)

    import torch

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    from olmo_core.train import teardown_training_environment

    olmo_core_tools.prepare_environment(args.precision == "bf16")
    config = build_config(args)
    train_module, trainer = olmo_core_tools.build_trainer(config)
    trainer.add_callback("metrics_jsonl", metrics_recorder(metrics_path))
    record_exact_grad_norm(train_module, metrics_path)
    config_dict = config.as_config_dict()
    for callback in trainer.callbacks.values():
        if type(callback).__name__ == "ConfigSaverCallback":
            callback.config = config_dict
    with open(os.path.join(args.out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config_dict, f, indent=2)
        f.write("\n")
    if args.resume_from:
        trainer.load_checkpoint(config.trainer.load_path, load_trainer_state=True,
                                load_optim_state=True)
    t0 = time.time()
    trainer.fit()
    seconds = time.time() - t0

    import importlib.metadata as md
    with open(os.path.join(args.out, "run.json"), "w", encoding="utf-8") as f:
        json.dump({"argv": sys.argv, "torch_threads": torch.get_num_threads(),
                   "seconds": seconds, "data_paths": config.dataset.paths,
                   "versions": {p: md.version(p) for p in ("torch", "ai2-olmo-core", "numpy")}},
                  f, indent=2)
        f.write("\n")
    teardown_training_environment()


if __name__ == "__main__":
    main()

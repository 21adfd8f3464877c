#!/usr/bin/python3
"""Writes the OLMo-core config.json fixtures of tests/data/olmo-core/ (docs/olmo-core.md).

Each file is what OLMo-core's ConfigSaverCallback would save (Config.as_config_dict: nested objects
with "_CLASS_", None values left out, enums as their values) for the four official Olmo 3 7B
stages, built by hand from OLMo-core's code (no OLMo-core import):

  src/scripts/official/OLMo3/OLMo-3-1025-7B-pretrain-1.py     (commit 18b8fb66b984)
  src/scripts/official/OLMo3/OLMo-3-1025-7B-pretrain-2.py     (commit 138b1fca4992)
  src/scripts/official/OLMo3/OLMo-3-1025-7B-midtrain.py       (commit 01c899bf0e52)
  src/scripts/official/OLMo3/OLMo-3-1025-7B-long-context.py   (commit 138b1fca4992)
  TransformerConfig.olmo3_7B / llama_like / with_rope_scaling, TransformerBlockConfig
  (sequence_mixer, with the deprecated `attention` InitVar) in src/olmo_core/nn/transformer/config.py
  (commit 004aefffd1e8); schedulers with `warmup` (the `warmup_steps` spelling is moved to `warmup`
  in __post_init__) in src/olmo_core/optim/scheduler.py.

Every stage is written twice: block.sequence_mixer (OLMo-core since 2026-01) and block.attention
(before). Also a tiny OLMo-core-style config over the test corpus mix (tiny-corpus.*.json).

  usage: tools/olmo_core_stage_configs.py OUT_DIR
"""
import copy
import json
import os
import sys


def cls(class_name, **fields):
    return {"_CLASS_": class_name, **fields}


def layer_norm(eps=1e-6):
    return cls("olmo_core.nn.layer_norm.LayerNormConfig", name="rms", eps=eps, bias=False,
               dtype="float32")


def tokenizer_dolma2():
    # TokenizerConfig.dolma2(): bos_token_id None is left out.
    return cls("olmo_core.data.tokenizer.TokenizerConfig", vocab_size=100278, eos_token_id=100257,
               pad_token_id=100277, identifier="allenai/dolma2-tokenizer")


def block(n_heads, hidden, window_pattern, rope_theta=500000):
    # llama_like(..., block_name=reordered_norm, qk_norm=True, layer_norm_eps=1e-6,
    #            attn_backend=flash_2, sliding_window=SlidingWindowAttentionConfig(...))
    mixer = cls("olmo_core.nn.attention.AttentionConfig", type="attention", name="default",
                n_heads=n_heads, bias=False,
                rope=cls("olmo_core.nn.rope.RoPEConfig", name="default", theta=rope_theta,
                         full_precision=True, no_global_rope=False),
                qk_norm=layer_norm(), backend="flash_2", dtype="float32",
                sliding_window=cls("olmo_core.nn.attention.SlidingWindowAttentionConfig",
                                   pattern=window_pattern,
                                   force_full_attention_on_first_layer=False,
                                   force_full_attention_on_last_layer=True),
                use_head_qk_norm=False, attention_sinks=False)
    return cls("olmo_core.nn.transformer.config.TransformerBlockConfig", sequence_mixer=mixer,
               layer_norm=layer_norm(),
               feed_forward=cls("olmo_core.nn.feed_forward.FeedForwardConfig", hidden_size=hidden,
                                name="default", bias=False, dtype="float32", activation="silu"),
               name="reordered_norm")


def model(d_model=4096, n_layers=32, n_heads=32, hidden=11008, vocab=100352,
          window=(4096, 4096, 4096, -1), yarn=None):
    m = cls("olmo_core.nn.transformer.config.TransformerConfig", d_model=d_model,
            vocab_size=vocab, n_layers=n_layers, block=block(n_heads, hidden, list(window)),
            lm_head=cls("olmo_core.nn.lm_head.LMHeadConfig", name="default",
                        layer_norm=layer_norm(), bias=False, dtype="float32",
                        loss_implementation="default"),
            name="default", dtype="float32", init_method="normal", init_seed=0, init_std=0.02)
    if yarn:
        # with_rope_scaling(..., full_attn_layers_only=True): a block copy with the scaling on
        # every layer that does not use the sliding window.
        overrides = {}
        for i in range(n_layers):
            w = window[i % len(window)] if i != n_layers - 1 else -1
            if w != -1:
                continue
            b = copy.deepcopy(m["block"])
            b["sequence_mixer"]["rope"]["scaling"] = cls("olmo_core.nn.rope.YaRNRoPEScalingConfig",
                                                         **yarn)
            overrides[str(i)] = b
        m["block_overrides"] = overrides
    return m


def optim(lr):
    return cls("olmo_core.optim.adamw.SkipStepAdamWConfig",
               group_overrides=[cls("olmo_core.optim.config.OptimGroupOverride",
                                    params=["embeddings.weight"], opts={"weight_decay": 0.0})],
               compile=False, fixed_fields=["initial_lr"], lr=lr, betas=[0.9, 0.95], eps=1e-8,
               weight_decay=0.1, foreach=True, step_increment_bugfix=True,
               rolling_interval_length=128, sigma_factor=6)


def scheduler(name, **fields):
    return cls("olmo_core.optim.scheduler." + name, lr_field="lr", initial_lr_field="initial_lr",
               units="steps", **fields)


def duration(value, unit):
    return cls("olmo_core.train.common.Duration", value=value, unit=unit)


def dp_config(**extra):
    return cls("olmo_core.train.train_module.transformer.config.TransformerDataParallelConfig",
               name="hsdp", param_dtype="bfloat16", reduce_dtype="float32", **extra)


def train_module(lr, sched, rank_mbz, max_seq, **extra):
    return cls("olmo_core.train.train_module.transformer.config.TransformerTrainModuleConfig",
               rank_microbatch_size=rank_mbz, max_sequence_length=max_seq, optim=optim(lr),
               max_grad_norm=1.0, scheduler=sched, compile_model=True,
               z_loss_multiplier=1e-5, label_ignore_index=-100, **extra)


def callbacks(evals):
    c = {
        "monkey_patcher": cls("olmo_core.train.callbacks.monkey_patcher.MonkeyPatcherCallback"),
        "checkpointer": cls("olmo_core.train.callbacks.checkpointer.CheckpointerCallback",
                            save_interval=1000, save_async=False, enabled=True),
        "comet": cls("olmo_core.train.callbacks.comet.CometCallback", name="olmo3-7b",
                     enabled=False, cancel_check_interval=10),
        "wandb": cls("olmo_core.train.callbacks.wandb.WandBCallback", name="olmo3-7b",
                     enabled=False, cancel_check_interval=10),
        "config_saver": cls("olmo_core.train.callbacks.config_saver.ConfigSaverCallback",
                            fname="config.json"),
    }
    if evals:
        c["lm_evaluator"] = cls(
            "olmo_core.train.callbacks.evaluator_callback.LMEvaluatorCallbackConfig",
            eval_dataset=cls("olmo_core.data.numpy_dataset.NumpyPaddedFSLDatasetConfig",
                             tokenizer=tokenizer_dolma2(), mix="v3-small-ppl-validation",
                             mix_base_dir="/weka/oe-training-default/ai2-llm",
                             sequence_length=8192, work_dir="/tmp/olmo-core-work"),
            eval_interval=10000)
        c["downstream_evaluator"] = cls(
            "olmo_core.train.callbacks.evaluator_callback.DownstreamEvaluatorCallbackConfig",
            tasks=["arc_challenge_test_bpb_5shot", "hellaswag_bpb_5shot"], eval_interval=10000,
            tokenizer=tokenizer_dolma2())
    return c


def trainer(max_duration, hard_stop=None, evals=True, **load):
    t = cls("olmo_core.train.config.TrainerConfig", save_folder="/weka/checkpoints/olmo3-7b",
            work_dir="/tmp/olmo-core-work", save_overwrite=True, metrics_collect_interval=10,
            cancel_check_interval=10, max_duration=max_duration, callbacks=callbacks(evals),
            **load)
    if hard_stop:
        t["hard_stop"] = hard_stop
    return t


def dataset(mix, seq, cls_name="NumpyFSLDatasetConfig", **extra):
    return cls("olmo_core.data.numpy_dataset." + cls_name, tokenizer=tokenizer_dolma2(), mix=mix,
               mix_base_dir="/weka/oe-training-default/ai2-llm", sequence_length=seq,
               work_dir="/tmp/olmo-core-work", include_instance_metadata=True,
               expand_glob=False, **extra)


def experiment(name, m, ds, dl, tm, tr, init_seed=12536):
    return cls("olmo_core.script_utils.ExperimentConfig", run_name=name, model=m, dataset=ds,
               data_loader=dl, train_module=tm, trainer=tr, init_seed=init_seed)


def loader(gbs, seed, workers):
    return cls("olmo_core.data.data_loader.NumpyDataLoaderConfig", global_batch_size=gbs,
               seed=seed, num_workers=workers)


LR1 = 3e-4
LR2 = 0.00020712352850360292
GBS1 = 8192 * 512


def stages():
    float8_off = cls("olmo_core.float8.Float8Config", enabled=False)
    yield "OLMo-3-1025-7B-pretrain-1", experiment(
        "OLMo-3-1025-7B-pretrain-1", model(),
        dataset("OLMo-mix-0625-official", 8192, max_target_sequence_length=8192,
                generate_doc_lengths=False),
        loader(GBS1, 34521, 8),
        train_module(LR1, scheduler("CosWithWarmup", warmup=2000, alpha_f=0.1, warmup_min_lr=0.0),
                     2 * 8192, 8192, float8_config=float8_off,
                     dp_config=dp_config(wrapping_strategy="blocks")),
        trainer(duration(int(5e12), "tokens"), duration(597046, "steps")))
    original_max_steps = int(5e12) // GBS1
    yield "OLMo-3-1025-7B-pretrain-2", experiment(
        "OLMo-3-1025-7B-pretrain-2", model(),
        dataset("OLMo-mix-0625-official", 8192, max_target_sequence_length=8192,
                generate_doc_lengths=False),
        loader(GBS1, 34521, 8),
        train_module(LR1, scheduler("HalfCosWithWarmup",
                                    warmup=original_max_steps // 2 + 2000 // 2, alpha_f=0.1,
                                    warmup_min_lr=0.0),
                     2 * 8192, 8192, float8_config=float8_off,
                     dp_config=dp_config(wrapping_strategy="blocks")),
        trainer(duration(int(7e12), "tokens"), duration(1, "epochs"),
                load_path="https://storage.googleapis.com/ai2-llm/checkpoints/OLMo25/step596047/",
                load_strategy="always", load_trainer_state=True, load_optim_state=True))
    yield "OLMo-3-1025-7B-midtrain", experiment(
        "OLMo-3-1025-7B-midtrain", model(),
        dataset("OLMo-midtraining-mix-1025-100B", 8192, max_target_sequence_length=8192,
                generate_doc_lengths=False),
        loader(2**21, 1337, 4),
        train_module(LR2, scheduler("LinearWithWarmup", alpha_f=0.0, warmup=0, warmup_min_lr=0.0),
                     2 * 8192, 8192, float8_config=float8_off,
                     dp_config=dp_config(wrapping_strategy="blocks"),
                     ac_config=cls("olmo_core.train.train_module.transformer.config."
                                   "TransformerActivationCheckpointingConfig",
                                   mode="selected_modules", modules=["blocks.*.feed_forward"])),
        trainer(duration(100_000_000_000, "tokens"), evals=False,
                load_path="https://olmo-checkpoints.org/ai2-llm/Olmo-3-1025-7B/stage1/step1413814/",
                load_strategy="always", load_trainer_state=False, load_optim_state=True),
        init_seed=1337)
    yield "OLMo-3-1025-7B-long-context", experiment(
        "OLMo-3-1025-7B-long-context",
        model(yarn={"factor": 8, "beta_fast": 32, "beta_slow": 1, "old_context_len": 8192}),
        dataset("OLMo-longmino-mix-0625", 65536, "NumpyPackedFSLDatasetConfig",
                generate_doc_lengths=True, source_group_size=8, source_permutation_seed=123),
        loader(65536 * 64, 34521, 4),
        train_module(LR2, scheduler("LinearWithWarmup", alpha_f=0.0, warmup=200, warmup_min_lr=0.0),
                     65536, 65536,
                     float8_config=cls("olmo_core.float8.Float8Config", enabled=True,
                                       ao=cls("olmo_core.float8.AOFloat8LinearConfig",
                                              recipe="rowwise")),
                     dp_config=dp_config(shard_degree=1),
                     cp_config=cls("olmo_core.train.train_module.transformer.config."
                                   "TransformerContextParallelConfig",
                                   degree=8, head_stride=4, load_balancer="llama3")),
        trainer(duration(int(5e12), "tokens"), duration(597046, "steps"), evals=False,
                load_path="https://olmo-checkpoints.org/ai2-llm/Olmo-3-1025-7B/stage2/step47684/",
                load_strategy="always", load_trainer_state=False, load_optim_state=True))
    # A tiny run in the same form over the test corpus mix (tests/data/olmo-core/mixes).
    tiny = experiment(
        "tiny-corpus",
        model(d_model=64, n_layers=4, n_heads=4, hidden=256, window=(32, 32, 32, -1)),
        dataset("replica-corpus-v1", 64, max_target_sequence_length=64, generate_doc_lengths=False),
        loader(64 * 4, 7, 2),
        train_module(3e-3, scheduler("CosWithWarmup", warmup=2, alpha_f=0.1, warmup_min_lr=0.0),
                     2 * 64, 64, float8_config=float8_off,
                     dp_config=dp_config(wrapping_strategy="blocks")),
        trainer(duration(6, "steps"), evals=False))
    tiny["dataset"]["mix_base_dir"] = "/olmo-core-test-data"
    tiny["trainer"]["callbacks"]["checkpointer"]["save_interval"] = 3
    yield "tiny-corpus", tiny
    # The long-context stage's form at the tiny scale, trainable here: YaRN on the full-attention
    # layer (with_rope_scaling, factor 4 over an original context of 16 tokens, seq_len 64 = 4 x
    # 16), concatenate-and-chunk data (no packing) and no float8.
    tiny_lc = copy.deepcopy(tiny)
    tiny_lc["run_name"] = "tiny-corpus-long-context"
    tiny_lc["model"] = model(d_model=64, n_layers=4, n_heads=4, hidden=256, window=(32, 32, 32, -1),
                             yarn={"factor": 4, "beta_fast": 32, "beta_slow": 1,
                                   "old_context_len": 16})
    tiny_lc["trainer"]["max_duration"] = duration(3, "steps")
    yield "tiny-corpus-long-context", tiny_lc


def attention_spelling(obj):
    """The same config with the pre-2026 spelling: block.attention instead of block.sequence_mixer
    (and no registry "type" in it, which older OLMo-core did not write)."""
    obj = copy.deepcopy(obj)
    m = obj["model"]
    for b in [m["block"], *m.get("block_overrides", {}).values()]:
        mixer = b.pop("sequence_mixer")
        mixer.pop("type", None)
        b["attention"] = mixer
    return obj


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, cfg in stages():
        for spelling, obj in (("sequence_mixer", cfg), ("attention", attention_spelling(cfg))):
            with open(os.path.join(out, f"{name}.{spelling}.json"), "w") as f:
                json.dump(obj, f, indent=4)
                f.write("\n")


if __name__ == "__main__":
    main()

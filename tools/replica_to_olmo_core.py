#!/usr/bin/env python3
"""Writes a replica checkpoint as an OLMo-core checkpoint that OLMo-core's Trainer resumes from
(the reference venv's python).

    replica_to_olmo_core.py REPLICA_CHECKPOINT --config CONFIG_JSON --out STEP_DIR --replica BIN
                            [--path-map PREFIX=DIR ...] [--data-paths DATA_PATHS_TXT] [--json]

REPLICA_CHECKPOINT is a checkpoint directory (RUN/checkpoints/step-NNNNNNNN, any world size, format
version 1 or 2) or a run directory (its newest valid checkpoint). CONFIG_JSON is the OLMo-core
ExperimentConfig (config.json, as ConfigSaverCallback writes it) of the run that is to resume:
its model must be the checkpoint's model and its data the checkpoint's data. STEP_DIR becomes what
OLMo-core's Checkpointer writes for a step (point trainer.load_path at it):
  model_and_optim/   torch.distributed.checkpoint directory (.metadata + __0_N.distcp)
  train/rank0.pt     the trainer state
  .metadata.json     the checkpoint's metadata
  config.json, data_paths.txt   written by the config's ConfigSaverCallback, if it has one

How: the trainer of CONFIG_JSON is built as tools/olmo_core_train.py builds it (seed_all(init_seed),
the model on the meta device, the train module, dataset, data loader, Trainer); the replica state
is loaded into it and the trainer's own save_checkpoint() writes the directory, through OLMo-core's
Checkpointer and torch.distributed.checkpoint's writer. What goes in:
  - model weights, AdamW exp_avg / exp_avg_sq (replica's m, v) renamed from Hugging Face names by
    OLMo-core's own converter (olmo_core.nn.hf.convert_state_from_hf), and AdamW `step` = replica's
    adam_step (both count the updates applied: the next one uses bias correction for step + 1);
  - the optimizer's param groups as OLMo-core's optimizer holds them, the lr of each set by the
    config's scheduler for the checkpoint's step (what optim_step() sets at that step);
  - the trainer state: global_step, tokens seen, petaflops (OLMo-core's per-step sum), epoch, and
    the data loader state (OLMo-core's dataset fingerprint of the token files, batches and tokens
    processed, seed, epoch), restored through the data loader's own load_state_dict, which checks
    the fingerprint;
  - the RNG states as OLMo-core's straight run has them at that step: seed_all(init_seed) and the
    model's init, then one draw from torch's global generator for each epoch begun (OLMo-core's
    data loader builds an iterator of torch's DataLoader at the start of every epoch, and that
    iterator takes its base seed from it). A resumed OLMo-core run makes that draw again when it
    starts its epoch, from whichever checkpoint it resumed, so a run resumed from this checkpoint
    holds the RNG states a run resumed from OLMo-core's own does.
Not carried: replica's skip-step window (the recent losses and grad norms). OLMo-core keeps
SkipStepOptimizer's window in memory only, so any OLMo-core resume starts it empty.

Checked before anything is written: the checkpoint is verified by `replica convert` (manifest,
checksums, DONE; its weights are exported through it), the state's Adam step equals the manifest's,
the model config of the checkpoint equals OLMo-core's HF config of the model in CONFIG_JSON, the
data position is the config's (sequence length, global batch, seed) and replica's fingerprint of the
config's token files (`replica data info`) is the state's. Bad input exits 2 with a message naming
the file. Everything is written in a temporary directory beside STEP_DIR, renamed to STEP_DIR at
the end: nothing half-written is left, and an existing STEP_DIR is refused.
"""
import argparse
import contextlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import olmo_core_tools
from olmo_core_tools import BadInput, map_path

PROG = "replica_to_olmo_core.py"


def fail(msg):
    olmo_core_tools.fail(PROG, msg)


def read_json(path, what):
    if not os.path.isfile(path):
        raise BadInput(f"{path}: missing ({what})")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: unreadable {what} ({type(e).__name__}: {e})")


def run_replica(replica, *args):
    proc = subprocess.run([replica, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        msg = proc.stderr.strip().splitlines()
        raise BadInput(msg[-1].removeprefix("replica: error: ") if msg else
                       f"{' '.join([replica, *args])} exited {proc.returncode}")
    return json.loads(proc.stdout)


def resolve_checkpoint(path, exported_step):
    """The checkpoint directory `replica convert` read: `path` itself, or the run directory's
    checkpoint of the step it exported."""
    if os.path.isfile(os.path.join(path, "MANIFEST.json")):
        return path
    return os.path.join(path, "checkpoints", f"step-{exported_step:08d}")


def read_safetensors_header(path):
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise BadInput(f"{path}: truncated safetensors header")
        n = struct.unpack("<Q", head)[0]
        header = json.loads(f.read(n))
    return header, 8 + n


def read_field(path, header, base, name, count):
    import numpy as np
    info = header.get(name)
    if info is None or info.get("dtype") != "F32":
        raise BadInput(f"{path}: no F32 tensor '{name}'")
    lo, hi = info["data_offsets"]
    if hi - lo != 4 * count:
        raise BadInput(f"{path}: '{name}' holds {(hi - lo) // 4} floats, the manifest says {count}")
    with open(path, "rb") as f:
        f.seek(base + lo)
        data = f.read(hi - lo)
    if len(data) != hi - lo:
        raise BadInput(f"{path}: truncated in '{name}'")
    return np.frombuffer(data, dtype=np.float32)


def read_adam_moments(ckpt, manifest, weights):
    """{HF name: (m, v)} float32 arrays of the checkpoint, and its Adam step. Version 2: every
    shard's range of the flat layout, assembled in rank order (any world size); version 1:
    optim.safetensors."""
    import numpy as np
    mpath = os.path.join(ckpt, "MANIFEST.json")
    if manifest.get("version") == 2:
        sh = manifest.get("sharded") or {}
        total = int(sh["total_floats"])
        flat = {"adam_m": np.empty(total, np.float32), "adam_v": np.empty(total, np.float32)}
        pos = 0
        for shard in sh["shards"]:
            begin, end = int(shard["begin"]), int(shard["end"])
            if begin != pos:
                raise BadInput(f"{mpath}: shard {shard['file']} begins at {begin}, not {pos}")
            path = os.path.join(ckpt, shard["file"])
            header, base = read_safetensors_header(path)
            for field in flat:
                flat[field][begin:end] = read_field(path, header, base, field, end - begin)
            pos = end
        if pos != total:
            raise BadInput(f"{mpath}: shards cover {pos} of {total} floats")
        out = {}
        for name, offset, shape in sh["layout"]:
            n = int(np.prod(shape)) if shape else 1
            if name not in weights or list(weights[name].shape) != list(shape):
                raise BadInput(f"{mpath}: layout tensor {name} {shape} is not in the exported "
                               "weights with that shape")
            out[name] = tuple(flat[f][offset:offset + n].reshape(shape) for f in ("adam_m", "adam_v"))
        return out, int(sh["adam_step"])
    from safetensors.numpy import load_file
    path = os.path.join(ckpt, "optim.safetensors")
    if not os.path.isfile(path):
        raise BadInput(f"{path}: missing (a weights-only checkpoint has no optimizer state to "
                       "resume)")
    optim = load_file(path)
    out = {}
    for name, w in weights.items():
        pair = tuple(optim.get(f"{p}.{name}") for p in ("m", "v"))
        if any(t is None or t.shape != w.shape for t in pair):
            raise BadInput(f"{path}: no m.{name} / v.{name} of shape {list(w.shape)}")
        out[name] = pair
    return out, int(optim["step"])


# The HF config fields that decide the model's parameters and arithmetic; both must agree.
MODEL_FIELDS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "vocab_size", "rms_norm_eps", "layer_types",
                "sliding_window", "tie_word_embeddings", "hidden_act", "attention_bias",
                "model_type")
ROPE_SCALING_FIELDS = ("rope_type", "factor", "original_max_position_embeddings", "beta_fast",
                       "beta_slow", "attention_factor")


def rope_of(cfg):
    """(theta, scaling) of an HF config dict in either spelling: rope_theta + rope_scaling
    (replica's config.json), or transformers 5's rope_parameters per layer type (theta of every
    type; the scaling of the full-attention layers, None when 'default')."""
    params = cfg.get("rope_parameters")
    if isinstance(params, dict) and params:
        per_type = params if all(isinstance(v, dict) for v in params.values()) else {"all": params}
        thetas = {float(v["rope_theta"]) for v in per_type.values()}
        full = per_type.get("full_attention", next(iter(per_type.values())))
        scaling = None if full.get("rope_type", "default") == "default" else {
            k: full.get(k) for k in ROPE_SCALING_FIELDS if k in full}
        return (thetas.pop() if len(thetas) == 1 else sorted(thetas)), scaling
    scaling = cfg.get("rope_scaling")
    if scaling:
        scaling = {k: scaling.get(k) for k in ROPE_SCALING_FIELDS if k in scaling}
    theta = cfg.get("rope_theta")
    return (float(theta) if theta is not None else None), scaling or None


def check_same_model(ckpt_config_path, ckpt_config, hf_config, config_path):
    theirs = hf_config.to_dict()
    diff = []
    for key in MODEL_FIELDS:
        a, b = ckpt_config.get(key), theirs.get(key)
        if key == "head_dim" and (a is None or b is None):
            continue
        if key == "sliding_window" and "sliding_attention" not in (ckpt_config.get("layer_types")
                                                                    or []):
            continue
        if a != b:
            diff.append(f"{key} {a!r} (checkpoint) vs {b!r} (OLMo-core)")
    (ta, sa), (tb, sb) = rope_of(ckpt_config), rope_of(theirs)
    if ta != tb:
        diff.append(f"rope theta {ta!r} (checkpoint) vs {tb!r} (OLMo-core)")
    if (sa is None) != (sb is None) or (sa and any(
            k in sa and k in sb and sa[k] != sb[k] for k in ROPE_SCALING_FIELDS)):
        diff.append(f"rope scaling {sa!r} (checkpoint) vs {sb!r} (OLMo-core)")
    if diff:
        raise BadInput(f"{ckpt_config_path}: the checkpoint's model is not the model of "
                       f"{config_path}: " + "; ".join(diff))


def check_state(state_path, state, manifest_step, adam_step):
    if state.get("format") != "replica-train-state":
        raise BadInput(f"{state_path}: not a replica train state (format {state.get('format')!r})")
    for key in ("step", "tokens", "loader", "adam_step"):
        if key not in state:
            raise BadInput(f"{state_path}: no '{key}'")
    if int(state["adam_step"]) != adam_step:
        raise BadInput(f"{state_path}: adam_step {state['adam_step']} is not the checkpoint's "
                       f"Adam step {adam_step}")
    if manifest_step is not None and int(state["step"]) != int(manifest_step):
        raise BadInput(f"{state_path}: step {state['step']} is not the manifest's {manifest_step}")
    if float(adam_step) != float(struct.unpack("<f", struct.pack("<f", adam_step))[0]):
        raise BadInput(f"{state_path}: adam_step {adam_step} is not exact in float32, the dtype of "
                       "OLMo-core's AdamW step")
    loader = state["loader"]
    if loader.get("dataset_type") != "fsl":
        raise BadInput(f"{state_path}: loader dataset_type {loader.get('dataset_type')!r}; only "
                       "fixed-sequence-length (fsl) data positions are written")


def dataset_paths(config, config_path, path_map, data_paths_file):
    if data_paths_file:
        with open(data_paths_file, encoding="utf-8") as f:
            paths = [line.strip() for line in f if line.strip()]
    else:
        paths = list(config["dataset"].get("paths") or [])
        if not paths:
            raise BadInput(f"{config_path}: dataset has no 'paths' (a mix: pass the run's "
                           "data_paths.txt with --data-paths)")
    paths = [map_path(p, path_map) for p in paths]
    for p in paths:
        if not os.path.isfile(p):
            raise BadInput(f"{p}: token file of {config_path} not found (use --path-map)")
    return paths


def setup_environment(precision_bf16):
    import torch
    torch.use_deterministic_algorithms(True)
    olmo_core_tools.prepare_environment(precision_bf16)


def build_trainer(config_dict, paths, work):
    """The trainer of `config_dict` as tools/olmo_core_train.py builds it, saving into
    work/save; returns (config, trainer)."""
    from olmo_core.script_utils import ExperimentConfig

    d = json.loads(json.dumps(config_dict))
    d["dataset"]["paths"] = paths
    d["dataset"].pop("mix", None)
    d["dataset"].pop("mix_base_dir", None)
    d["dataset"]["work_dir"] = os.path.join(work, "work")
    d["trainer"]["save_folder"] = os.path.join(work, "save")
    d["trainer"]["work_dir"] = os.path.join(work, "work")
    d["trainer"]["save_overwrite"] = False
    config = ExperimentConfig.from_dict(d)
    _, trainer = olmo_core_tools.build_trainer(config)
    for callback in trainer.callbacks.values():
        if type(callback).__name__ == "ConfigSaverCallback":
            callback.config = config_dict  # the run's config.json as given
    return config, trainer


def as_entry(full, entry):
    """`full` (a plain tensor) in the form of the state-dict entry it replaces (a DTensor under
    FSDP)."""
    import torch
    full = full.to(entry.dtype)
    if hasattr(entry, "device_mesh"):
        from torch.distributed.tensor import distribute_tensor
        return distribute_tensor(full, entry.device_mesh, entry.placements)
    return full.reshape(entry.shape).clone()


def load_into(trainer, olmo_weights, olmo_m, olmo_v, adam_step):
    """Loads weights and AdamW state into the train module through its own load_state_dict
    (torch's set_model_state_dict / set_optimizer_state_dict, strict)."""
    import torch
    tm = trainer.train_module
    sd = tm.state_dict()  # OLMo-core's flattened layout: model.*, optim state.* / param_groups.*
    model_keys = set(sd["model"])
    if set(olmo_weights) != model_keys:
        raise BadInput("the converted weights' names are not the model's: missing "
                       f"{sorted(model_keys - set(olmo_weights))[:4]}, extra "
                       f"{sorted(set(olmo_weights) - model_keys)[:4]}")
    for name, entry in sd["model"].items():
        if tuple(entry.shape) != tuple(olmo_weights[name].shape):
            raise BadInput(f"{name}: shape {list(olmo_weights[name].shape)} in the checkpoint, "
                           f"{list(entry.shape)} in OLMo-core's model")
        sd["model"][name] = as_entry(olmo_weights[name], entry)
    optim = sd["optim"]
    for name in model_keys:
        for key, src in (("exp_avg", olmo_m), ("exp_avg_sq", olmo_v)):
            optim[f"state.{name}.{key}"] = as_entry(src[name], optim[f"state.{name}.{key}"])
        step = optim[f"state.{name}.step"]
        optim[f"state.{name}.step"] = torch.full_like(step, float(adam_step))
    tm.load_state_dict(sd)


def set_trainer_state(trainer, state, fingerprint):
    """Step, tokens, epoch and data position, through the data loader's own load_state_dict; the
    param groups' lr as the scheduler sets it at this step; the petaflops counter summed as the
    trainer sums it, one step at a time."""
    import torch

    loader = state["loader"]
    step = int(state["step"])
    dl = trainer.data_loader
    batches = int(loader["batches_processed"])
    epoch = int(loader["epoch"])
    begun = batches > 0 or step > 0
    dl.load_state_dict({
        "dataset_fingerprint_version": dl.dataset.fingerprint_version,
        "dataset_fingerprint": fingerprint,
        "batches_processed": batches,
        "tokens_processed": int(loader["tokens_processed"]),
        "seed": int(loader["seed"]),
        # before its first batch OLMo-core's data loader has no epoch yet
        "epoch": epoch if begun else None,
        "dataset_type": "fsl",
        "sequence_length": int(loader["sequence_length"]),
        "max_target_sequence_length": dl.dataset.max_target_sequence_length,
    })
    trainer.global_step = step
    trainer.global_train_tokens_seen = int(state["tokens"])
    trainer.epoch = epoch
    tm = trainer.train_module
    flops = tm.num_flops_per_token(seq_len=int(loader["sequence_length"]))
    if flops is not None:
        per_step = flops * dl.global_batch_size / 1e15
        total = 0.0
        for _ in range(step):
            total += per_step
        trainer.global_train_petaflops = total
    if tm.scheduler is not None and step > 0:
        for group in tm.optim.param_groups:
            tm.scheduler.set_lr(group, trainer)
    # One draw from torch's global generator per epoch begun: OLMo-core's data loader builds an
    # iterator of torch's DataLoader at the start of each epoch, and its constructor
    # (torch.utils.data.dataloader._BaseDataLoaderIter.__init__) takes its base seed so:
    for _ in range(epoch if begun else 0):
        torch.empty((), dtype=torch.int64).random_()


def convert(args, path_map, tmp):
    # 1. The replica checkpoint, verified and its weights exported by replica itself.
    hf_dir = os.path.join(tmp, "hf")
    exported = run_replica(args.replica, "convert", "--from", args.checkpoint, "--to", hf_dir,
                           "--json")
    import numpy as np
    import torch
    from olmo_core.nn.hf.config import get_hf_config
    from olmo_core.nn.hf.convert import convert_state_from_hf
    from safetensors.numpy import load_file

    ckpt = resolve_checkpoint(args.checkpoint, int(exported["step"]))
    manifest = read_json(os.path.join(ckpt, "MANIFEST.json"), "the checkpoint's manifest")
    state_path = os.path.join(ckpt, "state.json")
    state = read_json(state_path, "the trainer state; a weights-only checkpoint cannot be resumed")
    weights = load_file(os.path.join(hf_dir, "model.safetensors"))
    moments, adam_step = read_adam_moments(ckpt, manifest, weights)
    check_state(state_path, state, manifest.get("step"), adam_step)
    ckpt_config_path = os.path.join(ckpt, "config.json")
    ckpt_config = read_json(ckpt_config_path, "the checkpoint's model config")

    # 2. OLMo-core's run: its config, data and trainer.
    config_dict = read_json(args.config, "OLMo-core's ExperimentConfig")
    if not isinstance(config_dict, dict) or "_CLASS_" not in config_dict:
        raise BadInput(f"{args.config}: not an OLMo-core config.json (no \"_CLASS_\")")
    paths = dataset_paths(config_dict, args.config, path_map, args.data_paths)
    tm_dict = config_dict.get("train_module") or {}
    param_dtype = (tm_dict.get("dp_config") or {}).get("param_dtype")
    precision = "bf16" if param_dtype == "bfloat16" else "fp32"
    if state.get("precision", "fp32") != precision:
        print(f"{PROG}: note: {state_path} was trained in {state.get('precision')}, "
              f"{args.config} trains in {precision}", file=sys.stderr)
    # The model first (on the meta device): a checkpoint of another model is refused before the
    # trainer and its data are built.
    from olmo_core.nn.transformer import TransformerConfig
    try:
        meta_model = TransformerConfig.from_dict(config_dict["model"]).build(init_device="meta")
    except Exception as e:  # noqa: BLE001 - OLMo-core refusing the config is bad input
        raise BadInput(f"{args.config}: OLMo-core could not build its model "
                       f"({type(e).__name__}: {e})")
    hf_config = get_hf_config(meta_model)
    check_same_model(ckpt_config_path, ckpt_config, hf_config, args.config)
    setup_environment(precision == "bf16")
    try:
        config, trainer = build_trainer(config_dict, paths, tmp)
    except Exception as e:  # noqa: BLE001 - OLMo-core refusing the config is bad input
        raise BadInput(f"{args.config}: OLMo-core could not build its trainer "
                       f"({type(e).__name__}: {e})")

    loader = state["loader"]
    dl = trainer.data_loader
    seq_len = dl.dataset.sequence_length
    want = {"sequence_length": seq_len, "global_batch_instances": dl.global_batch_size // seq_len,
            "seed": dl.seed}
    diff = [f"{k} {loader.get(k)} (checkpoint) vs {v} ({args.config})" for k, v in want.items()
            if loader.get(k) != v]
    if diff:
        raise BadInput(f"{state_path}: the data position is not of {args.config}'s data loader: "
                       + "; ".join(diff))
    if int(loader["tokens_processed"]) != int(loader["batches_processed"]) * dl.global_batch_size:
        raise BadInput(f"{state_path}: tokens_processed {loader['tokens_processed']} is not "
                       f"{loader['batches_processed']} batches of {dl.global_batch_size} tokens")
    dtype = str(np.dtype(dl.dataset.dtype))
    info = run_replica(args.replica, "data", "info", *paths, "--seq-len", str(seq_len),
                       "--dtype", dtype, "--vocab-size", str(hf_config.vocab_size), "--json")
    if info["fingerprint"] != loader.get("dataset_fingerprint") or \
            int(info["num_instances"]) != int(loader.get("num_instances", -1)):
        raise BadInput(f"{state_path}: the data loader's fingerprint {loader.get('dataset_fingerprint')}"
                       f" ({loader.get('num_instances')} instances) is not replica's fingerprint of "
                       f"the token files of {args.config}, {paths} ({info['fingerprint']}, "
                       f"{info['num_instances']} instances)")

    # 3. The state, in OLMo-core's names, loaded into the trainer; its own save_checkpoint.
    as_torch = lambda d: {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in d.items()}  # noqa: E731
    olmo_w = convert_state_from_hf(hf_config, as_torch(weights))
    olmo_m = convert_state_from_hf(hf_config, as_torch({k: mv[0] for k, mv in moments.items()}))
    olmo_v = convert_state_from_hf(hf_config, as_torch({k: mv[1] for k, mv in moments.items()}))
    load_into(trainer, olmo_w, olmo_m, olmo_v, adam_step)
    set_trainer_state(trainer, state, dl.dataset.fingerprint)
    saved = trainer.save_checkpoint()
    from olmo_core.train import teardown_training_environment
    teardown_training_environment()
    return str(saved), state, adam_step, precision


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint", help="replica checkpoint directory (or run directory)")
    ap.add_argument("--config", required=True, help="the OLMo-core run's config.json")
    ap.add_argument("--out", required=True, help="the OLMo-core checkpoint directory to write")
    ap.add_argument("--replica", required=True, help="the replica binary")
    ap.add_argument("--path-map", action="append", default=[], metavar="PREFIX=DIR")
    ap.add_argument("--data-paths", help="the token files, one a line (replaces dataset.paths "
                    "and mixes of the config)")
    ap.add_argument("--json", action="store_true", help="print a summary as JSON")
    args = ap.parse_args()
    path_map = []
    for item in args.path_map:
        if "=" not in item:
            fail(f"--path-map {item}: expected PREFIX=DIR")
        path_map.append(tuple(item.split("=", 1)))
    if not os.path.isdir(args.checkpoint):
        fail(f"{args.checkpoint}: no such directory (a replica checkpoint or run directory)")
    if args.data_paths and not os.path.isfile(args.data_paths):
        fail(f"{args.data_paths}: missing (--data-paths)")
    out = os.path.abspath(args.out)
    if os.path.lexists(out):
        fail(f"{args.out}: exists; the checkpoint is written only to a new directory")
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".replica-to-olmo-core-", dir=parent)
    try:
        # OLMo-core logs to stdout; stdout carries only this tool's own result.
        with contextlib.redirect_stdout(sys.stderr):
            saved, state, adam_step, precision = convert(args, path_map, tmp)
        os.rename(saved, out)
    except BadInput as e:
        fail(str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {"from": args.checkpoint, "to": args.out, "step": int(state["step"]),
               "adam_step": adam_step, "batches_processed": int(state["loader"]["batches_processed"]),
               "precision": precision,
               "skip_step_window_dropped": len(state.get("skip_step", {}).get("losses", []))}
    print(json.dumps(summary) if args.json else
          f"wrote replica checkpoint {args.checkpoint} (step {summary['step']}) as OLMo-core "
          f"checkpoint {args.out}")


if __name__ == "__main__":
    main()

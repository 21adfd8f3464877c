#!/usr/bin/env python3
"""Reads an OLMo-core checkpoint into a replica checkpoint (the reference venv's python).

    olmo_core_checkpoint.py OLMO_CORE_STEP_DIR --out REPLICA_CHECKPOINT --replica BIN
                            [--path-map PREFIX=DIR ...] [--config CONFIG_JSON]

OLMO_CORE_STEP_DIR is what OLMo-core's Checkpointer writes (e.g. SAVE_FOLDER/step30):
  model_and_optim/   a torch.distributed.checkpoint directory: .metadata + __N_M.distcp
  train/rank0.pt     the trainer state (global_step, tokens, data loader position)
  config.json        the run's ExperimentConfig (ConfigSaverCallback); or pass --config

What is read, and how:
  - every tensor through torch.distributed.checkpoint's loader with OLMo-core's storage reader
    (olmo_core.distributed.checkpoint.load_state_dict, what OLMo-core resumes with), after
    checking that each file the .metadata names exists and holds the byte range it names;
  - model weights, AdamW exp_avg / exp_avg_sq (-> m, v) and the AdamW step, renamed to Hugging Face
    names by OLMo-core's own converter (olmo_core.nn.hf: get_hf_config, convert_state_to_hf),
    the model built from config.json on the meta device;
  - the trainer state: step, tokens, and the data loader's epoch and batches processed. Its
    dataset fingerprint (OLMo-core's, names and sizes) is checked against the token files with
    OLMo-core's own dataset class; replica's own fingerprint (content hashes) comes from
    `replica data info` on the same files;
  - the skip-step window: OLMo-core keeps SkipStepOptimizer's rolling losses and grad norms in
    memory only (they are not in its state dict), so a resumed OLMo-core run starts the window
    empty; the replica state does the same.

These are staged as a Hugging Face directory with optim.safetensors and state.json, which
`replica convert --from STAGE --to REPLICA_CHECKPOINT` writes as a checkpoint (MANIFEST.json,
checksums, DONE last), so nothing half-written is ever left at --out.

Bad input (a missing or truncated .distcp, a .metadata naming tensors the files lack, a missing
tensor, train state or config) exits 2 with a message naming the file; --out is not touched.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import olmo_core_tools


from olmo_core_tools import BadInput, map_path


def fail(msg):
    olmo_core_tools.fail("olmo_core_checkpoint.py", msg)


def check_dcp_files(dcp_dir):
    """Reads .metadata with OLMo-core's storage reader and checks that every byte range it names
    exists."""
    from olmo_core.distributed.checkpoint import get_checkpoint_metadata

    meta_path = os.path.join(dcp_dir, ".metadata")
    if not os.path.isfile(meta_path):
        raise BadInput(f"{meta_path}: missing (not a torch.distributed.checkpoint directory)")
    try:
        metadata = get_checkpoint_metadata(dcp_dir)
    except Exception as e:  # noqa: BLE001 - any unreadable metadata is bad input
        raise BadInput(f"{meta_path}: unreadable ({type(e).__name__}: {e})")
    stored = {}
    for index, info in metadata.storage_data.items():
        stored.setdefault(index.fqn, []).append(info)
    sizes = {}
    for fqn in metadata.state_dict_metadata:
        if fqn not in stored:
            raise BadInput(f"{meta_path}: names '{fqn}', which no .distcp file holds")
        for info in stored[fqn]:
            path = os.path.join(dcp_dir, info.relative_path)
            if path not in sizes:
                if not os.path.isfile(path):
                    raise BadInput(f"{path}: missing (.metadata stores '{fqn}' in it)")
                sizes[path] = os.path.getsize(path)
            if info.offset + info.length > sizes[path]:
                raise BadInput(f"{path}: truncated: {sizes[path]} bytes, but .metadata stores "
                               f"'{fqn}' at bytes {info.offset}..{info.offset + info.length}")
    return metadata


def load_tensors(dcp_dir, metadata, keys):
    import torch
    from olmo_core.distributed.checkpoint import load_state_dict
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    state = {}
    for key in keys:
        md = metadata.state_dict_metadata.get(key)
        if md is None:
            raise BadInput(f"{os.path.join(dcp_dir, '.metadata')}: no tensor '{key}' "
                           "(the model of config.json needs it)")
        if not isinstance(md, TensorStorageMetadata):
            raise BadInput(f"{os.path.join(dcp_dir, '.metadata')}: '{key}' is not a tensor")
        state[key] = torch.empty(md.size, dtype=md.properties.dtype)
    try:
        load_state_dict(dcp_dir, state)
    except Exception as e:  # noqa: BLE001
        raise BadInput(f"{dcp_dir}: torch.distributed.checkpoint could not read it "
                       f"({type(e).__name__}: {e})")
    return state


def replica_json(replica, *args):
    proc = subprocess.run([replica, *args, "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BadInput(f"{' '.join([replica, *args])} exited {proc.returncode}: "
                       f"{proc.stderr.strip()}")
    return json.loads(proc.stdout)


def stage(step_dir, stage_dir, replica, path_map, config_path):
    import torch
    from olmo_core.data import NumpyFSLDatasetConfig
    from olmo_core.nn.hf.config import get_hf_config
    from olmo_core.nn.hf.convert import convert_state_to_hf
    from olmo_core.nn.transformer import TransformerConfig
    from safetensors.torch import save_file

    config_path = config_path or os.path.join(step_dir, "config.json")
    if not os.path.isfile(config_path):
        raise BadInput(f"{config_path}: missing (the run's config.json; pass --config)")
    with open(config_path, "rb") as f:
        config_bytes = f.read()
    try:
        config = json.loads(config_bytes)
        model_cfg = TransformerConfig.from_dict(config["model"])
    except Exception as e:  # noqa: BLE001
        raise BadInput(f"{config_path}: not an OLMo-core ExperimentConfig ({type(e).__name__}: {e})")
    train_path = os.path.join(step_dir, "train", "rank0.pt")
    if not os.path.isfile(train_path):
        raise BadInput(f"{train_path}: missing (OLMo-core's trainer state)")
    try:
        train = torch.load(train_path, weights_only=False, map_location="cpu")
        world = int(train["world_size"])
        loader = train["data_loader"]
    except Exception as e:  # noqa: BLE001
        raise BadInput(f"{train_path}: unreadable trainer state ({type(e).__name__}: {e})")
    if world != 1:
        raise BadInput(f"{train_path}: world_size {world}; only one-rank data loader states are "
                       "read (each rank's file holds only its own position)")

    dcp_dir = os.path.join(step_dir, "model_and_optim")
    metadata = check_dcp_files(dcp_dir)
    model = model_cfg.build(init_device="meta")
    names = [n for n, _ in model.named_parameters()]
    keys = [f"model.{n}" for n in names]
    keys += [f"optim.state.{n}.{k}" for n in names for k in ("exp_avg", "exp_avg_sq", "step")]
    state = load_tensors(dcp_dir, metadata, keys)

    hf_config = get_hf_config(model)
    tm = config.get("train_module", {})
    seq_len = int(config["dataset"]["sequence_length"])
    hf_config.max_position_embeddings = int(tm.get("max_sequence_length", seq_len))
    tok = config["dataset"]["tokenizer"]
    for name in ("eos_token_id", "pad_token_id", "bos_token_id"):
        setattr(hf_config, name, tok.get(name))
    weights = convert_state_to_hf(hf_config, {n: state[f"model.{n}"] for n in names})
    m = convert_state_to_hf(hf_config, {n: state[f"optim.state.{n}.exp_avg"] for n in names})
    v = convert_state_to_hf(hf_config, {n: state[f"optim.state.{n}.exp_avg_sq"] for n in names})
    steps = {float(state[f"optim.state.{n}.step"]) for n in names}
    if len(steps) != 1:
        raise BadInput(f"{dcp_dir}: AdamW step differs between parameters: {sorted(steps)}")
    adam_step = int(steps.pop())

    os.makedirs(stage_dir)
    hf_config.to_json_file(os.path.join(stage_dir, "config.json"))
    save_file({k: t.float().contiguous() for k, t in weights.items()},
              os.path.join(stage_dir, "model.safetensors"))
    optim = {f"m.{k}": t.float().contiguous() for k, t in m.items()}
    optim.update({f"v.{k}": t.float().contiguous() for k, t in v.items()})
    optim["step"] = torch.tensor(adam_step, dtype=torch.int64)
    save_file(optim, os.path.join(stage_dir, "optim.safetensors"))

    # The token files, in the order OLMo-core read them: data_paths.txt of the checkpoint (what
    # the Checkpointer writes), else dataset.paths of config.json; mapped to local paths.
    paths_file = os.path.join(step_dir, "data_paths.txt")
    if os.path.isfile(paths_file):
        with open(paths_file, encoding="utf-8") as f:
            paths = [line.strip() for line in f if line.strip()]
    else:
        paths = list(config["dataset"].get("paths") or [])
    paths = [map_path(p, path_map) for p in paths]
    for p in paths:
        if not os.path.isfile(p):
            raise BadInput(f"{p}: token file of the checkpoint's data not found (use --path-map)")
    ds_dict = dict(config["dataset"])
    ds_dict["paths"] = paths
    ds_dict.pop("mix", None)
    ds_dict.pop("mix_base_dir", None)
    ds_dict["work_dir"] = tempfile.mkdtemp(prefix="olmo-core-work-")
    dataset = NumpyFSLDatasetConfig.from_dict(ds_dict).build()
    if loader.get("dataset_fingerprint") != dataset.fingerprint:
        raise BadInput(f"{train_path}: the data loader's dataset fingerprint "
                       f"{loader.get('dataset_fingerprint')} is not OLMo-core's fingerprint of "
                       f"the token files {paths} ({dataset.fingerprint})")
    dtype = {"uint16": "uint16", "uint32": "uint32"}[str(dataset.dtype.__name__)]
    info = replica_json(replica, "data", "info", *paths, "--seq-len", str(seq_len),
                        "--dtype", dtype, "--vocab-size", str(model_cfg.vocab_size))
    global_instances = int(config["data_loader"]["global_batch_size"]) // seq_len
    batches = int(loader["batches_processed"])
    # Before its first batch OLMo-core's loader has no epoch yet; the trainer's is the one it
    # starts.
    epoch = int(loader["epoch"] if loader.get("epoch") is not None else train["epoch"])
    param_dtype = (tm.get("dp_config") or {}).get("param_dtype")
    state_json = {
        "format": "replica-train-state", "version": 1,
        "step": int(train["global_step"]),
        "tokens": int(train["global_train_tokens_seen"]),
        "loader": {"version": 1, "dataset_type": "fsl", "seed": int(loader["seed"]),
                   "epoch": epoch, "batches_processed": batches,
                   "tokens_processed": batches * global_instances * seq_len,
                   "global_batch_instances": global_instances, "sequence_length": seq_len,
                   "num_instances": int(info["num_instances"]),
                   "dataset_fingerprint": info["fingerprint"]},
        "skip_step": {"losses": [], "grad_norms": []},
        "rng": {"init_seed": int(config["model"].get("init_seed", 0)), "draws_after_init": 0},
        "config_hash": "olmo-core config.json sha256 " + hashlib.sha256(config_bytes).hexdigest(),
        "trajectory_hash": "olmo-core",
        "world_size": world,
        "micro_batch_instances": int(tm["rank_microbatch_size"]) // seq_len,
        "adam_step": adam_step,
        "precision": "bf16" if param_dtype == "bfloat16" else "fp32",
        "non_finite": {"total": 0, "consecutive": 0, "first_step": 0},
    }
    if int(loader.get("tokens_processed", -1)) != state_json["loader"]["tokens_processed"]:
        raise BadInput(f"{train_path}: tokens_processed {loader.get('tokens_processed')} is not "
                       f"{batches} batches of {global_instances} x {seq_len}")
    with open(os.path.join(stage_dir, "state.json"), "w", encoding="utf-8") as f:
        json.dump(state_json, f, indent=2)
        f.write("\n")
    shutil.rmtree(ds_dict["work_dir"], ignore_errors=True)
    return state_json


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step_dir")
    ap.add_argument("--out", required=True)
    ap.add_argument("--replica", required=True, help="the replica binary")
    ap.add_argument("--path-map", action="append", default=[], metavar="PREFIX=DIR")
    ap.add_argument("--config", help="the run's config.json (default: STEP_DIR/config.json)")
    ap.add_argument("--json", action="store_true", help="print a summary as JSON")
    args = ap.parse_args()
    path_map = []
    for item in args.path_map:
        if "=" not in item:
            fail(f"--path-map {item}: expected PREFIX=DIR")
        path_map.append(tuple(item.split("=", 1)))
    if not os.path.isdir(args.step_dir):
        fail(f"{args.step_dir}: no such directory")
    parent = os.path.dirname(os.path.abspath(args.out)) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".olmo-core-stage-", dir=parent)
    try:
        st = stage(args.step_dir, os.path.join(tmp, "stage"), args.replica, path_map, args.config)
        proc = subprocess.run([args.replica, "convert", "--from", os.path.join(tmp, "stage"),
                               "--to", args.out, "--json"], capture_output=True, text=True)
        if proc.returncode != 0:
            fail(f"replica convert exited {proc.returncode}: {proc.stderr.strip()}")
    except BadInput as e:
        fail(str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {"from": args.step_dir, "to": args.out, "step": st["step"],
               "adam_step": st["adam_step"], "batches_processed":
               st["loader"]["batches_processed"], "precision": st["precision"]}
    print(json.dumps(summary) if args.json else
          f"read OLMo-core checkpoint {args.step_dir} (step {st['step']}) into {args.out}")


if __name__ == "__main__":
    main()

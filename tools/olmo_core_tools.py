"""What the OLMo-core tools beside it share (olmo_core_train.py, olmo_core_checkpoint.py,
replica_to_olmo_core.py): the bad-input error, --path-map's longest-prefix rule, and OLMo-core's
environment and trainer built in the order its own scripts build them. torch and OLMo-core are
imported inside the functions, so a tool's argument errors come before those imports."""
import os
import sys


class BadInput(Exception):
    pass


def fail(prog, msg):
    """The one-line refusal of the tools: `PROG: error: MSG` on stderr, exit 2."""
    print(f"{prog}: error: {msg}", file=sys.stderr)
    sys.exit(2)


def map_path(path, path_map):
    """`path` with the longest matching PREFIX of [(PREFIX, DIR)] replaced by DIR."""
    best = None
    for prefix, local in path_map:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, local)
    return best[1] + path[len(best[0]):] if best else path


def prepare_environment(bf16):
    """OLMo-core's training environment for one process. FSDP (the bf16 recipe) needs a process
    group: one process on the loopback interface, with gloo."""
    from olmo_core.train import prepare_training_environment
    backend = None
    if bf16:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 20000))
        for k in ("RANK", "LOCAL_RANK"):
            os.environ.setdefault(k, "0")
        for k in ("WORLD_SIZE", "LOCAL_WORLD_SIZE"):
            os.environ.setdefault(k, "1")
        backend = "gloo"
    prepare_training_environment(backend=backend, shared_filesystem=True)


def build_trainer(config):
    """seed_all(init_seed), then the model (on meta), train module, dataset, data loader and
    trainer of an ExperimentConfig, in that order (the RNG draws follow from it).
    Returns (train_module, trainer)."""
    from olmo_core.utils import seed_all
    seed_all(config.init_seed)
    model = config.model.build(init_device="meta")
    train_module = config.train_module.build(model)
    dataset = config.dataset.build()
    data_loader = config.data_loader.build(dataset, dp_process_group=train_module.dp_process_group)
    return train_module, config.trainer.build(train_module, data_loader)

#!/usr/bin/env python3
"""Builds the config.json of OLMo-core's official scripts with the installed olmo_core.

    official_configs.py --repo OLMO_CORE_GIT_DIR [--commit REV] --out DIR [SCRIPT ...]
    official_configs.py --expected DIR   (only the schedule facts of DIR/*.json, below)

Each SCRIPT is a path inside the OLMo-core repository (default: the four Olmo 3 7B stages under
src/scripts/official/OLMo3/). The script's text is read from the git directory at REV (a bare
repository, as the fetch tool brings it, works), loaded as a module, and its build_config(opts,
overrides) is called with the options OLMo-core's own CLI parser gives for
`--save-folder /tmp/olmo-core-save --dry-run` (data root: its default). The ExperimentConfig it
returns is written as OLMo-core's ConfigSaverCallback writes it (Config.as_config_dict, indent 2)
to DIR/<script stem>.json. Nothing from the repository is written anywhere else; the script runs
with no data and no network access.

Then (and with --expected alone) DIR/expected.json records, for each DIR/*.json, what OLMo-core
itself makes of it, read back with OLMo-core's own loader (ExperimentConfig.from_dict): the
parameter count (TransformerConfig.num_params), tokens per step (global_batch_size), the steps
of max_duration and hard_stop (Trainer._get_max_steps on a trainer at step 0: None for epochs,
which need the data), the scheduler's warm-up, and scheduler.get_lr(optim.lr, step, t_max) at
steps chosen from those numbers (0, 1, around the warm-up, the middle, around the hard stop and
t_max). tests/cli/olmo_core_official.sh holds `replica plan` to them.
"""
import argparse
import json
import os
import subprocess
import sys
import types

DEFAULT_SCRIPTS = [
    "src/scripts/official/OLMo3/OLMo-3-1025-7B-pretrain-1.py",
    "src/scripts/official/OLMo3/OLMo-3-1025-7B-pretrain-2.py",
    "src/scripts/official/OLMo3/OLMo-3-1025-7B-midtrain.py",
    "src/scripts/official/OLMo3/OLMo-3-1025-7B-long-context.py",
]


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def build(repo, rev, script):
    from olmo_core.script_utils import _parse_args, get_cli_parser

    source = git(repo, "show", f"{rev}:{script}")
    module = types.ModuleType(os.path.splitext(os.path.basename(script))[0].replace("-", "_"))
    module.__file__ = script
    exec(compile(source, script, "exec"), module.__dict__)
    saved = sys.argv
    sys.argv = [script, "--save-folder", "/tmp/olmo-core-save", "--dry-run"]
    try:
        opts, overrides = _parse_args(get_cli_parser())
    finally:
        sys.argv = saved
    return module.build_config(opts, overrides)


def facts(config_dict):
    """What OLMo-core makes of one config.json (see the module docstring)."""
    from types import SimpleNamespace

    from olmo_core.script_utils import ExperimentConfig
    from olmo_core.train.trainer import Trainer

    c = ExperimentConfig.from_dict(json.loads(json.dumps(config_dict)))
    tokens_per_step = c.data_loader.global_batch_size
    state = SimpleNamespace(global_step=0, global_train_tokens_seen=0, epoch=1,
                            tokens_per_batch=tokens_per_step,
                            data_loader=SimpleNamespace(total_batches=None,
                                                        batches_in_epoch=lambda e: None))
    t_max = Trainer._get_max_steps(state, c.trainer.max_duration)
    hard = (Trainer._get_max_steps(state, c.trainer.hard_stop)
            if c.trainer.hard_stop is not None else None)
    if c.trainer.hard_stop is not None and hard is None:
        steps = None  # a hard stop in epochs: the number of steps needs the data
    else:
        steps = t_max if hard is None else (hard if t_max is None else min(hard, t_max))
    s = c.train_module.scheduler
    warmup = getattr(s, "warmup", None)
    if warmup is None and getattr(s, "warmup_fraction", None) is not None and t_max is not None:
        warmup = round(t_max * s.warmup_fraction)
    lr = c.train_module.optim.lr
    at = {0, 1}
    if warmup is not None:
        at |= {max(warmup - 1, 0), warmup, warmup + 1}
    if t_max is not None:
        at |= {t_max // 2, t_max - 1, t_max}
    if steps is not None:
        at |= {steps - 1, steps, steps + 1}
    at = sorted(x for x in at if x >= 0)
    lr_at = {str(x): float(s.get_lr(lr, x, t_max)) for x in at} if t_max is not None else {}
    return {"params": c.model.num_params, "tokens_per_step": tokens_per_step,
            "t_max": t_max, "hard_stop_steps": hard, "steps": steps, "warmup": warmup,
            "scheduler": type(s).__name__, "lr": lr, "lr_at": lr_at}


def write_expected(out):
    expected = {}
    for name in sorted(os.listdir(out)):
        if name.endswith(".json") and name != "expected.json":
            with open(os.path.join(out, name)) as f:
                expected[name] = facts(json.load(f))
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2, sort_keys=True)
        f.write("\n")
    return expected


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", help="OLMo-core git directory")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--out")
    ap.add_argument("--expected", help="only write DIR/expected.json for the configs in DIR")
    ap.add_argument("scripts", nargs="*", default=DEFAULT_SCRIPTS)
    args = ap.parse_args()
    if args.expected:
        write_expected(args.expected)
        return
    if not args.repo or not args.out:
        ap.error("--repo and --out are required (or --expected DIR)")
    os.makedirs(args.out, exist_ok=True)
    commit = git(args.repo, "rev-parse", args.commit).strip()
    for script in args.scripts:
        config = build(args.repo, commit, script)
        stem = os.path.splitext(os.path.basename(script))[0]
        path = os.path.join(args.out, stem + ".json")
        with open(path, "w") as f:
            json.dump(config.as_config_dict(), f, indent=2)
            f.write("\n")
        print(f"{path}: {script} at {commit}", file=sys.stderr)
    write_expected(args.out)
    print(commit)


if __name__ == "__main__":
    main()

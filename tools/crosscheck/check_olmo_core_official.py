#!/usr/bin/env python3
"""Crosscheck area olmo_core_official: the official Olmo 3 7B stage configs, as OLMo-core's own
scripts build them, planned by replica against OLMo-core's own objects.

    check_olmo_core_official.py --replica build/replica --work DIR [--regen-only]

With OLMO_CORE_REPO set to a git directory of allenai/OLMo-core (the commit in
tests/data/olmo-core/official/README.md), the four configs are rebuilt from its
src/scripts/official/OLMo3 scripts with the installed olmo_core (official_configs.py) and compared
with the committed ones; without it that row says it was skipped. Then OLMo-core's facts of each
committed config (official_configs.facts: num_params, global batch, the trainer's steps, the
scheduler's warm-up and get_lr) are recomputed live and compared with the committed expected.json,
and `replica plan` is held to them: parameters, tokens per step and steps equal, every LR the same
double.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import official_configs  # noqa: E402
from common import emit, log, run_replica  # noqa: E402

AREA = "olmo_core_official"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OFFICIAL = os.path.join(REPO, "tests", "data", "olmo-core", "official")
COMMIT = "fa6c5014c9f6e9ee789da2d9c20d5126fee8df0d"


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--regen-only", action="store_true")
    args = ap.parse_args()
    work = os.path.join(args.work, AREA)
    os.makedirs(work, exist_ok=True)
    names = sorted(n for n in os.listdir(OFFICIAL) if n.endswith(".json") and n != "expected.json")

    repo = os.environ.get("OLMO_CORE_REPO")
    if repo:
        log(f"{AREA}: rebuilding the official configs from {repo} at {COMMIT}")
        for script in official_configs.DEFAULT_SCRIPTS:
            config = official_configs.build(repo, COMMIT, script)
            name = os.path.splitext(os.path.basename(script))[0] + ".json"
            same = (json.loads(json.dumps(config.as_config_dict())) ==
                    load(os.path.join(OFFICIAL, name)))
            emit(AREA, name, "regenerated vs committed (the script's config.json)",
                 "identical" if same else "differs", "identical", same)
    else:
        emit(AREA, "official scripts", "regenerated vs committed (the script's config.json)",
             "skipped: OLMO_CORE_REPO not set", "identical", True)

    expected = load(os.path.join(OFFICIAL, "expected.json"))
    live = {n: official_configs.facts(load(os.path.join(OFFICIAL, n))) for n in names}
    for n in names:
        same = live[n] == expected.get(n)
        emit(AREA, n, "OLMo-core's facts regenerated vs committed expected.json",
             "identical" if same else "differs", "identical", same)
    if args.regen_only:
        return

    for n in names:
        e = live[n]
        cmd = ["plan", os.path.join(OFFICIAL, n), "--lr-at",
               ",".join(sorted(e["lr_at"], key=int))]
        if "long-context" in n:
            cmd.append("--allow-unsupported")
        if e["steps"] is None:
            cmd += ["--set", f"train.max_steps={e['t_max']}"]
        p = run_replica(args.replica, *cmd)
        for key in ("params", "tokens_per_step") + (("steps",) if e["steps"] is not None else ()):
            emit(AREA, n, f"replica plan {key} vs OLMo-core", p[key], f"== {e[key]}",
                 p[key] == e[key])
        diff = max(abs(p["lr_at"][s] - v) for s, v in e["lr_at"].items())
        same = all(p["lr_at"][s] == v for s, v in e["lr_at"].items())
        emit(AREA, n, f"replica plan lr at {len(e['lr_at'])} steps vs {e['scheduler']}.get_lr: "
             "max abs difference", diff, "== 0 (the same doubles)", same)


if __name__ == "__main__":
    main()

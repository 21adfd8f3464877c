#!/usr/bin/env python3
"""Writes tests/data/reference-runs/: one training curve in the formats `replica compare` and
`replica plot` read for a reference run (docs/metrics.md, "Reference runs").

The console log and the metrics_step<N>.json files are written by OLMo-core's own code
(ConsoleLoggerCallback.log_metrics through olmo_core.utils.setup_logging's plain formatter, and
MetricSaverCallback), driven by a stand-in trainer; the metric values follow a fixed formula, and
metrics.jsonl holds the same values at full precision under replica's names, as replica's trainer
writes them. The W&B CSV files follow W&B's export layouts (a chart export: "Step" and
"<run> - <metric>" columns with __MIN/__MAX; a history export: "_step", "_runtime", metric
columns); W&B itself is not needed.

    usage: <reference-venv>/bin/python tools/make_reference_curves.py OUT_DIR
"""
import csv
import datetime
import io
import json
import logging
import math
import os
import sys
import types

from olmo_core import utils
from olmo_core.train.callbacks.console_logger import ConsoleLoggerCallback
from olmo_core.train.callbacks.metric_saver import MetricSaverCallback

STEPS = 20
MAX_STEPS = 20


def values(step):
    ce = 10.5 - 4.0 * math.log1p(step) / math.log1p(STEPS) + 0.01 * math.sin(step)
    z = 1.5e-5 * (1 + 1 / step)
    return {
        "train/CE loss": ce,
        "train/PPL": math.exp(ce),
        "train/Z loss": z,
        "optim/total grad norm": 3.0 / math.sqrt(step),
        "optim/LR (group 0)": 3e-3 * min(step, 5) / 5,
        "optim/step skipped": 0.0,
        "throughput/total tokens": 2048 * step,
        "throughput/device/TPS": 1300.0 + step,
    }


def main(out):
    os.makedirs(out, exist_ok=True)
    log_path = os.path.join(out, "olmo_core_console.log")
    stream = io.StringIO()
    os.environ["OLMO_RICH_LOGGING"] = "0"
    utils.setup_logging(force=True)
    handler = logging.getLogger().handlers[0]
    handler.setStream(stream)

    trainer = types.SimpleNamespace(
        max_steps=MAX_STEPS, epoch=1, hard_stop=None,
        training_progress=types.SimpleNamespace(time_remaining=datetime.timedelta(seconds=90)),
        save_folder=out)
    console = ConsoleLoggerCallback(log_interval=1)
    console._trainer = trainer
    saver = MetricSaverCallback(save_interval=5)
    saver._trainer = trainer
    trainer.write_file = lambda name, contents: (
        open(os.path.join(out, name), "w").write(contents), os.path.join(out, name))[1]

    def run(steps):
        for step in steps:
            m = values(step)
            console.log_metrics(step, m)
            saver.log_metrics(step, m)
            logging.getLogger("olmo_core.train.trainer").info("Saving checkpoint ...")

    run(range(1, 13))
    # A restart from the checkpoint of step 10: steps 11 and 12 are logged again.
    logging.getLogger("olmo_core.train.trainer").info("Resuming from checkpoint at step 10")
    run(range(11, STEPS + 1))
    with open(log_path, "w") as f:
        f.write(stream.getvalue())

    with open(os.path.join(out, "metrics.jsonl"), "w") as f:
        for step in range(1, STEPS + 1):
            m = values(step)
            f.write(json.dumps({
                "step": step, "loss": m["train/CE loss"] + m["train/Z loss"],
                "ce_loss": m["train/CE loss"], "z_loss": m["train/Z loss"],
                "grad_norm": m["optim/total grad norm"], "lr": m["optim/LR (group 0)"],
                "tokens": m["throughput/total tokens"], "skipped": False,
                "tokens_per_s": m["throughput/device/TPS"]}) + "\n")

    names = ["train/CE loss", "train/Z loss", "optim/total grad norm", "optim/LR (group 0)"]
    with open(os.path.join(out, "wandb_chart.csv"), "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        header = ["Step"]
        for n in names:
            header += [f"olmo-ref - {n}", f"olmo-ref - {n}__MIN", f"olmo-ref - {n}__MAX"]
        w.writerow(header)
        for step in range(1, STEPS + 1):
            m = values(step)
            row = [step]
            for n in names:
                row += [repr(m[n])] * 3
            w.writerow(row)
    with open(os.path.join(out, "wandb_history.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["_step", "_runtime", "_timestamp"] + names)
        for step in range(1, STEPS + 1):
            m = values(step)
            # W&B leaves a cell empty where a metric was not logged at that step.
            w.writerow([step, 10.0 * step, 1.7e9 + step] +
                       [repr(m[n]) if not (n == "optim/total grad norm" and step == 7) else ""
                        for n in names])


if __name__ == "__main__":
    main(sys.argv[1])

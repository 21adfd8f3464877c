#!/usr/bin/env python3
"""The data-order area's cases and replica's side of them, Python standard library only, so both
the live crosscheck (check_data_order.py) and `make test` (tests/cli/data_order_reference.sh,
against the committed tests/data/reference/data_order) use the same code.

replica's answers for a case: `replica data batch G --data-paths ... --json` (global batch G of
the file list; rank r of R reads positions r, r + R, ... of it) and, for trainer cases, what
`replica train --dump-batches` fed at each step on 1, 2 and 8 ranks (mpirun).

  usage (make test): data_order_replica.py --replica BIN --reference DIR --work DIR
  prints FAIL lines and exits 1 when replica differs from the committed OLMo-core results.
"""
import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INPUTS = ["data/corpus/sotu.jsonl.zst", "data/corpus/moby_dick.jsonl.zst",
          "data/corpus/heldout_sotu.jsonl.zst", "tests/data/oracles/tokenizer/dolma2-public.jsonl",
          "tests/data/reference/tokenizer/generated.jsonl"]
TOKEN_SETS = {
    "u32": {"tokenizer": "dolma2", "dtype": "uint32", "vocab_size": 100278, "eos": 100257,
            "pad": 100277},
    "u16": {"tokenizer": "tests/data/tokenizer/tiny_bytelevel_bpe.tokenizer.json",
            "dtype": "uint16", "vocab_size": 265, "eos": 263, "pad": 264},
}
U64_MAX = (1 << 64) - 1
# name, token set, files (stems, in order), T, I (instances per global batch), seeds, epochs,
# world sizes; "trainer": also trained by `replica train --dump-batches` for B + 2 steps (every
# batch of epoch 1 and the first two of epoch 2, B = batches per epoch).
CASES = [
    {"name": "u32-corpus-T128-I64", "set": "u32", "files": ["sotu", "moby_dick", "heldout_sotu"],
     "seq_len": 128, "global_batch": 64, "seeds": [0, 34521, (1 << 32) + 5], "epochs": [1, 2],
     "worlds": [1, 2, 8]},
    {"name": "u32-mixed-sizes-T1024-I8", "set": "u32",
     "files": ["dolma2-public", "heldout_sotu", "generated", "moby_dick"], "seq_len": 1024,
     "global_batch": 8, "seeds": [7, U64_MAX], "epochs": [1, 3], "worlds": [1, 2, 8]},
    {"name": "u16-corpus-T512-I40", "set": "u16", "files": ["moby_dick", "heldout_sotu", "sotu"],
     "seq_len": 512, "global_batch": 40, "seeds": [1, (1 << 33) + 1], "epochs": [1, 2],
     "worlds": [1, 2, 8]},
    {"name": "u16-trainer-T256-I48", "set": "u16", "files": ["dolma2-public", "generated"],
     "seq_len": 256, "global_batch": 48, "seeds": [(1 << 32) + 5], "epochs": [1, 2],
     "worlds": [1, 2, 8], "trainer": True},
    {"name": "u32-trainer-T32-I16", "set": "u32", "files": ["dolma2-public"], "seq_len": 32,
     "global_batch": 16, "seeds": [5], "epochs": [1, 2], "worlds": [1, 2], "trainer": True},
]


def stem(path):
    return os.path.basename(path).split(".")[0]


def make_token_files(replica, out_dir):
    """`replica tokenize` of INPUTS for each token set into out_dir/<set>/; {set: {stem: path}}."""
    files = {}
    out_dir = os.path.abspath(out_dir)
    for name, s in TOKEN_SETS.items():
        d = os.path.join(out_dir, name)
        shutil.rmtree(d, ignore_errors=True)
        tok = s["tokenizer"] if s["tokenizer"] == "dolma2" else os.path.join(REPO, s["tokenizer"])
        subprocess.run([replica, "tokenize", "--tokenizer", tok,
                        *[os.path.join(REPO, p) for p in INPUTS], "--out", d, "--dtype", s["dtype"],
                        "--no-progress", "--threads", "2"], check=True, capture_output=True)
        files[name] = {stem(p): os.path.join(d, stem(p) + ".npy") for p in INPUTS}
    return files


def file_digests(files):
    out = {}
    for name, stems in files.items():
        for st, path in stems.items():
            with open(path, "rb") as f:
                data = f.read()
            out[f"{name}/{st}"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return out


def ids_digest(rows):
    """sha256 of a batch of token-id rows as little-endian int32 (what replica feeds)."""
    flat = [int(t) for row in rows for t in row]
    return hashlib.sha256(struct.pack(f"<{len(flat)}i", *flat)).hexdigest()


def paths_file(case, files, work):
    path = os.path.join(work, case["name"] + ".data_paths.txt")
    with open(path, "w", encoding="utf-8") as f:
        for st in case["files"]:
            f.write(files[case["set"]][st] + "\n")
    return path


def replica_batch(replica, case, files, work, seed, global_batch):
    s = TOKEN_SETS[case["set"]]
    cmd = [replica, "data", "batch", str(global_batch), "--data-paths", paths_file(case, files, work),
           "--seq-len", str(case["seq_len"]), "--dtype", s["dtype"], "--seed", str(seed),
           "--global-batch", str(case["global_batch"]), "--tokens", str(case["seq_len"]),
           "--tokenizer", "none", "--vocab-size", str(s["vocab_size"]), "--eos-id", str(s["eos"]),
           "--pad-id", str(s["pad"]), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def compare_lookup(replica, case, files, work, olmo):
    """replica data batch against OLMo-core's result for one case: [(what, value, bound, ok)]."""
    rows = []
    first = None
    for seed, epochs in olmo["seeds"].items():
        total = bad = 0
        where = ""
        for epoch, e in epochs.items():
            for b in e["batches"]:
                got = replica_batch(replica, case, files, work, int(seed), b["global_batch"])
                first = first or got
                ok_shape = (got["epoch"] == int(epoch) and got["batch_in_epoch"] == b["batch"] and
                            got["batches_per_epoch"] == e["batches_per_epoch"])
                inst = [i["instance"] for i in got["instances"]]
                toks = [i["tokens"] for i in got["instances"]]
                for world, per_rank in b["ranks"].items():
                    R = int(world)
                    for r, want in enumerate(per_rank):
                        total += 1
                        same = (ok_shape and inst[r::R] == want and
                                ids_digest(toks[r::R]) == b["sha256"][world][r])
                        if not same:
                            bad += 1
                            where = where or f"epoch {epoch} batch {b['batch']} world {R} rank {r}"
        rows.append((f"seed {seed}: replica data batch vs OLMo-core loader, instance indices and "
                     "token ids per rank",
                     f"identical ({total} rank batches)" if not bad else
                     f"{bad} of {total} rank batches differ (first: {where})",
                     "identical", bad == 0))
    rows.append(("OLMo-core dataset fingerprint (v2.0) and instance count: replica data batch",
                 f"{first['olmo_core_fingerprint'][:16]}…, {first['num_instances']} vs "
                 f"{olmo['fingerprint'][:16]}…, {olmo['num_instances']}", "equal",
                 first["olmo_core_fingerprint"] == olmo["fingerprint"] and
                 first["num_instances"] == olmo["num_instances"]))
    return rows


def mpirun_prefix(world):
    if world == 1:
        return []
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        return None
    cmd = [mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(world)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def trainer_config(case, files, seed, steps, path):
    s = TOKEN_SETS[case["set"]]
    micro = case["global_batch"] // max(case["worlds"])
    paths = ", ".join(json.dumps(files[case["set"]][st]) for st in case["files"])
    text = f"""model: {{vocab_size: {s['vocab_size']}, hidden_size: 16, intermediate_size: 32,
        num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1,
        rms_norm_eps: 1.0e-6, rope_theta: 10000, sliding_window: 8,
        eos_token_id: {s['eos']}, pad_token_id: {s['pad']}}}
data: {{paths: [{paths}], seq_len: {case['seq_len']}, seed: {seed}, dtype: {s['dtype']}}}
train: {{max_steps: {steps}, global_batch_instances: {case['global_batch']},
        micro_batch_instances: {micro}, threads: 1, log_interval: 1000}}
optim: {{lr: 1.0e-3}}
checkpoint: {{interval: 1000}}
"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def compare_trainer(replica, case, files, work, olmo):
    """What `replica train --dump-batches` fed at each step on every world size of the case,
    against OLMo-core's batches of the same steps: [(what, value, bound, ok)]."""
    rows = []
    env = dict(os.environ, OMPI_MCA_btl="self,vader", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMP_WAIT_POLICY="passive")
    for seed, epochs in olmo["seeds"].items():
        steps = [(int(ep), b) for ep, e in sorted(epochs.items(), key=lambda x: int(x[0]))
                 for b in e["batches"]]
        config = os.path.join(work, f"{case['name']}-{seed}.yaml")
        trainer_config(case, files, seed, len(steps), config)
        for world in case["worlds"]:
            what = (f"seed {seed}, {world} rank(s): replica train --dump-batches (steps 1-"
                    f"{len(steps)}) vs OLMo-core loader, instance indices and token ids per rank")
            prefix = mpirun_prefix(world)
            if prefix is None:
                rows.append((what, "not run: mpirun not found", "identical", False))
                continue
            run_dir = os.path.join(work, f"{case['name']}-{seed}-w{world}")
            dump = run_dir + ".dump"
            shutil.rmtree(run_dir, ignore_errors=True)
            shutil.rmtree(dump, ignore_errors=True)
            proc = subprocess.run(prefix + [replica, "train", config, "--run-dir", run_dir,
                                            "--dump-batches", dump, "--quiet"],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise RuntimeError(f"replica train ({world} ranks) exited {proc.returncode}: "
                                   f"{proc.stderr[-2000:]}")
            total = bad = 0
            where = ""
            for r in range(world):
                with open(os.path.join(dump, f"rank-{r}.jsonl"), encoding="utf-8") as f:
                    fed = [json.loads(line) for line in f if line.strip()]
                if len(fed) != len(steps):
                    bad += 1
                    where = where or f"rank {r} dumped {len(fed)} steps, expected {len(steps)}"
                for line, (ep, b) in zip(fed, steps):
                    total += 1
                    if (line["instances"] != b["ranks"][str(world)][r] or
                            line["input_ids_sha256"] != b["sha256"][str(world)][r]):
                        bad += 1
                        where = where or f"step {line['step']} rank {r}"
            rows.append((what, f"identical ({total} rank batches)" if not bad else
                         f"{bad} of {total} rank batches differ (first: {where})",
                         "identical", bad == 0))
    return rows


def epoch_zero(replica):
    """replica's refusal of epoch 0: (exit code, message)."""
    proc = subprocess.run([replica, "data", "order", "--instances", "16", "--seed", "1", "--epoch",
                           "0", "--json"], capture_output=True, text=True)
    return proc.returncode, proc.stderr.strip(), proc.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--reference", required=True, help="tests/data/reference/data_order")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    a.work = os.path.abspath(a.work)
    os.makedirs(a.work, exist_ok=True)
    with open(os.path.join(a.reference, "olmo_core.json"), encoding="utf-8") as f:
        ref = json.load(f)
    with open(os.path.join(a.reference, "token_files.json"), encoding="utf-8") as f:
        want_files = json.load(f)
    failures = []
    files = make_token_files(a.replica, os.path.join(a.work, "tokens"))
    got_files = file_digests(files)
    for k, v in want_files.items():
        if got_files.get(k) != v:
            failures.append(f"token file {k}: {got_files.get(k)}, the reference read {v}")
    for case in CASES:
        olmo = ref["cases"][case["name"]]
        rows = compare_lookup(a.replica, case, files, a.work, olmo)
        if case.get("trainer"):
            rows += [r for r in compare_trainer(a.replica, case, files, a.work, olmo)
                     if not r[1].startswith("not run")]
        for what, value, _, ok in rows:
            print(("ok  " if ok else "FAIL") + f" {case['name']}: {what}: {value}")
            if not ok:
                failures.append(f"{case['name']}: {what}: {value}")
    rc, msg, out = epoch_zero(a.replica)
    if rc != 2 or out or "'epoch' must be at least 1" not in msg or "(got 0)" not in msg:
        failures.append(f"epoch 0: exit {rc}, message {msg!r} (OLMo-core: {ref['epoch_zero']!r})")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

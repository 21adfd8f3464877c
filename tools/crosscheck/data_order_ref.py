"""The data-order area's inputs and OLMo-core's side, shared by generate_data_order.py and
check_data_order.py (docs/crosscheck.md, "data order").

Token files are replica's own (data_order_replica.make_token_files): `replica tokenize` of the
bundled corpus, the tokenizer oracle texts and the tokenizer reference's generated texts, once with
dolma2 (uint32) and once with the tiny byte-level tokenizer of tests/data/tokenizer as uint16.
OLMo-core reads them through its own
`NumpyFSLDatasetConfig(...).build()` and `NumpyDataLoaderConfig(...).build(dataset)`; for data-parallel
world sizes above 1 the loader is made by `NumpyDataLoaderBase.wrap_numpy_dataset` with the same
arguments `NumpyDataLoaderConfig.build` passes it, dp_world_size and dp_rank given instead of read
from a process group (one process plays every rank). Its caches go to the given work directory.
"""
import os
import random

from data_order_replica import CASES, TOKEN_SETS, ids_digest  # noqa: F401  (the shared spec)


def batches_to_check(case, seed, epoch, per_epoch):
    """Batch rows of one epoch: 0, 1, one drawn at random (seeded by the case) and the last; for a
    trainer case every batch the trainer reaches."""
    if case.get("trainer"):
        return list(range(per_epoch)) if epoch == 1 else [0, 1]
    rng = random.Random(f"{case['name']}/{seed}/{epoch}")
    mid = [rng.randrange(2, per_epoch - 1)] if per_epoch > 3 else []
    return sorted(set([0, 1] + mid + [per_epoch - 1]) & set(range(per_epoch)))


def olmo_core_dataset(case, files, work_dir):
    from olmo_core.data import NumpyDatasetDType, NumpyFSLDatasetConfig, TokenizerConfig
    s = TOKEN_SETS[case["set"]]
    tok = TokenizerConfig(vocab_size=s["vocab_size"], eos_token_id=s["eos"], pad_token_id=s["pad"])
    cfg = NumpyFSLDatasetConfig(tokenizer=tok, paths=[files[case["set"]][f] for f in case["files"]],
                                sequence_length=case["seq_len"], dtype=NumpyDatasetDType(s["dtype"]),
                                work_dir=work_dir)
    return cfg.build()


def olmo_core_loader(dataset, case, seed, world, rank, work_dir):
    from olmo_core.data import NumpyDataLoaderConfig
    from olmo_core.data.collator import DataCollator
    from olmo_core.data.data_loader import NumpyDataLoaderBase
    tokens = case["global_batch"] * case["seq_len"]  # OLMo-core's global batch is in tokens
    config = NumpyDataLoaderConfig(global_batch_size=tokens, seed=seed, work_dir=work_dir,
                                   num_workers=0, target_device_type="cpu")
    if world == 1:
        return config.build(dataset)
    dataset.prepare()
    return NumpyDataLoaderBase.wrap_numpy_dataset(
        dataset, global_batch_size=tokens,
        collator=DataCollator(pad_token_id=dataset.pad_token_id, vocab_size=dataset.vocab_size),
        work_dir=work_dir, dp_world_size=world, dp_rank=rank, fs_local_rank=0, seed=seed,
        num_workers=0, target_device_type="cpu")


def olmo_core_case(case, files, work_dir):
    """OLMo-core's answer for one case: {"num_instances", "fingerprint", "seeds": {seed: {epoch:
    {"batches_per_epoch", "batches": [{"batch", "global_batch", "ranks": {R: [instances per rank]},
    "sha256": {R: [digest per rank]}}]}}}}. Batches 0 and 1 come from iterating the loader (what
    OLMo-core's trainer does), the others from indexing it."""
    os.makedirs(work_dir, exist_ok=True)
    ds = olmo_core_dataset(case, files, work_dir)
    out = {"num_instances": len(ds), "fingerprint": ds.fingerprint, "seeds": {}}
    for seed in case["seeds"]:
        per_seed = out["seeds"].setdefault(str(seed), {})
        for world in case["worlds"]:
            for rank in range(world):
                loader = olmo_core_loader(ds, case, seed, world, rank, work_dir)
                for epoch in case["epochs"]:
                    loader.reshuffle(epoch=epoch)
                    B = loader.total_batches
                    e = per_seed.setdefault(str(epoch), {"batches_per_epoch": B, "batches": {}})
                    wanted = batches_to_check(case, seed, epoch, B)
                    got = {}
                    it = iter(loader)
                    for b in (0, 1):
                        if b in wanted:
                            got[b] = next(it)
                    loader.reset()
                    for b in wanted:
                        if b not in got:
                            got[b] = loader[b]
                    for b in wanted:
                        row = e["batches"].setdefault(b, {"batch": b,
                                                          "global_batch": (epoch - 1) * B + b,
                                                          "ranks": {}, "sha256": {}})
                        row["ranks"].setdefault(str(world), []).append(
                            [int(i) for i in got[b]["index"].tolist()])
                        row["sha256"].setdefault(str(world), []).append(
                            ids_digest(got[b]["input_ids"].numpy().tolist()))
        for e in per_seed.values():
            e["batches"] = [e["batches"][b] for b in sorted(e["batches"])]
    return out


def olmo_core_epoch_zero(case, files, work_dir):
    """The message OLMo-core's loader gives for epoch 0."""
    ds = olmo_core_dataset(case, files, work_dir)
    loader = olmo_core_loader(ds, case, case["seeds"][0], 1, 0, work_dir)
    try:
        loader.reshuffle(epoch=0)
    except ValueError as e:
        return str(e)
    return None

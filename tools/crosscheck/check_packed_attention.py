"""Crosscheck area packed_attention: replica's packed rows (intra-document masking) beside the
reference stack's.

    <venv>/bin/python tools/crosscheck/check_packed_attention.py --replica BUILD/replica --work DIR

Per case of packed_attention.CASES: OLMo-core's own train_batch on the packed batch with doc_lens
(its CPU backend refuses intra-document masking: the row records the refusal); OLMo-core's model
on each document alone in its train module's loop (packed_attention.py) written as a dump with the
batch's cu_doc_lens and compared with `replica parity --grads --z-loss 1e-5` (logits, CE, z-loss,
gradients); transformers' Olmo3ForCausalLM on the packed rows with restarting position_ids against
the same OLMo-core result and against replica (logits and the gradients of the mean CE); the same
rows without documents as a control (far from both); the regenerated dumps against the committed
ones (generate_packed_attention.py). Rows on stdout (common.emit), progress on stderr; bounds are
the olmo_core_model area's (docs/crosscheck.md "Packed attention").
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_olmo_core_model as com  # noqa: E402
import common  # noqa: E402
import generate_packed_attention as gen  # noqa: E402
import hf_run  # noqa: E402
import olmo_core_model as ocm  # noqa: E402
import packed_attention as pa  # noqa: E402

AREA = "packed_attention"
COMMITTED = os.path.join(common.REPO, "tests", "data", "reference", AREA)
BOUND = com.BOUND


def check_case(name, replica, work, emit):
    model_dir = os.path.join(common.REPO, pa.CASES[name][0])
    msg = pa.olmo_core_refusal(name)
    refused = msg is not None and "doesn't support intra-document masking" in msg
    emit(name, "OLMo-core train_batch with doc_lens on CPU (torch backend)", msg or "ran",
         "refuses intra-document masking (its flash backends, which take it, need a GPU)", refused)

    start = time.time()
    r = pa.olmo_core_per_document(name)
    common.log(f"{AREA}: {name}: OLMo-core per document in {time.time() - start:.1f} s "
               f"({len(pa.documents(r['cu_doc_lens']))} documents)")
    tensors, meta = pa.olmo_core_dump(r)
    dump = os.path.join(work, f"{name}.safetensors")
    common.write_safetensors(dump, tensors, meta)
    p = com.parity(replica, model_dir, dump, grads=True, z_loss=ocm.Z_LOSS_MULTIPLIER)
    emit(name, "documents replica packs by (the dump's cu_doc_lens)", p.get("documents"),
         f"== {len(pa.documents(r['cu_doc_lens']))}",
         p.get("documents") == len(pa.documents(r["cu_doc_lens"])))
    com.cross_rows(name, p, r, emit, grads=True)

    t = pa.transformers_packed(name, work)
    kl = common.kl_stats(r["logits"], t["logits"])
    emit(name, "KL max: transformers packed (position_ids) vs OLMo-core per document",
         kl["kl_max"], f"<= {BOUND['kl_max']['tiny']:g} (fp32 noise)",
         kl["kl_max"] <= BOUND["kl_max"]["tiny"])
    tdump = os.path.join(work, f"transformers-{name}.safetensors")
    ids, labels, cu = pa.packed_batch(name)
    hf_run.write_dump(tdump, ids, labels, t, pa.CASES[name][0], "float32", with_grads=True)
    tensors = common.read_safetensors(tdump)
    tensors["cu_doc_lens"] = cu.astype(np.int64)
    common.write_safetensors(tdump, tensors, {"format": "pt"})
    pt = com.parity(replica, model_dir, tdump, grads=True)
    emit(name, "KL max: replica packed vs transformers packed", pt["kl_max"],
         f"<= {BOUND['kl_max']['tiny']:g} (fp32 noise)", pt["kl_max"] <= BOUND["kl_max"]["tiny"])
    d = abs(pt["loss"] - pt["loss_ref"])
    emit(name, "|CE: replica packed - transformers packed|", d, f"<= {BOUND['ce']:g}",
         d <= BOUND["ce"])
    emit(name, "grad max rel err (mean CE): replica packed vs transformers packed",
         pt["grad_max_rel_err"], f"<= {BOUND['grad']:g} ({pt['grad_worst_tensor']})",
         pt["grad_max_rel_err"] <= BOUND["grad"])

    u = pa.transformers_packed(name, work, unpacked=True)
    ku = common.kl_stats(r["logits"], u["logits"])
    emit(name, "control: KL max of the same rows unpacked (transformers) vs OLMo-core per "
         "document", ku["kl_max"], ">= 1e-3 (the masking matters on this batch)",
         ku["kl_max"] >= 1e-3)
    regenerated_vs_committed(name, dump, emit)
    if name in gen.TRANSFORMERS_CASES:
        new = os.path.join(work, f"transformers-{name}.regen.safetensors")
        gen.transformers_dump(new, name, work)
        old = os.path.join(COMMITTED, f"transformers-{name}.safetensors")
        if os.path.exists(old):
            k = common.kl_stats(common.read_safetensors(old)["logits"],
                                common.read_safetensors(new)["logits"])
            emit(name, "regenerated vs committed: transformers packed logits KL max",
                 k["kl_max"], f"<= {BOUND['kl_max']['tiny']:g}",
                 k["kl_max"] <= BOUND["kl_max"]["tiny"])
        else:
            emit(name, f"regenerated vs committed: {os.path.relpath(old, common.REPO)}",
                 "missing", "present", False)


def regenerated_vs_committed(name, dump, emit):
    path = os.path.join(COMMITTED, f"{name}.safetensors")
    if not os.path.exists(path):
        emit(name, f"regenerated vs committed: {os.path.relpath(path, common.REPO)}", "missing",
             "present", False)
        return
    new, old = common.read_safetensors(dump), common.read_safetensors(path)
    same = all(np.array_equal(new[k], old[k]) for k in ("input_ids", "labels", "cu_doc_lens"))
    emit(name, "regenerated vs committed: input_ids, labels, cu_doc_lens",
         "identical" if same else "differ", "identical", same)
    kl = common.kl_stats(old["logits"], new["logits"])
    emit(name, "regenerated vs committed: logits KL max", kl["kl_max"],
         f"<= {BOUND['kl_max']['tiny']:g}", kl["kl_max"] <= BOUND["kl_max"]["tiny"])
    g = {k: v for k, v in old.items() if k.startswith("grad.")}
    worst, tensor, _ = com.grad_errors({k: new[k] for k in g}, g)
    emit(name, "regenerated vs committed: grad max rel err", worst,
         f"<= {BOUND['grad']:g} ({tensor})", worst <= BOUND["grad"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replica", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    hf_run.torch_threads()
    replica = os.path.abspath(args.replica)

    def emit(case, what, value, bound, ok):
        common.emit(AREA, case, what, value, bound, ok)

    start = time.time()
    for name in pa.CASES:
        check_case(name, replica, args.work, emit)
    common.log(f"{AREA}: done in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()

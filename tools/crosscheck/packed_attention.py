"""Packed rows (intra-document masking, OLMo-core's cu_doc_lens) through the reference stack.

OLMo-core 3.0.0's attention backends are torch (SDPA), flash_2, flash_3, flash_4 and te; only the
flash ones take cu_doc_lens (TE refuses it as well), and they need a CUDA GPU. Its torch backend, the one that runs
on a CPU, raises "doesn't support intra-document masking" when a batch carries doc_lens
(olmo_core_refusal shows it). With intra-document masking OLMo-core's model computes every document
as if it were alone (attention within the document; RotaryEmbedding given cu_doc_lens restarts the
positions at 0 in each document), so the reference here is OLMo-core's own model run on each
document separately, inside the loop its train module runs (train_batch: model_forward with
loss_reduction "sum", z_loss_multiplier 1e-5 and loss_div_factor = the whole packed batch's label
count, backward per piece, gradients accumulated), each document one micro-batch of one row. The
labels are those OLMo-core's get_labels makes for the packed rows (next tokens across document
boundaries, the last position of a row ignored).

transformers 5.23.0 detects packed rows from position_ids that restart (masking_utils.
find_packed_sequence_indices, used when attention_mask is None and there is no cache) and then
masks each query to its own sequence, for eager and SDPA; its RoPE takes the same position_ids.
transformers_packed runs Olmo3ForCausalLM so.
"""
import os

import numpy as np

import common
import olmo_core_model as ocm

# Document lengths, row by row (each row sums to T = 96): a single token, documents shorter than
# the sliding window (tiny-mha 16, tiny-yarn 12), across it, and a row of one document.
CASES = {
    "tiny-mha": ("tests/data/olmo3/tiny-mha", [[1, 7, 20, 45, 23], [96]]),
    "tiny-yarn": ("tests/data/olmo3/tiny-yarn", [[1, 5, 13, 40, 37], [60, 1, 35]]),
}
DATA_SEED = 20261203


def packed_batch(name):
    """(input_ids [B, T] int64, labels [B, T] int64, cu_doc_lens [n] int32) of case `name`:
    uniform ids from numpy's default_rng(DATA_SEED), OLMo-core's get_labels, and the
    cumulative document lengths as OLMo-core's get_cumulative_document_lengths makes them from
    the rows' doc_lens."""
    import torch
    from olmo_core.data.utils import get_cumulative_document_lengths, get_labels
    rel, rows = CASES[name]
    with open(os.path.join(common.REPO, rel, "config.json"), encoding="utf-8") as f:
        import json
        V = json.load(f)["vocab_size"]
    T = sum(rows[0])
    assert all(sum(r) == T for r in rows)
    ids = np.random.default_rng(DATA_SEED).integers(0, V, size=(len(rows), T), dtype=np.int64)
    labels = get_labels({"input_ids": torch.as_tensor(ids)}).numpy()
    cu = get_cumulative_document_lengths(doc_lens_tensor(rows)).numpy().astype(np.int32)
    return ids, labels, cu


def doc_lens_tensor(rows):
    """OLMo-core's batch["doc_lens"]: [B, max documents] int32, rows padded with 0."""
    import torch
    width = max(len(r) for r in rows)
    return torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.int32)


def documents(cu):
    """[(start, end)] flat positions of every non-empty document."""
    return [(int(a), int(b)) for a, b in zip(cu[:-1], cu[1:]) if b > a]


def olmo_core_refusal(name):
    """What OLMo-core's own train_batch says about the packed batch with doc_lens on a CPU (its
    torch backend): the exception's message, or None when it ran."""
    import torch
    case = ocm.Case(os.path.join(common.REPO, CASES[name][0]))
    ids, labels, _ = packed_batch(name)
    B, T = ids.shape
    tm = case.train_module(batch_tokens=B * T, seq_len=T)
    rows = CASES[name][1]
    batch = {"input_ids": torch.as_tensor(ids), "labels": torch.as_tensor(labels),
             "doc_lens": doc_lens_tensor(rows), "max_doc_lens": [max(r) for r in rows]}
    try:
        tm.train_batch(batch)
    except Exception as e:  # noqa: BLE001 - the message is the result
        return f"{type(e).__name__}: {e}"
    return None


def olmo_core_per_document(name):
    """OLMo-core on the packed batch of `name`, one document at a time (module docstring):
    {"input_ids", "labels", "cu_doc_lens", "logits" [B, T, V] (eval forward of each document
    put in place), "ce_loss" (Σ CE / N), "z_loss" (1e-5 · Σ lse² / N), "label_tokens" N,
    "grads" {HF name: array} of CE + 1e-5·z-loss, "case"}."""
    import torch
    from olmo_core.nn.hf.convert import convert_state_to_hf
    case = ocm.Case(os.path.join(common.REPO, CASES[name][0]))
    ids, labels, cu = packed_batch(name)
    B, T = ids.shape
    flat_ids, flat_labels = ids.reshape(-1), labels.reshape(-1)
    docs = documents(cu)
    tm = case.train_module(batch_tokens=T, seq_len=T)
    model = tm.model
    V = case.hf["vocab_size"]
    logits = np.zeros((B * T, V), dtype=np.float32)
    model.eval()
    with torch.no_grad():
        for a, b in docs:
            x = torch.as_tensor(flat_ids[a:b][None])
            logits[a:b] = model(x).float().numpy()[0]
    n = int((flat_labels != -100).sum())
    model.train()
    for p in model.parameters():
        p.grad = None
    ce_total, z_total = 0.0, 0.0
    for a, b in docs:
        x = torch.as_tensor(flat_ids[a:b][None])
        y = torch.as_tensor(flat_labels[a:b][None])
        _, loss, ce, z = tm.model_forward(
            x, labels=y, ignore_index=-100, loss_reduction="sum",
            z_loss_multiplier=ocm.Z_LOSS_MULTIPLIER,
            loss_div_factor=torch.tensor(n), return_logits=False)
        ce_total += float(ce.detach())
        z_total += float(z.detach())
        loss.backward()
    grads = {k: p.grad.detach().clone() for k, p in model.named_parameters()}
    hf_grads = convert_state_to_hf(case.pretrained, grads)
    return {"case": case, "input_ids": ids, "labels": labels, "cu_doc_lens": cu,
            "logits": logits.reshape(B, T, V), "ce_loss": ce_total, "z_loss": z_total,
            "label_tokens": n, "grads": {k: v.float().numpy() for k, v in hf_grads.items()}}


def olmo_core_dump(result, *, grads=True):
    """The reference dump (docs/formats.md) of olmo_core_per_document's result, with its
    cu_doc_lens (what replica parity packs the rows by)."""
    import torch
    t = {"input_ids": result["input_ids"], "labels": result["labels"],
         "cu_doc_lens": result["cu_doc_lens"].astype(np.int64),
         "logits": result["logits"].astype(np.float32),
         "loss": np.array(result["ce_loss"], dtype=np.float64),
         "z_loss": np.array(result["z_loss"] / ocm.Z_LOSS_MULTIPLIER, dtype=np.float64)}
    if grads:
        for k in sorted(result["grads"]):
            t["grad." + k] = result["grads"][k].astype(np.float32)
    meta = {"format": "pt",
            "description": "OLMo-core's Olmo 3 (olmo_core_model.Case) on a packed batch, each "
                           "document run alone in its train module's micro-batch loop: logits, "
                           "CE (loss), mean lse^2 (z_loss, no multiplier)"
                           + ("; grad.* of CE + z_loss_multiplier * mean lse^2" if grads else ""),
            "z_loss_multiplier": repr(ocm.Z_LOSS_MULTIPLIER) if grads else "none (no gradients)",
            "torch_threads": str(torch.get_num_threads())}
    return t, meta


def transformers_packed(name, work_dir, *, unpacked=False):
    """transformers' Olmo3ForCausalLM (fp32, eager) on the packed batch with position_ids that
    restart in every document (packed detection), or with `unpacked` plain rows. Returns
    {"logits", "loss" (mean CE, fp64 from the logits), "grads" (of the mean CE)}."""
    import torch
    import torch.nn.functional as F
    import hf_run
    ids, labels, cu = packed_batch(name)
    B, T = ids.shape
    hf_dir = hf_run.unambiguous_copy(os.path.join(common.REPO, CASES[name][0]),
                                     os.path.join(work_dir, name + "-hf"))
    model = hf_run.load(hf_dir, "float32")
    pos = np.zeros(B * T, dtype=np.int64)
    for a, b in documents(cu):
        pos[a:b] = np.arange(b - a)
    kwargs = {} if unpacked else {"position_ids": torch.as_tensor(pos.reshape(B, T))}
    model.zero_grad(set_to_none=True)
    logits = model(input_ids=torch.as_tensor(ids), use_cache=False, **kwargs).logits
    V = logits.shape[-1]
    loss = F.cross_entropy(logits.float().reshape(-1, V), torch.as_tensor(labels).reshape(-1),
                           ignore_index=-100)
    loss.backward()
    out = {"logits": logits.detach().float().numpy(),
           "grads": {k: p.grad.detach().float().numpy() for k, p in model.named_parameters()}}
    out["loss"] = hf_run.mean_ce64(out["logits"], labels)
    return out

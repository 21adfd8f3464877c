"""Writes the committed packed-rows reference dumps that `make test` reads (no Python there):

    <venv>/bin/python tools/crosscheck/generate_packed_attention.py --out tests/data/reference/packed_attention

Per case of packed_attention.CASES, <case>.safetensors: OLMo-core's own model on the case's packed
batch, one document at a time in its train module's micro-batch loop (packed_attention.py says why:
OLMo-core's CPU attention backend refuses intra-document masking), with the batch's cu_doc_lens,
logits, CE, mean lse² and the gradients of CE + 1e-5·z-loss. And transformers-<case>.safetensors
for tiny-yarn: transformers' Olmo3ForCausalLM on the same packed rows given restarting position_ids
(logits, mean CE). Plus VERSIONS.json; README.md is written by hand.
tests/cli/reference_packed_attention.sh checks replica against these; check_packed_attention.py
regenerates them and compares.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import hf_run  # noqa: E402
import packed_attention as pa  # noqa: E402

TRANSFORMERS_CASES = ("tiny-yarn",)


def transformers_dump(path, name, work):
    """transformers' packed forward of case `name` as a reference dump with the rows' cu_doc_lens."""
    import numpy as np
    import transformers
    ids, labels, cu = pa.packed_batch(name)
    t = pa.transformers_packed(name, work)
    tensors = {"input_ids": ids, "labels": labels, "cu_doc_lens": cu.astype(np.int64),
               "logits": np.ascontiguousarray(t["logits"], dtype=np.float32),
               "loss": np.array(t["loss"], dtype=np.float64)}
    common.write_safetensors(path, tensors, {
        "format": "pt", "transformers_version": transformers.__version__,
        "description": "transformers Olmo3ForCausalLM (fp32, eager) on packed rows given "
                       "position_ids that restart in every document of cu_doc_lens: logits; "
                       "loss = mean CE (fp64, from the F32 logits)"})
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    hf_run.torch_threads()
    os.makedirs(args.out, exist_ok=True)
    for name in pa.CASES:
        tensors, meta = pa.olmo_core_dump(pa.olmo_core_per_document(name))
        path = os.path.join(args.out, f"{name}.safetensors")
        common.write_safetensors(path, tensors, meta)
        common.log(f"wrote {path} ({os.path.getsize(path):,} bytes)")
    with tempfile.TemporaryDirectory() as tmp:
        for name in TRANSFORMERS_CASES:
            path = transformers_dump(os.path.join(args.out, f"transformers-{name}.safetensors"),
                                     name, tmp)
            common.log(f"wrote {path} ({os.path.getsize(path):,} bytes)")
    common.write_versions(args.out, "tools/crosscheck/generate_packed_attention.py --out "
                          + os.path.relpath(args.out, common.REPO))


if __name__ == "__main__":
    main()

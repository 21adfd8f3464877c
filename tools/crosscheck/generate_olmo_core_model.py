"""Writes the committed OLMo-core reference dumps that `make test` reads (no Python there):

    <venv>/bin/python tools/crosscheck/generate_olmo_core_model.py --out tests/data/reference/olmo_core_model

One <case>.safetensors per parity case (olmo_core_model.CASES): OLMo-core's logits, its train
module's CE (`loss`) and mean lse² (`z_loss`) on the case's io batch, and for the cases in
GRAD_CASES the gradients of the train module's objective CE + 1e-5·z-loss (`grad.*`); the other
cases carry no gradients, to keep the folder under 8 MB. And the case OLMo-core makes alone
(olmo_core_model.run_native): its export by save_hf_model in olmo-core-native/ and its dump, with
gradients, in olmo-core-native.safetensors. Plus VERSIONS.json; README.md is written by hand.
tests/cli/reference_olmo_core.sh checks replica against these; check_olmo_core_model.py
regenerates them and compares.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import olmo_core_model as ocm  # noqa: E402

GRAD_CASES = ("tiny-mha", "tiny-yarn")  # MHA; GQA + YaRN on the full layer


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, rel in ocm.CASES.items():
        r = ocm.run_case(os.path.join(common.REPO, rel), ce_grads=False)
        tensors, meta = ocm.dump_tensors(r, grads=name in GRAD_CASES)
        path = os.path.join(args.out, f"{name}.safetensors")
        common.write_safetensors(path, tensors, meta)
        common.log(f"wrote {path} ({os.path.getsize(path):,} bytes)")
    r = ocm.run_native(os.path.join(args.out, ocm.NATIVE))
    tensors, meta = ocm.dump_tensors(r, grads=True)
    path = os.path.join(args.out, f"{ocm.NATIVE}.safetensors")
    common.write_safetensors(path, tensors, meta)
    common.log(f"wrote {path} ({os.path.getsize(path):,} bytes) and its model directory")
    common.write_versions(args.out, "tools/crosscheck/generate_olmo_core_model.py --out "
                          + os.path.relpath(args.out, common.REPO))


if __name__ == "__main__":
    main()

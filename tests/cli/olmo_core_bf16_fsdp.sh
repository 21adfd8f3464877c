#!/usr/bin/env bash
# replica's bf16-fsdp against OLMo-core's own bf16 step (tests/data/reference/olmo_core_bf16,
# tools/crosscheck/generate_olmo_core_bf16.py): on both committed batches
#  - the logits are OLMo-core's bit for bit (KL 0, largest |logit difference| 0): every forward op
#    rounds where torch rounds, its fp32 sums in torch's order;
#  - the CE and the z-loss's mean lse² OLMo-core's bit for bit: the loss is summed in fp32 in
#    torch's orders (ops/cpu/torch_cross_entropy.h) and divided as OLMo-core divides it;
#  - the gradients closer to OLMo-core's than the bf16 precision's (which rounds only the matmul
#    operands), and within 1e-2 relative (the backward differs from torch's where an attention
#    gradient is a bf16 rounding tie, docs/precision.md);
#  - the bf16 precision's logits are not OLMo-core's (the check sees the difference).
#   usage: olmo_core_bf16_fsdp.sh <replica-binary> <repo-root>
set -u
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$1
ROOT=$2
REF=$ROOT/tests/data/reference/olmo_core_bf16
MODEL=$ROOT/tests/data/reference/olmo_core_run/step0

for seed in 0 1; do
  for prec in bf16-fsdp bf16; do
    "$BIN" parity --model "$MODEL" --reference "$REF/batch-$seed.safetensors" --grads --z-loss 1e-5 \
      --precision "$prec" --max-kl 1 --min-top1 0 --max-grad-rel 1 --json \
      > "$tmp/$prec-$seed.json" 2> "$tmp/$prec-$seed.err"
    rc=$?
    check "parity --precision $prec on batch $seed exits 0 ($(tail -1 "$tmp/$prec-$seed.err"))" '[ $rc -eq 0 ]'
  done
  summary=$(python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("bf16-fsdp: KL max %.3g, |logit diff| %.3g, CE %r vs %r, mean lse^2 %r vs %r, grad rel %.3g; bf16: |logit diff| %.3g, grad rel %.3g" % (a["kl_max"], a["max_abs_logit_diff"], a["loss"], a["loss_ref"], a["lse_sq_mean"], a["lse_sq_mean_ref"], a["grad_global_rel_err"], b["max_abs_logit_diff"], b["grad_global_rel_err"]))' \
    "$tmp/bf16-fsdp-$seed.json" "$tmp/bf16-$seed.json")
  check "batch $seed: bf16-fsdp logits are OLMo-core's bit for bit ($summary)" \
    'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"kl_max\"] == 0 and j[\"max_abs_logit_diff\"] == 0 and j[\"top1_agreement\"] == 1 else 1)" "$tmp/bf16-fsdp-$seed.json"'
  check "batch $seed: bf16-fsdp CE and mean lse² are OLMo-core's bit for bit" \
    'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"loss\"] == j[\"loss_ref\"] and j[\"lse_sq_mean\"] == j[\"lse_sq_mean_ref\"] else 1)" "$tmp/bf16-fsdp-$seed.json"'
  check "batch $seed: bf16-fsdp gradients within 1e-2 and closer to OLMo-core's than bf16's" \
    'python3 -c "import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:3]); sys.exit(0 if a[\"grad_global_rel_err\"] <= 1e-2 and a[\"grad_global_rel_err\"] < b[\"grad_global_rel_err\"] else 1)" "$tmp/bf16-fsdp-$seed.json" "$tmp/bf16-$seed.json"'
  check "batch $seed: the bf16 precision's logits are not OLMo-core's" \
    'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"max_abs_logit_diff\"] > 0 else 1)" "$tmp/bf16-$seed.json"'
done

cli_finish

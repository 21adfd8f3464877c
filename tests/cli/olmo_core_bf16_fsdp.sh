#!/usr/bin/env bash
# replica's bf16-fsdp against OLMo-core's own bf16 step (tests/data/reference/olmo_core_bf16,
# tools/crosscheck/generate_olmo_core_bf16.py): on both committed batches
#  - the logits are OLMo-core's bit for bit (KL 0, largest |logit difference| 0): every forward op
#    rounds where torch rounds, its fp32 sums in torch's order;
#  - the CE within one float32 ulp of OLMo-core's (replica sums it in double, torch in fp32);
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
print(f"bf16-fsdp: KL max {a[\"kl_max\"]:.3g}, |logit diff| {a[\"max_abs_logit_diff\"]:.3g}, CE {a[\"loss\"]!r} vs {a[\"loss_ref\"]!r}, grad rel {a[\"grad_global_rel_err\"]:.3g}; bf16: |logit diff| {b[\"max_abs_logit_diff\"]:.3g}, grad rel {b[\"grad_global_rel_err\"]:.3g}")' \
    "$tmp/bf16-fsdp-$seed.json" "$tmp/bf16-$seed.json")
  check "batch $seed: bf16-fsdp logits are OLMo-core's bit for bit ($summary)" \
    'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"kl_max\"] == 0 and j[\"max_abs_logit_diff\"] == 0 and j[\"top1_agreement\"] == 1 else 1)" "$tmp/bf16-fsdp-$seed.json"'
  check "batch $seed: bf16-fsdp CE within one float32 ulp (4.8e-7) of OLMo-core's" \
    'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if abs(j[\"loss\"] - j[\"loss_ref\"]) <= 4.8e-7 else 1)" "$tmp/bf16-fsdp-$seed.json"'
  check "batch $seed: bf16-fsdp gradients within 1e-2 and closer to OLMo-core's than bf16's" \
    'python3 -c "import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:3]); sys.exit(0 if a[\"grad_global_rel_err\"] <= 1e-2 and a[\"grad_global_rel_err\"] < b[\"grad_global_rel_err\"] else 1)" "$tmp/bf16-fsdp-$seed.json" "$tmp/bf16-$seed.json"'
  check "batch $seed: the bf16 precision's logits are not OLMo-core's" \
    'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"max_abs_logit_diff\"] > 0 else 1)" "$tmp/bf16-$seed.json"'
done

cli_finish

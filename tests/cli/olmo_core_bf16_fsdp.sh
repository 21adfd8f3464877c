#!/usr/bin/env bash
# replica's bf16-fsdp against OLMo-core's own bf16 step (tests/data/reference/olmo_core_bf16,
# tools/crosscheck/generate_olmo_core_bf16.py). torch's bf16 kernels differ between CPU kinds, so
# each reference is followed with the kind it was made on (--torch-cpu), whatever CPU runs this.
# On the two batches made on an AVX-512 CPU (--torch-cpu avx512):
#  - the logits are OLMo-core's bit for bit (KL 0, largest |logit difference| 0): every forward op
#    rounds where torch rounds, its fp32 sums in torch's order;
#  - the CE and the z-loss's mean lse² OLMo-core's bit for bit: the loss is summed in fp32 in
#    torch's orders (ops/cpu/torch_cross_entropy.h) and divided as OLMo-core divides it;
#  - the gradients closer to OLMo-core's than the bf16 precision's (which rounds only the matmul
#    operands), and within 1e-2 relative (that path's backward orders are measured, not checked
#    bit for bit, docs/precision.md);
#  - the bf16 precision's logits are not OLMo-core's (the check sees the difference).
# On the batch made on an AVX2 CPU (avx2/, --torch-cpu avx2): the logits, the CE, the mean lse² and
# every parameter gradient are OLMo-core's bit for bit; followed as the other kind (avx512), the
# logits are not (the choice matters). On the 500-token AVX2 batch (avx2-long/): logits and CE bit
# for bit, gradients within 1e-2 (torch's RoPE table is MKL's sin and cos); with OLMo-core's own
# table from the dump (--rope-table reference), every gradient bit for bit; a dump without the
# table exits 2.
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
      --precision "$prec" --torch-cpu avx512 --max-kl 1 --min-top1 0 --max-grad-rel 1 --json \
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

par() {  # par TORCH_CPU OUT: bf16-fsdp parity on the AVX2-made batch
  "$BIN" parity --model "$MODEL" --reference "$REF/avx2/batch-0.safetensors" --grads --z-loss 1e-5 \
    --precision bf16-fsdp --torch-cpu "$1" --max-kl 1 --min-top1 0 --max-grad-rel 1 --json \
    > "$2" 2> "$2.err"
}
par avx2 "$tmp/avx2.json"
rc=$?
check "parity --torch-cpu avx2 on the AVX2-made batch exits 0 ($(tail -1 "$tmp/avx2.json.err"))" '[ $rc -eq 0 ]'
summary=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("|logit diff| %.3g, CE %r vs %r, grad rel %.3g, largest per-tensor %.3g" % (j["max_abs_logit_diff"], j["loss"], j["loss_ref"], j["grad_global_rel_err"], j["grad_max_rel_err"]))' "$tmp/avx2.json")
check "AVX2-made batch: logits, CE, mean lse² and every gradient OLMo-core's bit for bit ($summary)" \
  'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"max_abs_logit_diff\"] == 0 and j[\"loss\"] == j[\"loss_ref\"] and j[\"lse_sq_mean\"] == j[\"lse_sq_mean_ref\"] and j[\"grad_global_rel_err\"] == 0 and j[\"grad_max_rel_err\"] == 0 else 1)" "$tmp/avx2.json"'
# One sequence of 500 tokens made on the AVX2 VM: the attention's P·V is summed in torch's
# 192-key pieces. Logits and CE are OLMo-core's bit for bit; the gradients are not, only because
# torch's sin and cos (MKL's) differ from this machine's in a few hundred of the RoPE table's
# 8,000 entries: with OLMo-core's own table (--rope-table reference) every gradient is bit for bit.
"$BIN" parity --model "$MODEL" --reference "$REF/avx2-long/batch-5-1x500.safetensors" --grads \
  --z-loss 1e-5 --precision bf16-fsdp --torch-cpu avx2 --max-kl 1 --min-top1 0 --max-grad-rel 1 \
  --json > "$tmp/long.json" 2> "$tmp/long.json.err"
rc=$?
check "parity on the 500-token AVX2 batch exits 0 ($(tail -1 "$tmp/long.json.err"))" '[ $rc -eq 0 ]'
summary=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("|logit diff| %.3g, CE %r vs %r, grad rel %.3g" % (j["max_abs_logit_diff"], j["loss"], j["loss_ref"], j["grad_global_rel_err"]))' "$tmp/long.json")
check "500-token AVX2 batch: logits and CE bit for bit, gradients within 1e-2 ($summary)" \
  'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"max_abs_logit_diff\"] == 0 and j[\"loss\"] == j[\"loss_ref\"] and j[\"grad_global_rel_err\"] <= 1e-2 else 1)" "$tmp/long.json"'
"$BIN" parity --model "$MODEL" --reference "$REF/avx2-long/batch-5-1x500.safetensors" --grads \
  --z-loss 1e-5 --precision bf16-fsdp --torch-cpu avx2 --max-kl 0 --min-top1 1 --max-grad-rel 0 \
  --rope-table reference --json > "$tmp/long-rope.json" 2> "$tmp/long-rope.json.err"
rc=$?
summary=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("%d table entries differ; grad rel %.3g, largest per-tensor %.3g" % (j["rope_entries_differing"], j["grad_global_rel_err"], j["grad_max_rel_err"]))' "$tmp/long-rope.json" 2>&1)
check "500-token AVX2 batch with OLMo-core's RoPE table: every gradient bit for bit ($summary)" \
  '[ $rc -eq 0 ] && python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"rope_table\"] == \"reference\" and j[\"rope_entries_differing\"] > 0 and j[\"max_abs_logit_diff\"] == 0 and j[\"grad_global_rel_err\"] == 0 and j[\"grad_max_rel_err\"] == 0 else 1)" "$tmp/long-rope.json"'
# A dump without the table: exit 2 naming the tensor.
"$BIN" parity --model "$MODEL" --reference "$REF/avx2/batch-0.safetensors" --precision bf16-fsdp \
  --torch-cpu avx2 --rope-table reference > "$tmp/norope.out" 2> "$tmp/norope.err"
rc=$?
check "--rope-table reference on a dump without rope.cos exits 2 naming it ($(tail -1 "$tmp/norope.err"))" \
  '[ $rc -eq 2 ] && grep -q "rope.cos" "$tmp/norope.err" && [ ! -s "$tmp/norope.out" ]'
par avx512 "$tmp/avx2-as-avx512.json"
check "AVX2-made batch followed as avx512: the logits differ" \
  'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"max_abs_logit_diff\"] > 0 else 1)" "$tmp/avx2-as-avx512.json"'
"$BIN" parity --model "$MODEL" --reference "$REF/avx2/batch-0.safetensors" --precision bf16-fsdp \
  --torch-cpu avx1 > /dev/null 2> "$tmp/bad.err"
rc=$?
check "--torch-cpu avx1 exits 2 naming the flag ($(tail -1 "$tmp/bad.err"))" \
  '[ $rc -eq 2 ] && grep -q -- "--torch-cpu" "$tmp/bad.err"'

cli_finish

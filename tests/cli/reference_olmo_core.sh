#!/usr/bin/env bash
# replica against OLMo-core's own Olmo 3 model, from the committed dumps of
# tests/data/reference/olmo_core_model/ (tools/crosscheck/generate_olmo_core_model.py; no Python
# needed here beyond python3's standard library):
#  - every case: logits (KL max, top-1), the train module's CE and mean lse² within fp32 noise;
#  - tiny-mha, tiny-yarn, olmo-core-native: every gradient of OLMo-core's objective CE + 1e-5·z-loss
#    within 1e-5 relative (`replica parity --grads --z-loss 1e-5`), and the same gradients compared
#    without the z-loss term fall outside that bound (the bound sees the z-loss);
#  - olmo-core-native is OLMo-core's own: its Olmo 3 builder (6 layers: S S S F S F, the last
#    forced full), its init, YaRN on the full layers, exported by its save_hf_model (which writes
#    max_position_embeddings -1); replica loads that directory as written;
#  - --z-loss without --grads, with --against, or negative: exit 2 naming the flag.
# Bounds (docs/crosscheck.md "OLMo-core model"): two correct float32 computations of these cases
# land ~1e-14 (tiny) / ~3e-8 (T = 2048: OLMo-core's float32 RoPE angles) apart in KL, ~1e-6 in
# every gradient; every mistake the fixture READMEs list is orders of magnitude larger.
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$1
ROOT=$2
REF=$ROOT/tests/data/reference/olmo_core_model

case_dir() {
  case $1 in
    bytes-mqa-2048) echo "$ROOT/tests/data/long/$1" ;;
    olmo-core-native) echo "$REF/$1" ;;
    *) echo "$ROOT/tests/data/olmo3/$1" ;;
  esac
}

# assert_parity JSON MAX_KL MAX_KL_MEAN: top-1, KL, CE and mean lse² against the dump's.
assert_parity() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
max_kl, max_kl_mean = float(sys.argv[2]), float(sys.argv[3])
bad = []
if not j["kl_max"] <= max_kl: bad.append(f"kl_max {j['kl_max']} > {max_kl}")
if not j["kl_mean"] <= max_kl_mean: bad.append(f"kl_mean {j['kl_mean']} > {max_kl_mean}")
if j["top1_agreement"] != 1.0: bad.append(f"top-1 {j['top1_agreement']}")
if j["loss_ref_source"] != "dump" or not abs(j["loss"] - j["loss_ref"]) <= 4e-6:
    bad.append(f"CE {j['loss']} vs OLMo-core {j['loss_ref']} ({j['loss_ref_source']})")
if j["lse_sq_mean_ref_source"] != "dump" or not abs(j["lse_sq_mean"] - j["lse_sq_mean_ref"]) <= 1e-4:
    bad.append(f"mean lse^2 {j['lse_sq_mean']} vs OLMo-core {j['lse_sq_mean_ref']}")
if bad:
    print("; ".join(bad))
    sys.exit(1)
PY
}

# The dump's gradients must be those of CE + 1e-5·z-loss (what --z-loss 1e-5 compares).
z_multiplier() {
  python3 - "$1" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    print(json.loads(f.read(n))["__metadata__"]["z_loss_multiplier"])
PY
}

for c in tiny-mha tiny-gqa tiny-yarn bytes-mqa-2048 olmo-core-native; do
  dump=$REF/$c.safetensors
  if [ ! -f "$dump" ]; then check "$c: committed dump $dump present" false; continue; fi
  kl=1e-11 kl_mean=1e-12
  [ "$c" = bytes-mqa-2048 ] && kl=1e-7 kl_mean=1e-9
  "$BIN" parity --model "$(case_dir $c)" --reference "$dump" --max-kl 1 --min-top1 0 --json \
    --threads 2 > "$tmp/$c.json" 2> "$tmp/$c.err"
  rc=$?
  check "$c: parity exit $rc, want 0 ($(tail -1 "$tmp/$c.err"))" '[ $rc -eq 0 ]'
  msg=$(assert_parity "$tmp/$c.json" $kl $kl_mean)
  check "$c: replica vs OLMo-core: $msg" '[ -z "$msg" ]'
done

for c in tiny-mha tiny-yarn olmo-core-native; do
  dump=$REF/$c.safetensors
  check "$c: dump's gradients are of z_loss_multiplier 1e-05" '[ "$(z_multiplier "$dump")" = 1e-05 ]'
  "$BIN" parity --model "$(case_dir $c)" --reference "$dump" --grads --z-loss 1e-5 \
    --max-kl 1e-11 --min-top1 1.0 --max-grad-rel 1e-5 --json --threads 2 > "$tmp/g.json" 2>/dev/null
  rc=$?
  check "$c: gradients of CE + 1e-5 z-loss within 1e-5 of OLMo-core's (exit $rc: $(grep -o '"grad_[a-z_]*_err": [^,]*' "$tmp/g.json" | tr '\n' ' '))" \
    '[ $rc -eq 0 ]'
  check "$c: objective reported" 'grep -q "\"z_loss_multiplier\": 1e-05" "$tmp/g.json" && grep -q "\"objective\": [0-9]" "$tmp/g.json"'
  "$BIN" parity --model "$(case_dir $c)" --reference "$dump" --grads --max-kl 1 --min-top1 0 \
    --max-grad-rel 1e-5 --json --threads 2 > "$tmp/g0.json" 2>/dev/null
  rc=$?
  check "$c: without the z-loss term the gradients fall outside 1e-5 (exit $rc, want 1)" '[ $rc -eq 1 ]'
done

# Bad use of --z-loss: exit 2 and a message naming it.
M=$ROOT/tests/data/olmo3/tiny-mha
expect_usage() {  # expect_usage WHAT ARGS...
  local what=$1
  shift
  "$BIN" parity "$@" > /dev/null 2> "$tmp/err"
  local rc=$?
  check "$what: exit 2 naming --z-loss (exit $rc: $(tail -1 "$tmp/err"))" \
    '[ $rc -eq 2 ] && grep -q -- "--z-loss" "$tmp/err"'
}
expect_usage "--z-loss without --grads" --model "$M" --reference "$M/io.safetensors" --z-loss 1e-5
expect_usage "--z-loss with --against" --model "$M" --against "$M" --z-loss 1e-5
expect_usage "negative --z-loss" --model "$M" --reference "$M/io.safetensors" --grads --z-loss -1

cli_finish

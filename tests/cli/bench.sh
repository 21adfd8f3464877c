#!/usr/bin/env bash
# replica bench on a tiny shape: the JSON has every field of docs/design.md §5, all positive, with MFU
# consistent with its parts; bad arguments exit 2.
set -u
BIN=$1
ROOT=$2
CFG=$ROOT/tests/data/olmo3/tiny-gqa/config.json
fail() { echo "FAIL: $*"; exit 1; }

out=$("$BIN" bench --model-config "$CFG" --batch 2 --seq 16 --steps 2 --threads 2 --peak-size 128 --json)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "exit $rc"
for k in step_time_s tokens_per_s flops_per_token achieved_gflops peak_gflops mfu; do
  echo "$out" | jq -e ".$k | type == \"number\" and . > 0" >/dev/null || fail "field $k missing or not > 0"
done
# tokens_per_s = B·T / step_time_s; achieved = flops_per_token · tokens_per_s; mfu = achieved / peak.
echo "$out" | jq -e '((.tokens_per_s * .step_time_s - 32) | fabs) < 1e-6' >/dev/null || fail "tokens_per_s"
echo "$out" | jq -e '((.flops_per_token * .tokens_per_s / 1e9 / .achieved_gflops) - 1 | fabs) < 1e-9' >/dev/null \
  || fail "achieved_gflops"
echo "$out" | jq -e '((.achieved_gflops / .peak_gflops / .mfu) - 1 | fabs) < 1e-9' >/dev/null || fail "mfu"
# Random weights: the first-step loss is close to ln(V) = ln(384) = 5.95.
echo "$out" | jq -e '(.ce_loss - 5.95 | fabs) < 0.1' >/dev/null || fail "ce_loss far from ln V"

# Human-readable output.
"$BIN" bench --model-config "$CFG" --batch 1 --seq 8 --steps 1 --peak-size 64 | grep -q MFU || fail "text output"

"$BIN" bench --model-config "$CFG" --batch 0 --seq 8 --steps 1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--batch 0: expected exit 2"
"$BIN" bench --model-config "$ROOT/no/such/config.json" --steps 1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing config: expected exit 2"
echo "bench.sh: all checks passed"

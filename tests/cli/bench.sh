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
# The nominal peak's clock (ops/cpu/core_clock.h): the figure used, which source it came from, the
# measurement and the references beside it (null when not reported).
echo "$out" | jq -e '.nominal_peak.clock as $c | ($c.source | IN("measured", "cpuid 0x16", "/proc/cpuinfo"))
  and $c.ghz == .nominal_peak.clock_ghz and $c.ghz > 0 and $c.measured_ghz > 0
  and ($c.cpuinfo_ghz == null or $c.cpuinfo_ghz > 0) and ($c.cpuid_base_ghz == null or $c.cpuid_base_ghz > 0)
  and ($c.note | type == "string")
  and ((.nominal_peak.gflops / (.nominal_peak.flops_per_cycle_per_core * $c.ghz * .nominal_peak.cores)) - 1 | fabs) < 1e-9' \
  >/dev/null || fail "nominal_peak.clock: $(echo "$out" | jq -c .nominal_peak)"
# Random weights: the first-step loss is close to ln(V) = ln(384) = 5.95.
echo "$out" | jq -e '(.ce_loss - 5.95 | fabs) < 0.1' >/dev/null || fail "ce_loss far from ln V"

# The MFU denominator is the trainer's (ops/cpu/gemm_peak.h): the fastest of this process's trials,
# or a higher rate recorded for the same key in the peak cache, which the bench reads and fills.
tmpd=$(mktemp -d); trap 'rm -rf "$tmpd"' EXIT
export REPLICA_GEMM_PEAK_CACHE=$tmpd/gemm-peak.json
one=$("$BIN" bench --model-config "$CFG" --batch 1 --seq 8 --steps 1 --threads 2 --peak-size 128 --json) \
  || fail "bench with a peak cache"
echo "$one" | jq -e '.peak_gemm.size == 128 and .peak_gemm.measured_gflops > 0 and
  .peak_gemm.median_trial_gflops > 0 and .peak_gflops >= .peak_gemm.measured_gflops and
  .peak_gemm.fp32_gflops == .peak_gflops' >/dev/null || fail "peak_gemm fields: $one"
jq -e 'keys | any(contains("n 128"))' "$REPLICA_GEMM_PEAK_CACHE" >/dev/null \
  || fail "no cache entry written"
# A cached rate far above anything measured here is the denominator of the next run.
jq 'map_values(.flops_per_s = 1e15)' "$REPLICA_GEMM_PEAK_CACHE" > "$tmpd/high.json" &&
  mv "$tmpd/high.json" "$REPLICA_GEMM_PEAK_CACHE"
two=$("$BIN" bench --model-config "$CFG" --batch 1 --seq 8 --steps 1 --threads 2 --peak-size 128 --json) \
  || fail "bench with a high cached peak"
echo "$two" | jq -e '.peak_gemm.cached_gflops > 1e5 and .peak_gflops == .peak_gemm.cached_gflops' \
  >/dev/null || fail "the cached peak is not the denominator: $(echo "$two" | jq -c .peak_gemm)"
unset REPLICA_GEMM_PEAK_CACHE

# Human-readable output.
text=$("$BIN" bench --model-config "$CFG" --batch 1 --seq 8 --steps 1 --peak-size 64) || fail "text output"
echo "$text" | grep -q MFU || fail "text output: no MFU"
echo "$text" | grep -q "core clock .*GHz.*/proc/cpuinfo.*cpuid 0x16" || fail "text output: no core clock line"

"$BIN" bench --model-config "$CFG" --batch 0 --seq 8 --steps 1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--batch 0: expected exit 2"
"$BIN" bench --model-config "$ROOT/no/such/config.json" --steps 1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing config: expected exit 2"
# --doc-lens: packed rows (cycled lengths, the last cut at the row end), and bad lengths exit 2.
packed=$("$BIN" bench --model-config "$CFG" --batch 2 --seq 8 --steps 1 --warmup 0 --threads 2 \
  --peak-size 64 --doc-lens 3,1 --json) || fail "bench --doc-lens"
echo "$packed" | jq -e '.documents == 8 and .doc_lens == "3,1"' >/dev/null \
  || fail "--doc-lens 3,1 over 2 x 8: expected 8 documents: $(echo "$packed" | jq -c '[.documents, .doc_lens]')"
for bad in 0 3,x 2,-1 ,; do
  "$BIN" bench --model-config "$CFG" --batch 1 --seq 8 --steps 1 --doc-lens "$bad" >/dev/null 2>"$tmpd/err"
  [ $? -eq 2 ] && grep -q -- "--doc-lens" "$tmpd/err" || fail "--doc-lens '$bad': expected exit 2 naming it"
done
echo "bench.sh: all checks passed"

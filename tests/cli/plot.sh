#!/usr/bin/env bash
# `replica plot`: PNG and SVG panels (loss, lr, grad norm, throughput, eval) for several runs
# overlaid; a clear error when gnuplot is missing.   usage: plot.sh <replica-binary> <repo-root>
set -u
BIN=$1
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
if ! command -v gnuplot > /dev/null; then
  echo "SKIP: gnuplot is not installed"
  exit 0
fi
mkdir -p "$tmp/run-a" "$tmp/run-b"
for r in a b; do
  awk -v f="$([ $r = a ] && echo 1.0 || echo 1.1)" 'BEGIN {
    for (s = 1; s <= 60; s++) {
      printf "{\"step\":%d,\"loss\":%.17g,\"lr\":%.17g,\"grad_norm\":%.17g,\"tokens_per_s\":%d,\"mfu\":0.2}\n",
        s, f * (2 + 8 / s), 0.001 * (s < 10 ? s / 10 : 1), 1 + 1 / s, 4000 + s
      if (s % 20 == 0)
        printf "{\"step\":%d,\"eval\":{\"heldout\":{\"ppl\":%.17g,\"time_s\":0.5},\"other\":{\"ppl\":%.17g}}}\n",
          s, f * 400 / s, f * 500 / s
    } }' > "$tmp/run-$r/metrics.jsonl"
done
"$BIN" plot "$tmp/run-a" "$tmp/run-b" --out "$tmp/png" > "$tmp/files.txt"; rc=$?
check "plot exits 0 (got $rc)" '[ $rc -eq 0 ]'
for f in loss lr grad_norm throughput mfu eval_ppl overview; do
  check "$f.png is a PNG" '[ "$(head -c 4 "$tmp/png/$f.png" | tail -c 3)" = PNG ]'
done
check "no panel for eval timings" '[ ! -e "$tmp/png/eval_time_s.png" ]'
check "both runs are labelled" "grep -q \"'run-a'\" '$tmp/png/plot.gp' && grep -q \"'run-b'\" '$tmp/png/plot.gp'"
"$BIN" plot "$tmp/run-a" --format svg > /dev/null; rc=$?
check "svg into RUN/plots (exit $rc)" '[ $rc -eq 0 ] && grep -q "<svg" "$tmp/run-a/plots/loss.svg"'
PATH=/nonexistent "$BIN" plot "$tmp/run-a" --out "$tmp/x" 2> "$tmp/err"; rc=$?
check "missing gnuplot: exit 2 with how to install it (got $rc)" \
  '[ $rc -eq 2 ] && grep -q "gnuplot not found" "$tmp/err" && grep -q "apt-get install gnuplot" "$tmp/err"'
"$BIN" plot "$tmp/none" 2> "$tmp/err"; rc=$?
check "missing run exits 2 (got $rc)" '[ $rc -eq 2 ]'
[ $fail -eq 0 ] && echo "plot.sh: all checks passed"
exit $fail

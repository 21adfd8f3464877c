#!/usr/bin/env bash
# `replica plot`: PNG and SVG panels (loss, lr, grad norm, throughput, eval) for several runs
# overlaid; a clear error when gnuplot is missing.   usage: plot.sh <replica-binary> <repo-root>
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: some checks run from a run dir
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
# A run given as "." is labelled by its directory's name, and a one-step run (a single point per
# series, one eval value) draws without gnuplot range warnings on the terminal.
mkdir -p "$tmp/one-step"
echo '{"step":1,"loss":5.5,"lr":0.001,"grad_norm":2,"tokens_per_s":100,"mfu":0.1}' > "$tmp/one-step/metrics.jsonl"
echo '{"step":1,"eval":{"heldout":{"ppl":300}}}' >> "$tmp/one-step/metrics.jsonl"
(cd "$tmp/one-step" && "$BIN" plot . --out "$tmp/dot" > /dev/null 2> "$tmp/dot-err"); rc=$?
check "plot . exits 0 (got $rc)" '[ $rc -eq 0 ]'
check "plot . labels the run by its directory name" "grep -q \"'one-step'\" '$tmp/dot/plot.gp' && ! grep -q \"title '\\.'\" '$tmp/dot/plot.gp'"
check "single-point series: nothing from gnuplot on stderr ($(head -c 300 "$tmp/dot-err"))" '[ ! -s "$tmp/dot-err" ]'
(cd "$tmp/run-a" && "$BIN" plot ./ ../run-b/ --out "$tmp/slash" > /dev/null); rc=$?
check "plot ./ ../run-b/ labels run-a and run-b (exit $rc)" "grep -q \"'run-a'\" '$tmp/slash/plot.gp' && grep -q \"'run-b'\" '$tmp/slash/plot.gp'"
PATH=/nonexistent "$BIN" plot "$tmp/run-a" --out "$tmp/x" 2> "$tmp/err"; rc=$?
check "missing gnuplot: exit 2 with how to install it (got $rc)" \
  '[ $rc -eq 2 ] && grep -q "gnuplot not found" "$tmp/err" && grep -q "apt-get install gnuplot" "$tmp/err"'
"$BIN" plot "$tmp/none" 2> "$tmp/err"; rc=$?
check "missing run exits 2 (got $rc)" '[ $rc -eq 2 ]'
[ $fail -eq 0 ] && echo "plot.sh: all checks passed"
exit $fail

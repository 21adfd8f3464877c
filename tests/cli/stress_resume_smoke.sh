#!/usr/bin/env bash
# ctest-labels: long
# A short run of scripts/stress_resume (the kill/resume benchmark): 8 SIGKILLs of a 1-rank trainer
# at random moments, each followed by a resume; the finished runs must equal an uninterrupted one
# bit for bit.   usage: stress_resume_smoke.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
out=$(bash "$ROOT/scripts/stress_resume" "$(dirname "$BIN")" --kills 8 --per-run 4 --ranks 1 \
      --seed "${STRESS_SEED:-$RANDOM}" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: stress_resume exit $rc"; exit 1; }
echo "$out" | tail -1 | grep -q '"kills": 8' || { echo "FAIL: not 8 kills"; exit 1; }
echo "$out" | tail -1 | grep -q '"failures": 0' || { echo "FAIL: failures"; exit 1; }
echo "stress_resume_smoke.sh: all checks passed"

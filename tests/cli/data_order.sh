#!/usr/bin/env bash
# `replica data order` reproduces both data-order oracles (OLMo-core NumpyFSLDataLoader order)
# and rejects bad input with exit 2.   usage: data_order.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
ORACLES=$ROOT/tests/data/oracles/data-order
fail=0
check() {  # check <description> <jq expression that must print true>
  if [ "$(jq -n --slurpfile o "$oracle" --slurpfile g "$out" "$2")" != "true" ]; then
    echo "FAIL: $case: $1"
    fail=1
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for case in order-small order-medium; do
  oracle=$ORACLES/$case.json
  read -r N S E I R < <(jq -r '.params | "\(.N) \(.seed) \(.epoch) \(.instances_per_batch) \(.dp_world_size)"' "$oracle")
  for b in $(jq -r '.batches[].batch' "$oracle") -1; do
    out=$tmp/$case-$b.json
    if ! "$BIN" data order --instances "$N" --seed "$S" --epoch "$E" --global-batch "$I" \
        --world "$R" --batch "$b" --json > "$out"; then
      echo "FAIL: $case batch $b: exit $?"
      fail=1
      continue
    fi
    check "shuffled_sha256" '$o[0].shuffled_sha256 == $g[0].shuffled_sha256'
    check "truncated_sha256" '$o[0].truncated_sha256 == $g[0].truncated_sha256'
    check "head" '$o[0].shuffled_first_64 == $g[0].head'
    check "tail" '$o[0].shuffled_last_64 == $g[0].tail'
    check "num_batches" '$o[0].num_batches == $g[0].num_batches and $o[0].total_size == $g[0].total_size'
    check "rng_seed" '$o[0].rng_seed == $g[0].rng_seed'
    check "batch $b ranks" '[$o[0].batches[] | select(.batch == $g[0].batch)] | length == 1 and
        .[0].ranks == $g[0].ranks and .[0].global == $g[0].global'
  done
done

# Bad input: exit 2 with a message on stderr, nothing on stdout.
bad() {
  "$BIN" data order "$@" --json > "$tmp/bad.out" 2> "$tmp/bad.err"
  rc=$?
  if [ $rc -ne 2 ] || [ -s "$tmp/bad.out" ] || [ ! -s "$tmp/bad.err" ]; then
    echo "FAIL: 'data order $*' gave exit $rc (want 2, an error message and no output)"
    fail=1
  fi
}
bad --instances 0 --seed 1 --epoch 1
bad --instances 16 --seed 1 --epoch 1 --global-batch 8 --world 3
bad --instances 16 --seed 1 --epoch 1 --global-batch 0
bad --instances 4 --seed 1 --epoch 1 --global-batch 8
bad --instances 16 --seed 1 --epoch 1 --global-batch 8 --batch 2
bad --instances -5 --seed 1 --epoch 1
bad --instances 16 --seed -1 --epoch 1
bad --instances 4294967295 --seed 1 --epoch 1
bad --instances abc --seed 1 --epoch 1
bad --seed 1 --epoch 1
bad --instances 16 --seed 1 --epoch 0
grep -q "'epoch' must be at least 1, got 0" "$tmp/bad.err" ||
  { echo "FAIL: --epoch 0 message: $(cat "$tmp/bad.err")"; fail=1; }
# Seeds past 2^64 - 1 are refused, not saturated; no octal or hex reading.
bad --instances 16 --seed 18446744073709551616 --epoch 1
grep -q "got '18446744073709551616'" "$tmp/bad.err" ||
  { echo "FAIL: --seed 2^64 message: $(cat "$tmp/bad.err")"; fail=1; }
bad --instances 16 --seed 0x10 --epoch 1
[ "$("$BIN" data order --instances 16 --seed 010 --epoch 1 --json | jq .params.seed)" = 10 ] ||
  { echo "FAIL: --seed 010 is not read as decimal 10"; fail=1; }

# data info: a human summary by default (no JSON), JSON with --json.
for i in $(seq 1 10); do printf '\x05\x00\x00\x00'; done > "$tmp/ten.npy"
if ! "$BIN" data info "$tmp/ten.npy" --seq-len 4 > "$tmp/info.txt" 2> "$tmp/info.err"; then
  echo "FAIL: data info exit $? ($(cat "$tmp/info.err"))"; fail=1
elif ! grep -q "^2 instances of 4 tokens from 1 token file (uint32" "$tmp/info.txt" ||
     ! grep -q "ten.npy" "$tmp/info.txt" || grep -q '[{]' "$tmp/info.txt"; then
  echo "FAIL: data info human form:"; cat "$tmp/info.txt"; fail=1
fi
if ! "$BIN" data info "$tmp/ten.npy" --seq-len 4 --json | jq -e '.num_instances == 2' > /dev/null; then
  echo "FAIL: data info --json"; fail=1
fi

[ $fail -eq 0 ] && echo "data_order.sh: all checks passed"
exit $fail

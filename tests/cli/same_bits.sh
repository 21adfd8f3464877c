#!/usr/bin/env bash
# tools/same_bits.sh, the before/after comparison of two builds, on a few of its rows: the binary
# against itself holds (a 1-rank fp32 run, parity on one fixture, evaluation and sampling); a
# wrapper that changes one training setting by a relative 1e-7 is caught in the metrics, the eval
# lines and both checkpoints; a missing binary exits 2.   usage: same_bits.sh <replica-binary> <repo-root>
set -u
BIN=$1 ROOT=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
export SAME_BITS_ROWS='^fp32-1rank$|^parity-tiny-mha$|^eval-fp32$|^generate-fp32$'

"$ROOT/tools/same_bits.sh" "$BIN" "$BIN" "$tmp/self" > "$tmp/self.txt" 2>&1
rc=$?
check "the binary against itself: exit 0 (got $rc)" '[ $rc -eq 0 ]'
check "four rows, all identical" 'grep -q "same_bits: 4 rows, 4 identical, 0 differ" "$tmp/self.txt"'
[ "$fail" = 0 ] || cat "$tmp/self.txt"

cat > "$tmp/perturbed" <<WRAP
#!/usr/bin/env bash
if [ "\$1" = train ]; then exec "$BIN" "\$@" --set optim.eps=1.0000001e-8; fi
exec "$BIN" "\$@"
WRAP
chmod +x "$tmp/perturbed"
SAME_BITS_ROWS='^fp32-1rank$' "$ROOT/tools/same_bits.sh" "$BIN" "$tmp/perturbed" "$tmp/moved" \
  > "$tmp/moved.txt" 2>&1
rc=$?
check "a moved bit: exit 1 (got $rc)" '[ $rc -eq 1 ]'
check "the row names metrics, eval lines and both checkpoints" \
  'grep -q "DIFFER  fp32-1rank  metrics.* eval checkpoint-00000004 checkpoint-00000008" "$tmp/moved.txt"'
[ "$fail" = 0 ] || cat "$tmp/moved.txt"

"$ROOT/tools/same_bits.sh" "$tmp/absent" "$BIN" > "$tmp/bad.txt" 2>&1
rc=$?
check "a missing binary: exit 2 (got $rc)" '[ $rc -eq 2 ]'
check "and the message names it" 'grep -q "absent" "$tmp/bad.txt"'
cli_finish

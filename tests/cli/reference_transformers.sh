#!/usr/bin/env bash
# replica against transformers' own Olmo3ForCausalLM, from the committed reference
# (tests/data/reference/transformers, written by tools/crosscheck/generate_transformers.py):
# on every parity case, `replica parity --reference` on transformers' fp32 dump agrees with it
# within what the two results' distances to the float64 truth allow, and replica is no farther from
# the truth than transformers' committed figures (fp32: KL mean/max, top-1, gradient errors; bf16:
# against transformers' bf16 weights and fp32 weights under autocast). The bounds are
# tools/crosscheck/bounds.py's (docs/crosscheck.md, "transformers"); none is a fixed number.
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$1
ROOT=$2
REF=$ROOT/tests/data/reference/transformers

parity() {  # parity OUT MODEL REFERENCE [FLAGS...]: parity JSON into OUT (thresholds off)
  local out=$1 model=$2 ref=$3
  shift 3
  "$BIN" parity --model "$model" --reference "$ref" --max-kl 1e9 --min-top1 0 \
    --max-grad-rel 1e9 --threads 2 --json "$@" >"$out" 2>"$out.log"
  local rc=$?
  [ $rc -eq 0 ] || { echo "parity $model $ref $*: exit $rc"; cat "$out.log"; }
  return $rc
}

cat >"$tmp/bounds_check.py" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], 'tools', 'crosscheck'))
import bounds
figs = json.load(open(sys.argv[2]))[sys.argv[3]]
case, tmp = sys.argv[3], sys.argv[4]
direct, r32, r16 = (json.load(open(os.path.join(tmp, f'{case}.{k}.json')))
                    for k in ('direct', 'fp32', 'bf16'))
tx, h = figs['fp32'], figs['truth_logit_half_ulp']
bad = []
def need(what, value, bound, ok):
    print(f'{case}: {what} = {value:.3g} (bound {bound})')
    if not ok:
        bad.append(what)
# fp32: replica no farther from the truth than transformers (the F32 truth's resolution).
for m in ('kl_mean', 'kl_max', 'grad_max_rel_err', 'grad_global_rel_err'):
    if r32.get(m) is not None and tx.get(m) is not None:
        ok, allowed, res = bounds.no_farther(m, r32[m], tx[m], h)
        need(f'replica fp32 {m} vs truth', r32[m], f'<= {allowed:.3g}', ok)
need('replica fp32 top-1 vs truth', r32['top1_agreement'], f'>= {tx["top1"]}',
     r32['top1_agreement'] >= tx['top1'])
# replica against transformers: both are near the truth, so near each other.
for m in ('kl_mean', 'kl_max', 'max_abs_logit_diff'):
    lim = bounds.between(m, r32[m], tx[m])
    need(f'replica vs transformers {m}', direct[m], f'<= {lim:.3g}', direct[m] <= lim)
dl = abs(direct['loss'] - direct['loss_ref'])
lim = abs(r32['loss'] - r32['loss_ref']) + tx['loss_abs_diff'] + 4e-16 * abs(r32['loss_ref'])
need('replica vs transformers |loss - loss_ref|', dl, f'<= {lim:.3g}', dl <= lim)
if direct.get('grad_max_rel_err') is not None:
    for m in ('grad_max_rel_err', 'grad_global_rel_err'):
        lim = bounds.between(m, r32[m], tx[m])
        need(f'replica vs transformers {m}', direct[m], f'<= {lim:.3g}', direct[m] <= lim)
# bf16: replica bf16 no farther than transformers' bf16 weights or autocast.
for p in ('bf16', 'autocast'):
    for m in ('kl_mean', 'kl_max'):
        need(f'replica bf16 {m} vs truth (transformers {p})', r16[m], f'<= {figs[p][m]:.3g}',
             r16[m] <= figs[p][m])
# top-1: the lower of the two recipes (their spread is top-1's resolution, docs/crosscheck.md).
lo = min(figs['bf16']['top1'], figs['autocast']['top1'])
need('replica bf16 top-1 vs truth (the lower of transformers bf16 and autocast)',
     r16['top1_agreement'], f'>= {lo:.4f}', r16['top1_agreement'] >= lo)
if bad:
    print(f'{case}: out of bounds: ' + ', '.join(bad))
    sys.exit(1)
PY

for entry in tiny-mha:olmo3/tiny-mha tiny-gqa:olmo3/tiny-gqa tiny-yarn:olmo3/tiny-yarn \
             bytes-mqa-2048:long/bytes-mqa-2048; do
  case=${entry%%:*}
  dir=$ROOT/tests/data/${entry#*:}
  check "$case: committed dump present" "[ -f '$REF/$case.safetensors' ]"
  # Gradients: where the committed dump has them, and wherever the truth has them (olmo3/*).
  grads=$(python3 -c 'import json, sys; f = json.load(open(sys.argv[1]))[sys.argv[2]]
print("--grads" if f["grads_in_dump"] else "")' "$REF/figures.json" "$case")
  truth_grads=
  case $entry in *:olmo3/*) truth_grads=--grads ;; esac
  check "$case: parity against transformers runs" \
    "parity '$tmp/$case.direct.json' '$dir' '$REF/$case.safetensors' $grads"
  check "$case: parity against the truth runs" \
    "parity '$tmp/$case.fp32.json' '$dir' '$dir/io.safetensors' $truth_grads"
  check "$case: bf16 parity against the truth runs" \
    "parity '$tmp/$case.bf16.json' '$dir' '$dir/io.safetensors' --precision bf16"
  check "$case: replica within bounds of transformers" \
    "python3 '$tmp/bounds_check.py' '$ROOT' '$REF/figures.json' '$case' '$tmp'"
done
cli_finish

#!/usr/bin/env bash
# Two builds of replica, the same results: runs one matrix of jobs with a BEFORE and an AFTER
# binary and compares what they produce, bit for bit. For a change that must move no result bit
# (a refactor of the backend seam, the optimizer, the layer table): build the commit before it and
# the commit after it, then
#   tools/same_bits.sh <before>/build/replica <after>/build/replica [work-dir]
# Every row is one job run by both binaries; a row holds when
#   - train: `replica compare` finds the two runs' metrics identical (tolerance 0, every step's loss,
#     grad norm, lr and evaluation), their eval lines are byte-identical, and the checkpoints at
#     steps 4 and 8 hold the same bytes of parameters, Adam m, v and step (whatever the ranks);
#   - parity: every field of `replica parity --json` that both print (logits, loss, gradients) is
#     identical; fields only one prints are named;
#   - eval, generate: the JSON output (perplexities; sampled token ids and text) is identical.
# Matrix: compute.precision fp32 and bf16 x {1 process with the tree accumulation; recomputation
# full; ZeRO-1 on 2 and 4 ranks; the sequential accumulation; ZeRO-3 on 2 and 4 ranks, with full
# recomputation and without the prefetch; a run saved at step 4 and resumed (1 rank, and 4 ranks
# resumed by 2 under ZeRO-3)}, parity on the three float64 fixtures, evaluation and sampling from a
# trained checkpoint. The MPI rows are left out (said so) when mpirun is absent.
# Prints one line per row and a summary; exit 0 iff every row holds, 1 if one differs, 2 on bad
# arguments. SAME_BITS_ROWS=<bash regex> runs only the rows whose names match (e.g. 'zero3|parity').
# Needs python3 (standard library) on PATH. Without a work-dir the runs go to a temporary
# directory removed at exit; with one they stay there, each row's logs beside its runs.
set -u
if [ $# -lt 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: tools/same_bits.sh <before-replica-binary> <after-replica-binary> [work-dir]" >&2
  echo "error: both binaries must exist and be executable (given: '${1:-}', '${2:-}')" >&2
  exit 2
fi
BEFORE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
AFTER=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$AFTER  # lib.sh's helpers and `replica compare` use the AFTER binary
. "$ROOT/tests/cli/lib.sh"
cli_init
if [ $# -ge 3 ]; then  # a work directory given: kept afterwards, for the logs and outputs
  rm -rf "$tmp"; mkdir -p "$3"; tmp=$(cd "$3" && pwd); KEEP_TMP=1
fi
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
MPI=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
have_mpi=1
command -v mpirun > /dev/null || have_mpi=0

arith_tokens "$tmp/tokens.npy" 0 300
head -n 3 "$ROOT/data/eval/sotu_heldout_ppl.jsonl" > "$tmp/held.jsonl"
{ tiny_model_384; cat <<'YAML'
data:
  paths: [tokens.npy]
  seq_len: 48
  seed: 3
train:
  max_steps: 8
  global_batch_instances: 16
  micro_batch_instances: 2
  threads: 2
  log_interval: 4
optim:
  lr: 3.0e-3
  schedule: {type: cosine, warmup: 2}
checkpoint:
  interval: 4
  keep: 3
eval:
  interval: 4
  sets: [held.jsonl]
  tokenizer: bytes
  leak_guard: "off"
YAML
} > "$tmp/tiny.yaml"

rows=0 differ=0 skipped=0
wanted() { [[ "$1" =~ ${SAME_BITS_ROWS:-.} ]]; }  # SAME_BITS_ROWS=<regex>: only the rows it matches
row() {  # row <name> <ok 0|1> [detail]
  rows=$((rows + 1))
  if [ "$2" = 0 ]; then echo "same    $1"; else echo "DIFFER  $1  ${3:-}"; differ=$((differ + 1)); fi
}

train() {  # train <binary> <ranks> <run-dir> [--set ...]
  local bin=$1 n=$2 dir=$3; shift 3
  if [ "$n" = 1 ]; then
    "$bin" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1
  else
    "${MPI[@]}" -np "$n" "$bin" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1
  fi
}

compare_runs() {  # compare_runs <name> <run-a> <run-b>
  local name=$1 a=$2 b=$3 why=""
  "$AFTER" compare "$a" "$b" > "$tmp/cmp.txt" 2>&1 || why="metrics ($(tail -n 1 "$tmp/cmp.txt"))"
  cmp -s <(grep '"eval"' "$a/metrics.jsonl") <(grep '"eval"' "$b/metrics.jsonl") || why="$why eval"
  for s in 00000004 00000008; do
    same_checkpoint_state "$a/checkpoints/step-$s" "$b/checkpoints/step-$s" > /dev/null 2>&1 \
      || why="$why checkpoint-$s"
  done
  [ -z "$why" ]; row "$name" $? "$why"
}

# train_row <name> <ranks> [--set ...]: one run per binary, compared.
train_row() {
  local name=$1 n=$2; shift 2
  wanted "$name" || return 0
  if [ "$n" != 1 ] && [ "$have_mpi" = 0 ]; then skipped=$((skipped + 1)); echo "skip    $name (no mpirun)"; return; fi
  local a="$tmp/before-$name" b="$tmp/after-$name"
  train "$BEFORE" "$n" "$a" "$@" || { row "$name" 1 "before exit $? ($a.log)"; return; }
  train "$AFTER" "$n" "$b" "$@" || { row "$name" 1 "after exit $? ($b.log)"; return; }
  compare_runs "$name" "$a" "$b"
}

# resume_row <name> <ranks-first> <ranks-then> [--set ...]: saved at step 4, resumed to step 8.
resume_row() {
  local name=$1 n1=$2 n2=$3; shift 3
  wanted "$name" || return 0
  if { [ "$n1" != 1 ] || [ "$n2" != 1 ]; } && [ "$have_mpi" = 0 ]; then
    skipped=$((skipped + 1)); echo "skip    $name (no mpirun)"; return
  fi
  local who dir
  for who in before after; do
    local bin=$BEFORE; [ "$who" = after ] && bin=$AFTER
    dir="$tmp/$who-$name"
    train "$bin" "$n1" "$dir" "$@" --set train.max_steps=4 --set optim.schedule.t_max=8 \
      || { row "$name" 1 "$who first part exit $? ($dir.log)"; return; }
    train "$bin" "$n2" "$dir" "$@" || { row "$name" 1 "$who resume exit $? ($dir.log)"; return; }
    grep -q "resuming from .*step-00000004" "$dir.log" || { row "$name" 1 "$who did not resume"; return; }
  done
  compare_runs "$name" "$tmp/before-$name" "$tmp/after-$name"
}

SEQ=(--set train.grad_accumulation=sequential)
Z3=(--set parallel.sharding=zero3 "${SEQ[@]}")
for p in fp32 bf16; do
  P=(--set compute.precision=$p)
  train_row "$p-1rank" 1 "${P[@]}"
  train_row "$p-1rank-recompute-full" 1 "${P[@]}" --set train.recompute=full
  train_row "$p-zero1-2ranks" 2 "${P[@]}"
  train_row "$p-zero1-4ranks" 4 "${P[@]}"
  train_row "$p-1rank-sequential" 1 "${P[@]}" "${SEQ[@]}"
  train_row "$p-zero3-2ranks" 2 "${P[@]}" "${Z3[@]}"
  train_row "$p-zero3-4ranks-recompute-full" 4 "${P[@]}" "${Z3[@]}" --set train.recompute=full
  train_row "$p-zero3-2ranks-no-prefetch" 2 "${P[@]}" "${Z3[@]}" --set parallel.prefetch=false
  resume_row "$p-resume-1rank" 1 1 "${P[@]}"
  resume_row "$p-resume-zero3-4-then-2ranks" 4 2 "${P[@]}" "${Z3[@]}"
done

# Parity on the float64 fixtures: every field both versions print, but the timings; fields only
# one of them prints are named in the row (an added output is not a moved bit).
same_fields() { python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
skip = lambda k: "time" in k or k.endswith("_s")
keys = sorted(k for k in set(a) & set(b) if not skip(k))
differ = [k for k in keys if a[k] != b[k]]
added = sorted(set(b) - set(a)); dropped = sorted(set(a) - set(b))
note = (" only after: " + ", ".join(added) if added else "") + (" only before: " + ", ".join(dropped) if dropped else "")
print(f"{len(keys)} fields" + (" DIFFER: " + ", ".join(differ) if differ else " equal") + (";" if note else "") + note)
sys.exit(1 if differ else 0)' "$1" "$2"; }
for f in tiny-mha tiny-gqa tiny-yarn; do
  wanted "parity-$f" || continue
  for who in before after; do
    bin=$BEFORE; [ "$who" = after ] && bin=$AFTER
    "$bin" parity --model "$ROOT/tests/data/olmo3/$f" --reference "$ROOT/tests/data/olmo3/$f/io.safetensors" \
      --grads --json --threads 2 > "$tmp/parity-$who-$f.json" 2> "$tmp/parity-$who-$f.err"
  done
  if [ -s "$tmp/parity-before-$f.json" ] && [ -s "$tmp/parity-after-$f.json" ]; then
    detail=$(same_fields "$tmp/parity-before-$f.json" "$tmp/parity-after-$f.json")
    row "parity-$f" $? "$detail"
    [ "${detail#*only}" != "$detail" ] && echo "        ($detail)"
  else
    row "parity-$f" 1 "no JSON ($tmp/parity-*-$f.err)"
  fi
done

# Evaluation and sampling from the fp32 and bf16 1-rank checkpoints at step 8.
for p in fp32 bf16; do
  wanted "eval-$p" || wanted "generate-$p" || continue
  [ -d "$tmp/before-$p-1rank/checkpoints" ] || train_row "$p-1rank" 1 --set compute.precision=$p
  for who in before after; do
    bin=$BEFORE; [ "$who" = after ] && bin=$AFTER
    ck="$tmp/$who-$p-1rank/checkpoints/step-00000008"
    "$bin" eval --model "$ck" --eval "$tmp/held.jsonl" --tokenizer bytes --precision $p --json --threads 2 \
      2> /dev/null | python3 -c '
import json, sys
def strip(o):
    if isinstance(o, dict): return {k: strip(v) for k, v in o.items() if k not in ("seconds", "model") and "time" not in k and "tokens_per" not in k}
    if isinstance(o, list): return [strip(v) for v in o]
    return o
print(json.dumps(strip(json.load(sys.stdin)), sort_keys=True))' > "$tmp/eval-$who-$p.txt" 2>&1
    "$bin" generate --model "$ck" --tokenizer bytes --prompt "The state of" --prompt "We" \
      --max-new-tokens 12 --temperature 0.8 --top-k 40 --seed 7 --ignore-eos --json --threads 2 \
      2> /dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    print(json.dumps({k: v for k, v in o.items() if "time" not in k and not k.endswith("_s") and "per_s" not in k}, sort_keys=True))' \
      > "$tmp/generate-$who-$p.txt" 2>&1
  done
  for what in eval generate; do
    if [ -s "$tmp/$what-before-$p.txt" ]; then
      cmp -s "$tmp/$what-before-$p.txt" "$tmp/$what-after-$p.txt"
      row "$what-$p" $? "(diff $tmp/$what-before-$p.txt $tmp/$what-after-$p.txt)"
    else
      row "$what-$p" 1 "no output from the before binary"
    fi
  done
done

echo "same_bits: $rows rows, $((rows - differ)) identical, $differ differ, $skipped skipped"
echo "  before: $BEFORE"
echo "  after:  $AFTER"
[ "$differ" = 0 ]

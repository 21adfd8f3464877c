#!/usr/bin/env bash
# ctest-labels: long
# Sharded checkpoints end to end (docs/design.md §4 format 2, docs/training.md): on a tiny Olmo 3
#  - every rank writes its own shard (no model.safetensors anywhere); 1 and 4 ranks end with the
#    same params, Adam m, v and step (assembled from the shards) and `replica convert` exports
#    byte-identical weights from either;
#  - saved at step 10 by R ranks and resumed by R' ranks (4 -> 1, 1 -> 4, 2 -> 4): `replica
#    compare` against the uninterrupted run passes at tolerance 0 and the final state is the same;
#  - one rank SIGKILLed while writing the step-20 checkpoint (after its shard, before DONE; and
#    rank 0 between rename and DONE): the job ends, step 10 still verifies, the resumed run equals
#    the uninterrupted one;
#  - `replica parity` reads a sharded checkpoint (logits equal its export's) and a checkpoint
#    against a reference dump;
#  - a missing or truncated shard: exit 2 naming the file.
# Skips the multi-rank parts (exit 0) when mpirun is absent.
#   usage: sharded_checkpoint.sh <replica-binary> <repo-root>
set -u
BIN=$1
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
MPI=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
have_mpi=1
command -v mpirun > /dev/null || { echo "SKIP (multi-rank parts): mpirun not found"; have_mpi=0; }

arith_tokens "$tmp/tokens.npy" 0 200
{ tiny_model_256 2; cat <<'YAML'
data:
  paths: [tokens.npy]
  seq_len: 32
  seed: 3
train:
  max_steps: 20
  global_batch_instances: 8
  micro_batch_instances: 2
  threads: 1
  log_interval: 10
optim:
  lr: 3.0e-3
  schedule: {type: cosine, warmup: 5, t_max: 20}
checkpoint:
  interval: 10
  keep: 3
YAML
} > "$tmp/tiny.yaml"

run() {  # run <ranks> <run-dir> [--set ...]: 1 = plain replica train, else under mpirun
  local n=$1 dir=$2; shift 2
  if [ "$n" = 1 ]; then
    "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1
  else
    "${MPI[@]}" -np "$n" "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1
  fi
}
final() { echo "$1/checkpoints/step-00000020"; }
same_run() {  # same_run <what> <run-a> <run-b>: metrics at tolerance 0 and the same final state
  "$BIN" compare "$2" "$3" > "$tmp/cmp.txt" 2>&1 || { echo "FAIL: $1: metrics differ"; cat "$tmp/cmp.txt"; fail=1; }
  same_checkpoint_state "$(final "$2")" "$(final "$3")" || { echo "FAIL: $1: final state differs"; fail=1; }
}

run 1 "$tmp/R1" || { echo "FAIL: 1-rank run exit $?"; cat "$tmp/R1.log"; exit 1; }
check "1 rank writes one shard and no model.safetensors" \
  '[ -f "$(final "$tmp/R1")/shard-00000-of-00001.safetensors" ] && [ ! -e "$(final "$tmp/R1")/model.safetensors" ]'
"$BIN" convert --from "$tmp/R1" --to "$tmp/R1hf" --tokenizer none > /dev/null 2> "$tmp/err" \
  || { echo "FAIL: convert of a sharded checkpoint: $(cat "$tmp/err")"; fail=1; }

if [ $have_mpi = 1 ]; then
  run 4 "$tmp/R4" || { echo "FAIL: 4-rank run exit $?"; cat "$tmp/R4.log"; fail=1; }
  check "4 ranks write 4 shards and no model.safetensors" \
    '[ "$(ls "$(final "$tmp/R4")"/shard-*-of-00004.safetensors | wc -l)" = 4 ] && [ ! -e "$(final "$tmp/R4")/model.safetensors" ]'
  check "MANIFEST.json: version 2, 4 shards covering the layout" \
    'python3 -c "import json,sys; m=json.load(open(sys.argv[1])); s=m[\"sharded\"]; assert m[\"version\"]==2 and s[\"world\"]==4 and s[\"shards\"][0][\"begin\"]==0 and s[\"shards\"][-1][\"end\"]==s[\"total_floats\"]" "$(final "$tmp/R4")/MANIFEST.json"'
  same_run "4 ranks vs 1" "$tmp/R1" "$tmp/R4"
  "$BIN" convert --from "$tmp/R4" --to "$tmp/R4hf" --tokenizer none > /dev/null 2> "$tmp/err" \
    || { echo "FAIL: convert of a 4-shard checkpoint: $(cat "$tmp/err")"; fail=1; }
  check "export from 4 shards equals export from 1" 'cmp -s "$tmp/R1hf/model.safetensors" "$tmp/R4hf/model.safetensors"'

  # Saved by R ranks at step 10, resumed by R' ranks.
  for pair in 4:1 1:4 2:4; do
    a=${pair%:*} b=${pair#*:} dir="$tmp/E$a$b"
    run "$a" "$dir" --set train.max_steps=10 || { echo "FAIL: $pair part 1 exit $?"; cat "$dir.log"; fail=1; continue; }
    run "$b" "$dir" || { echo "FAIL: $pair resume exit $?"; cat "$dir.log"; fail=1; continue; }
    grep -q "resuming from .*step-00000010" "$dir.log" || { echo "FAIL: $pair did not resume from 10"; cat "$dir.log"; fail=1; }
    same_run "saved on $a ranks, resumed on $b" "$tmp/R1" "$dir"
  done

  # A rank killed inside the step-20 write: after its shard is written (rank 2), or rank 0
  # between the rename and DONE. The job ends; step 10 stays usable; the resumed run is identical.
  for fault in checkpoint:20:2 checkpoint:20:before-done:0; do
    rank=${fault##*:} spec=${fault%:*} dir="$tmp/K$rank"
    # mpirun normally ends the job within seconds when a rank dies (3 s on an idle 2-core
    # machine). Open MPI 4.1's mpirun itself sometimes fails at that: it hung in two ctest runs and
    # crashed (SIGSEGV) once in 26 runs of this job. End it and its ranks after 120 s rather
    # than wait for ctest's timeout: the job still ended, and what this test checks — the
    # checkpoints it left — is unchanged.
    t0=$SECONDS
    REPLICA_FAULT=$spec REPLICA_FAULT_RANK=$rank timeout -s KILL 120 \
      "${MPI[@]}" -np 4 "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet >> "$dir.log" 2>&1; rc=$?
    [ $((SECONDS - t0)) -ge 120 ] && echo "NOTE: $spec on rank $rank: mpirun did not end the job by itself; killed after 120 s"
    check "$spec on rank $rank ends the job (exit $rc)" '[ $rc -ne 0 ]'
    check "$spec on rank $rank: no complete step 20" '[ ! -f "$(final "$dir")/DONE" ]'
    "$BIN" convert --from "$dir/checkpoints/step-00000010" --to "$dir.hf" --tokenizer none > /dev/null 2> "$tmp/err" \
      || { echo "FAIL: $spec on rank $rank: step 10 does not verify: $(cat "$tmp/err")"; fail=1; }
    : > "$dir.log"  # the resume's output alone
    run 2 "$dir" || { echo "FAIL: $spec resume exit $?"; cat "$dir.log"; fail=1; continue; }
    grep -q "resuming from .*step-00000010" "$dir.log" || { echo "FAIL: $spec: did not resume from 10"; cat "$dir.log"; fail=1; }
    # The skipped step 20 is reported once for the job, by rank 0, not once per rank.
    skips=$(grep -c "skipping checkpoint .*step-00000020" "$dir.log")
    if [ "$spec" = checkpoint:20:before-done ]; then
      check "$spec: the skip of step 20 is reported once, not per rank (got $skips)" '[ "$skips" -eq 1 ]'
    else
      check "$spec: the skip of step 20 is reported at most once (got $skips)" '[ "$skips" -le 1 ]'
    fi
    same_run "rank $rank killed in checkpoint 20 ($spec), resumed on 2" "$tmp/R1" "$dir"
  done
  src=$(final "$tmp/R4")
else
  src=$(final "$tmp/R1")
fi

# Inference reads a sharded checkpoint whole: its logits equal those of its own export.
"$BIN" parity --model "$(dirname "$(dirname "$src")")" --against "$tmp/R1hf" --seq-len 16 --max-kl 0 \
  --min-top1 1 > "$tmp/parity.txt" 2>&1 || { echo "FAIL: parity of a sharded checkpoint"; cat "$tmp/parity.txt"; fail=1; }
# parity --reference takes a checkpoint too (version 1 here: convert's import).
DATA=$2/tests/data/olmo3/tiny-gqa
"$BIN" convert --from "$DATA" --to "$tmp/gqa-ckpt" > /dev/null 2>&1 \
  && "$BIN" parity --model "$tmp/gqa-ckpt" --reference "$DATA/io.safetensors" > "$tmp/parity.txt" 2>&1 \
  || { echo "FAIL: parity --reference of a checkpoint"; cat "$tmp/parity.txt"; fail=1; }

# Damaged shards: exit 2 naming the file, nothing written.
expect_bad() {  # expect_bad <what> <text> <checkpoint-dir>
  "$BIN" convert --from "$3" --to "$tmp/bad.hf" --tokenizer none > /dev/null 2> "$tmp/err"; local rc=$?
  [ $rc -eq 2 ] && grep -q -- "$2" "$tmp/err" && [ ! -e "$tmp/bad.hf" ] \
    || { echo "FAIL: $1: exit $rc: $(cat "$tmp/err")"; fail=1; }
}
shard=$(ls "$src"/shard-*.safetensors | tail -1); name=$(basename "$shard")
cp -r "$src" "$tmp/missing"; rm "$tmp/missing/$name"
expect_bad "missing shard" "$tmp/missing/$name: missing" "$tmp/missing"
cp -r "$src" "$tmp/trunc"; truncate -s -8 "$tmp/trunc/$name"
expect_bad "truncated shard" "$tmp/trunc/$name: size" "$tmp/trunc"

cli_finish

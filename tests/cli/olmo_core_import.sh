#!/usr/bin/env bash
# ctest-labels: long
# OLMo-core config.json as a run config (docs/olmo-core.md):
#  - `replica plan` on the four official Olmo 3 stage configs (both block spellings) gives the
#    parameters, steps, tokens per step, warm-up and LR of replica's own presets, and LRs equal to
#    OLMo-core's scheduler formulas (evaluated here in Python);
#  - every unsupported field exits 2 naming its JSON path (plan, train and import-config);
#  - a small run from an OLMo-core-style config.json over a mix of the bundled corpus and the same
#    run from `replica import-config`'s YAML are bit-identical (`replica compare`);
#  - `replica data batch` names the same instances from config.json, data_paths.txt and the YAML,
#    agrees with `replica data order`, decodes text that is in the corpus, gives OLMo-core's
#    dataset fingerprint, and for a late batch reads only the files that hold its instances.
#   usage: olmo_core_import.sh <replica-binary> <repo-root>
set -u
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$(realpath "$1")
ROOT=$(realpath "$2")
FIX="$ROOT/tests/data/olmo-core"
PY=/usr/bin/python3  # numpy for str(np.uint32) in OLMo-core's fingerprint text
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=2

# --- plan: each stage's config.json vs replica's preset and OLMo-core's formulas ---------------
STEPS=1,1000,1999,2000,2001,100000,476838,597045,597046,597047,1000000,1192092,1192093,1413814,1668930,1668931,47683,47684
plan() {  # plan <out.json> <config> [args...]
  local out=$1; shift
  "$BIN" plan "$@" --lr-at "$STEPS" --json > "$out" 2> "$out.err"
}
same_plan() {  # same_plan <a.json> <b.json>: parameters, steps, tokens per step, every LR
  jq -e -n --slurpfile a "$1" --slurpfile b "$2" \
    '$a[0].params == $b[0].params and $a[0].steps == $b[0].steps and
     $a[0].tokens_per_step == $b[0].tokens_per_step and $a[0].lr_at == $b[0].lr_at and
     $a[0].flops_per_token == $b[0].flops_per_token' > /dev/null
}
declare -A PRESET=([pretrain-1]=olmo3-7b-stage1.yaml [pretrain-2]=olmo3-7b-stage1-part2.yaml
                   [midtrain]=olmo3-7b-stage2.yaml)
for stage in pretrain-1 pretrain-2 midtrain; do
  extra=()
  [ "$stage" = pretrain-2 ] && extra=(--set train.max_steps=1413814)  # 1 epoch: needs the data
  plan "$tmp/$stage.preset.json" "$ROOT/configs/${PRESET[$stage]}"
  for spelling in sequence_mixer attention; do
    plan "$tmp/$stage.$spelling.json" "$FIX/OLMo-3-1025-7B-$stage.$spelling.json" "${extra[@]}"
    rc=$?
    check "plan $stage ($spelling) exits 0 (got $rc: $(cat "$tmp/$stage.$spelling.json.err"))" \
      '[ $rc -eq 0 ]'
    check "plan $stage ($spelling) equals the preset ${PRESET[$stage]}" \
      'same_plan "$tmp/$stage.$spelling.json" "$tmp/$stage.preset.json"'
  done
done
"$BIN" plan "$FIX/OLMo-3-1025-7B-pretrain-2.sequence_mixer.json" > /dev/null 2> "$tmp/p2.err"; rc=$?
check "pretrain-2 without the data or --set train.max_steps exits 2 naming trainer.hard_stop (rc $rc)" \
  '[ $rc -eq 2 ] && grep -q "epochs" "$tmp/p2.err"'

# long-context: refused for training (float8; its packed dataset and document lengths are
# mapped to data.packing and data.generate_doc_lengths), planned with --allow-unsupported; its
# YaRN on the full-attention layers is mapped to the released HF config's rope_scaling.
for spelling in sequence_mixer attention; do
  f="$FIX/OLMo-3-1025-7B-long-context.$spelling.json"
  "$BIN" plan "$f" > /dev/null 2> "$tmp/lc.err"; rc=$?
  check "plan long-context ($spelling) exits 2 naming float8, not the YaRN or the packing (rc $rc)" \
    '[ $rc -eq 2 ] && ! grep -q "rope.scaling" "$tmp/lc.err" &&
     grep -q "train_module.float8_config.enabled" "$tmp/lc.err" &&
     ! grep -q "dataset" "$tmp/lc.err"'
  plan "$tmp/long-context.$spelling.json" "$f" --allow-unsupported; rc=$?
  check "plan long-context --allow-unsupported ($spelling) exits 0 with warnings (rc $rc)" \
    '[ $rc -eq 0 ] && grep -q "NOT reproduced" "$tmp/long-context.$spelling.json.err"'
  check "plan long-context ($spelling): full layers YaRN as released, sliding layers plain" \
    'jq -e ".rope.full_attention == {rope_type: \"yarn\", rope_theta: 500000, factor: 8,
              original_max_position_embeddings: 8192, beta_fast: 32, beta_slow: 1,
              attention_factor: 1.2079441541679836, truncate: true} and
            .rope.sliding_attention.rope_type == \"default\" and
            .rope.sliding_attention.rope_theta == 500000" \
       "$tmp/long-context.$spelling.json" > /dev/null'
  "$BIN" import-config "$f" --out "$tmp/lc.$spelling.yaml" --allow-unsupported \
    > /dev/null 2>&1; rc=$?
  check "import-config long-context ($spelling): rope_scaling with the JSON paths (rc $rc)" \
    '[ $rc -eq 0 ] && grep -q "attention_factor: 1.2079441541679836 .*# 0.1 \* ln(model.block_overrides.{3,7,11,15,19,23,27,31}.$spelling.rope.scaling.factor) + 1" "$tmp/lc.$spelling.yaml" &&
     grep -q "original_max_position_embeddings: 8192 .*# model.block_overrides.{3,7,11,15,19,23,27,31}.$spelling.rope.scaling.old_context_len" "$tmp/lc.$spelling.yaml"'
done
check "long-context: both spellings plan alike" \
  'same_plan "$tmp/long-context.sequence_mixer.json" "$tmp/long-context.attention.json"'

# OLMo-core's formulas (optim/scheduler.py; the trainer's t_max = ceil(max_duration / batch)).
"$PY" - "$tmp" <<'PY' > "$tmp/formulas.txt" 2>&1 || { echo "FAIL: formulas"; cat "$tmp/formulas.txt"; fail=1; }
import json, math, sys
tmp = sys.argv[1]
def warm(lr, cur, w, mn=0.0): return mn + (lr - mn) * min(cur, w) / w
def cos(lr, cur, t_max, w, a):
    eta = lr * a
    if cur < w: return warm(lr, cur, w)
    if cur >= t_max: return eta
    return eta + (lr - eta) * (1 + math.cos(math.pi * (cur - w) / (t_max - w))) / 2
def halfcos(lr, cur, t_max, w, a):
    eta = lr * a
    if cur < w: return warm(eta + (lr - eta) / 2, cur, w)
    if cur >= t_max: return eta
    c, t = cur - w, t_max - w
    return eta + (lr - eta) * (1 + math.cos(math.pi * (c + t) / (t * 2))) / 2
def linear(lr, cur, t_max, w, a):
    eta = lr * a
    if cur < w: return warm(lr, cur, w)
    if cur >= t_max: return eta
    return lr - (lr - eta) * ((cur - w) / (t_max - w))
ceil = lambda a, b: -(-a // b)
stages = {
  "pretrain-1": (lambda s: cos(3e-4, s, ceil(5 * 10**12, 8192 * 512), 2000, 0.1), 597046, 8192 * 512),
  "pretrain-2": (lambda s: halfcos(3e-4, s, ceil(7 * 10**12, 8192 * 512),
                                   (5 * 10**12 // (8192 * 512)) // 2 + 1000, 0.1), 1413814, 8192 * 512),
  "midtrain": (lambda s: linear(0.00020712352850360292, s, ceil(10**11, 2**21), 0, 0.0), 47684, 2**21),
  "long-context.sequence_mixer": (lambda s: linear(0.00020712352850360292, s,
                                                   ceil(5 * 10**12, 65536 * 64), 200, 0.0), 597046, 65536 * 64),
}
bad = 0
for stage, (f, steps, tps) in stages.items():
    name = stage if "." in stage else stage + ".sequence_mixer"
    p = json.load(open(f"{tmp}/{name}.json"))
    if p["steps"] != steps or p["tokens_per_step"] != tps:
        print(f"{stage}: steps {p['steps']} tokens/step {p['tokens_per_step']}"); bad = 1
    for s, lr in p["lr_at"].items():
        if lr != f(int(s)):
            print(f"{stage}: lr at {s}: replica {lr!r} OLMo-core formula {f(int(s))!r}"); bad = 1
sys.exit(bad)
PY
[ -s "$tmp/formulas.txt" ] && cat "$tmp/formulas.txt"

# --- unsupported fields: exit 2 with the JSON path, for plan, train and import-config ----------
P1="$FIX/OLMo-3-1025-7B-pretrain-1.sequence_mixer.json"
refuse() {  # refuse <jq edit> <json path>
  local want=$2
  jq "$1" "$P1" > "$tmp/edited.json"
  for cmd in plan import-config train; do
    local args=()
    [ $cmd = train ] && args=(--run-dir "$tmp/refused-run")
    "$BIN" $cmd "$tmp/edited.json" "${args[@]}" > "$tmp/out" 2> "$tmp/err"; rc=$?
    check "$cmd refuses $1 with exit 2 naming '$2' (rc $rc: $(head -c 400 "$tmp/err"))" \
      '[ $rc -eq 2 ] && grep -qF "$want" "$tmp/err" && [ ! -s "$tmp/out" ] && [ ! -e "$tmp/refused-run" ]'
  done
}
refuse '.model.block.sequence_mixer.clip_qkv = 8' 'model.block.sequence_mixer.clip_qkv'
refuse '.model.block.sequence_mixer.use_head_qk_norm = true' 'model.block.sequence_mixer.use_head_qk_norm'
refuse '.model.block.feed_forward_moe = {"_CLASS_": "olmo_core.nn.moe.MoEConfig"}' 'model.block.feed_forward_moe'
refuse '.model.block.sequence_mixer.rope.scaling = {"_CLASS_": "olmo_core.nn.rope.YaRNRoPEScalingConfig", "factor": 8}' 'model.block.sequence_mixer.rope.scaling'
refuse '.train_module.scheduler._CLASS_ = "my_lab.schedules.Fancy"' 'train_module.scheduler._CLASS_'
refuse '.train_module.float8_config.enabled = true' 'train_module.float8_config.enabled'
refuse '.trainer.callbacks.custom = {"_CLASS_": "my_lab.callbacks.Custom"}' 'trainer.callbacks.custom._CLASS_'
refuse '.trainer.frobnicate = 3' 'trainer.frobnicate'
refuse '.train_module.optim.step_increment_bugfix = false' 'train_module.optim.step_increment_bugfix'

# --- the test corpus as an OLMo-core data tree: 6 files of a mix, with tails --------------------
zstd -dc "$ROOT/data/corpus/sotu.jsonl.zst" | head -n 30 > "$tmp/sotu.jsonl"
zstd -dc "$ROOT/data/corpus/moby_dick.jsonl.zst" > "$tmp/moby_dick.jsonl"
"$BIN" tokenize --tokenizer dolma2 "$tmp/sotu.jsonl" "$tmp/moby_dick.jsonl" --out "$tmp/tok" \
  --no-progress > /dev/null || { echo "FAIL: tokenize"; exit 1; }
TREE="$tmp/tree"
D="$TREE/preprocessed/replica-corpus/allenai/dolma2-tokenizer"
mkdir -p "$D/sotu" "$D/moby_dick"
cut_tokens() {  # cut_tokens <src.npy> <first token> <count> <dst>
  tail -c +$(($2 * 4 + 1)) "$1" | head -c $(($3 * 4)) > "$4"
}
cut_tokens "$tmp/tok/sotu.npy" 0 20000 "$D/sotu/000000.npy"
cut_tokens "$tmp/tok/sotu.npy" 20000 15000 "$D/sotu/000001.npy"
cut_tokens "$tmp/tok/sotu.npy" 35000 9050 "$D/sotu/000002.npy"
cut_tokens "$tmp/tok/moby_dick.npy" 0 12000 "$D/moby_dick/000000.npy"
cut_tokens "$tmp/tok/moby_dick.npy" 12000 30000 "$D/moby_dick/000001.npy"
cut_tokens "$tmp/tok/moby_dick.npy" 42000 7777 "$D/moby_dick/000002.npy"
check "corpus tree has 6 files of the cut sizes" \
  '[ "$(stat -c %s "$D/sotu/000002.npy")" = 36200 ] && [ "$(stat -c %s "$D/moby_dick/000002.npy")" = 31108 ]'
MAP=(--mix-dir "$FIX/mixes" --path-map "/olmo-core-test-data=$TREE")
TINY="$FIX/tiny-corpus.sequence_mixer.json"

# --- a small run from config.json and from the imported YAML: bit-identical ---------------------
"$BIN" import-config "$TINY" "${MAP[@]}" --out "$tmp/tiny.yaml" 2> "$tmp/import.err"; rc=$?
check "import-config tiny exits 0 (rc $rc: $(cat "$tmp/import.err"))" '[ $rc -eq 0 ]'
check "the YAML names the JSON path beside each key" \
  'grep -q "num_attention_heads: 4 .*# model.block.sequence_mixer.n_heads" "$tmp/tiny.yaml" &&
   grep -q "global_batch_instances: 4 .*# data_loader.global_batch_size / dataset.sequence_length" "$tmp/tiny.yaml" &&
   grep -q "trainer.callbacks.wandb: WandBCallback" "$tmp/tiny.yaml"'
"$BIN" import-config "$FIX/tiny-corpus.attention.json" "${MAP[@]}" --out "$tmp/tiny-att.yaml" 2> /dev/null
check "both spellings import to the same settings" \
  'diff <(grep -v "^#" "$tmp/tiny.yaml" | sed "s/ *#.*//") <(grep -v "^#" "$tmp/tiny-att.yaml" | sed "s/ *#.*//") > /dev/null'
"$BIN" train "$TINY" "${MAP[@]}" --set train.threads=2 --run-dir "$tmp/runA" --quiet > /dev/null 2> "$tmp/runA.err"; rc=$?
check "train from config.json exits 0 (rc $rc: $(tail -c 600 "$tmp/runA.err"))" '[ $rc -eq 0 ]'
( cd / && "$BIN" train "$tmp/tiny.yaml" --set train.threads=2 --run-dir "$tmp/runB" --quiet > /dev/null 2> "$tmp/runB.err" ); rc=$?
check "train from the imported YAML exits 0 (rc $rc: $(tail -c 600 "$tmp/runB.err"))" '[ $rc -eq 0 ]'
"$BIN" compare "$tmp/runA" "$tmp/runB" > "$tmp/compare.txt"; rc=$?
check "the two runs are bit-identical (replica compare rc $rc)" '[ $rc -eq 0 ]'
check "6 steps were trained" '[ "$(grep -c "\"loss\"" "$tmp/runA/metrics.jsonl")" -ge 6 ]'
# The long-context form (YaRN on the full-attention layer) trains from config.json as from its YAML.
TINY_LC="$FIX/tiny-corpus-long-context.sequence_mixer.json"
"$BIN" import-config "$TINY_LC" "${MAP[@]}" --out "$tmp/tiny-lc.yaml" 2> /dev/null; rc=$?
check "import-config tiny long-context: YaRN from block_overrides.3 (rc $rc)" \
  '[ $rc -eq 0 ] && grep -q "factor: 4 .*# model.block_overrides.3.sequence_mixer.rope.scaling.factor" "$tmp/tiny-lc.yaml" &&
   grep -q "original_max_position_embeddings: 16 .*old_context_len" "$tmp/tiny-lc.yaml"'
"$BIN" train "$TINY_LC" "${MAP[@]}" --set train.threads=2 --run-dir "$tmp/runL1" --quiet \
  > /dev/null 2> "$tmp/runL1.err"; rc=$?
check "train tiny long-context from config.json exits 0 (rc $rc: $(tail -c 600 "$tmp/runL1.err"))" '[ $rc -eq 0 ]'
( cd / && "$BIN" train "$tmp/tiny-lc.yaml" --set train.threads=2 --run-dir "$tmp/runL2" --quiet \
  > /dev/null 2>&1 ); rc=$?
"$BIN" compare "$tmp/runL1" "$tmp/runL2" > /dev/null; rc2=$?
check "tiny long-context: config.json and YAML runs bit-identical (train rc $rc, compare rc $rc2)" \
  '[ $rc -eq 0 ] && [ $rc2 -eq 0 ]'
check "tiny long-context trains with YaRN: its config says so, its first loss is not tiny-corpus's" \
  'grep -q "rope_scaling.*yarn" "$tmp/runL1/config.yaml" &&
   [ "$(jq -s "map(select(.step == 1 and .loss))[0].loss" "$tmp/runL1/metrics.jsonl")" != \
     "$(jq -s "map(select(.step == 1 and .loss))[0].loss" "$tmp/runA/metrics.jsonl")" ]'
"$BIN" train "$TINY" --run-dir "$tmp/runC" > /dev/null 2> "$tmp/runC.err"; rc=$?
check "train without the mix mapped exits 2 naming dataset.mix (rc $rc)" \
  '[ $rc -eq 2 ] && grep -q "dataset.mix" "$tmp/runC.err" && [ ! -e "$tmp/runC/metrics.jsonl" ]'

# --- batch lookup -------------------------------------------------------------------------------
B=100
"$BIN" data batch $B --config "$TINY" "${MAP[@]}" --tokens 12 --json > "$tmp/b1.json"; rc=$?
check "data batch from config.json exits 0 (rc $rc)" '[ $rc -eq 0 ]'
for f in sotu/000000 sotu/000001 sotu/000002 moby_dick/000000 moby_dick/000001 moby_dick/000002; do
  echo "s3://ai2-llm/preprocessed/replica-corpus/allenai/dolma2-tokenizer/$f.npy"
done > "$tmp/data_paths.txt"
"$BIN" data batch $B --data-paths "$tmp/data_paths.txt" --path-map "s3://ai2-llm=$TREE" \
  --seq-len 64 --seed 7 --global-batch-tokens 256 --max-target-seq-len 64 --tokens 12 --json \
  > "$tmp/b2.json"; rc=$?
check "data batch from data_paths.txt exits 0 (rc $rc)" '[ $rc -eq 0 ]'
"$BIN" data batch --step $((B + 1)) --config "$tmp/tiny.yaml" --tokens 12 --json > "$tmp/b3.json"; rc=$?
check "data batch --step from the imported YAML exits 0 (rc $rc)" '[ $rc -eq 0 ]'
check "config.json, data_paths.txt and YAML name the same instances and tokens" \
  '[ "$(jq -c "[.instances[] | [.instance, .token_offset, .tokens]]" "$tmp/b1.json")" = "$(jq -c "[.instances[] | [.instance, .token_offset, .tokens]]" "$tmp/b2.json")" ] &&
   [ "$(jq -c "[.instances[] | [.instance, .token_offset, .tokens]]" "$tmp/b1.json")" = "$(jq -c "[.instances[] | [.instance, .token_offset, .tokens]]" "$tmp/b3.json")" ] &&
   [ "$(jq -r .olmo_core_fingerprint "$tmp/b1.json")" = "$(jq -r .olmo_core_fingerprint "$tmp/b2.json")" ]'
N=$(jq .num_instances "$tmp/b1.json")
"$BIN" data order --instances "$N" --seed 7 --epoch 1 --global-batch 4 --batch $B --json > "$tmp/order.json"
check "data batch agrees with data order's row $B" \
  '[ "$(jq -c .global "$tmp/order.json")" = "$(jq -c "[.instances[].instance]" "$tmp/b1.json")" ]'
"$PY" - "$tmp/b1.json" "$D" "$ROOT/data/corpus/moby_dick.jsonl.zst" "$tmp" <<'PY' || { echo "FAIL: fingerprint / decoded text"; fail=1; }
import hashlib, json, os, subprocess, sys
import numpy as np
b = json.load(open(sys.argv[1])); d = sys.argv[2]
files = [f"{d}/{s}/{i:06d}.npy" for s in ("sotu", "moby_dick") for i in range(3)]
# NumpyDatasetBase.fingerprint as OLMo-core writes it (fingerprint_version v2.0).
h = hashlib.sha256()
h.update("class=NumpyFSLDataset".encode())
for k, v in (("vocab_size", 100278), ("pad_token_id", 100277), ("eos_token_id", 100257),
             ("dtype", np.uint32), ("max_target_sequence_length", 64), ("bos_token_id", None)):
    h.update(f"{k}={v},".encode())
for p in files:
    h.update(f"path={os.path.basename(p)},size={os.path.getsize(p)},".encode())
assert b["olmo_core_fingerprint"] == h.hexdigest(), (b["olmo_core_fingerprint"], h.hexdigest())
# The decoded text of instances without an EOS is in the corpus it came from.
texts = {}
for name in ("sotu", "moby_dick"):
    src = {"sotu": "sotu", "moby_dick": "moby_dick"}[name]
    raw = subprocess.run(["zstd", "-dc", sys.argv[3].replace("moby_dick", src)], capture_output=True).stdout
    texts[name] = "\n".join(json.loads(l)["text"] for l in raw.decode().splitlines())
checked = 0
for x in b["instances"]:
    if 100257 in x["tokens"] or "\ufffd" in x["text"]: continue
    name = "sotu" if "/sotu/" in x["path"] else "moby_dick"
    assert x["text"] in texts[name], (x["path"], x["text"])
    checked += 1
assert checked >= 1
PY

# A late batch (second epoch) reads only the files holding its instances.
LATE=$(( $(jq .batches_per_epoch "$tmp/b1.json") + 17 ))
"$BIN" data batch $LATE --config "$TINY" "${MAP[@]}" --tokens 8 --json > "$tmp/late1.json"
check "late batch is in epoch 2" '[ "$(jq .epoch "$tmp/late1.json")" = 2 ]'
needed=$(jq -r '[.instances[].path] | unique | .[]' "$tmp/late1.json")
check "the late batch needs fewer files than the mix has" '[ "$(echo "$needed" | wc -l)" -lt 6 ]'
if command -v strace > /dev/null; then
  strace -f -e trace=openat -o "$tmp/strace.txt" "$BIN" data batch $LATE --config "$TINY" \
    "${MAP[@]}" --tokens 8 --json > /dev/null 2>&1
  opened=$(grep -o "$D/[a-z_]*/[0-9]*\.npy" "$tmp/strace.txt" | sort -u)
  check "strace: only the needed token files are opened ($(echo $opened))" \
    '[ "$opened" = "$(echo "$needed" | sort -u)" ]'
fi
for f in $(find "$D" -name '*.npy'); do  # same sizes, other contents: nothing may change
  if ! echo "$needed" | grep -qx "$f"; then
    size=$(stat -c %s "$f"); rm "$f"; head -c "$size" /dev/zero > "$f"
  fi
done
"$BIN" data batch $LATE --config "$TINY" "${MAP[@]}" --tokens 8 --json > "$tmp/late2.json"
check "the late batch is unchanged when the other files' contents change" \
  'cmp -s "$tmp/late1.json" "$tmp/late2.json"'
"$BIN" data batch 0 --config "$TINY" > /dev/null 2> "$tmp/nomap.err"; rc=$?
check "data batch without the mix mapped exits 2 naming dataset.mix (rc $rc)" \
  '[ $rc -eq 2 ] && grep -q "dataset.mix" "$tmp/nomap.err"'

cli_finish

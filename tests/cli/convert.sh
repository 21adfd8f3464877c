#!/usr/bin/env bash
# `replica convert`: HF dir -> checkpoint -> HF dir is byte-identical in f32; bf16 export halves
# the size and is sharded on request; a run directory exports its newest valid checkpoint; bad
# input exits 2 naming the problem (NaN/Inf weights naming the tensor; --to inside a run's
# checkpoints/ folder).   usage: convert.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
FIX="$ROOT/tests/data/olmo3/tiny-gqa"

"$BIN" convert --from "$FIX" --to "$tmp/ckpt" --json > "$tmp/imp.json"; rc=$?
check "import exits 0 (got $rc)" '[ $rc -eq 0 ]'
check "import summary" 'jq -e ".direction == \"hf-to-checkpoint\" and .tensors == 91 and .parameters == 862816" "$tmp/imp.json" > /dev/null'
check "checkpoint has manifest and DONE, no optimizer" \
  '[ -f "$tmp/ckpt/MANIFEST.json" ] && [ -f "$tmp/ckpt/DONE" ] && [ ! -e "$tmp/ckpt/optim.safetensors" ]'
"$BIN" convert --from "$tmp/ckpt" --to "$tmp/hf" > /dev/null; rc=$?
check "export f32 exits 0 (got $rc)" '[ $rc -eq 0 ]'
"$BIN" convert --from "$tmp/hf" --to "$tmp/ckpt2" > /dev/null
check "f32 round trip: checkpoint model.safetensors byte-identical" \
  'cmp -s "$tmp/ckpt/model.safetensors" "$tmp/ckpt2/model.safetensors"'
check "f32 round trip: HF model.safetensors equals the checkpoint's" \
  'cmp -s "$tmp/ckpt/model.safetensors" "$tmp/hf/model.safetensors"'

check "export writes generation_config.json with the config's ids" \
  'jq -e ".eos_token_id == 382 and .pad_token_id == 383" "$tmp/hf/generation_config.json" > /dev/null'
check "no tokenizer files for a vocabulary that is not dolma2's" '[ ! -e "$tmp/hf/tokenizer.json" ]'
"$BIN" convert --from "$tmp/ckpt" --to "$tmp/hftok" --tokenizer dolma2 2> "$tmp/err"; rc=$?
check "dolma2 tokenizer files for a 384-id model are refused (exit $rc)" \
  '[ $rc -eq 2 ] && grep -q -- "--tokenizer dolma2" "$tmp/err" && [ ! -e "$tmp/hftok" ]'

"$BIN" convert --from "$tmp/ckpt" --to "$tmp/hfbf" --dtype bf16 --max-shard-size 1000000 > /dev/null; rc=$?
check "bf16 sharded export exits 0 (got $rc)" '[ $rc -eq 0 ]'
check "bf16 export is sharded with an index" \
  '[ -f "$tmp/hfbf/model.safetensors.index.json" ] && [ -f "$tmp/hfbf/model-00001-of-00002.safetensors" ]'
check "bf16 config says bfloat16" 'jq -e ".torch_dtype == \"bfloat16\"" "$tmp/hfbf/config.json" > /dev/null'
bf=$(cat "$tmp"/hfbf/model-*.safetensors | wc -c); f32=$(wc -c < "$tmp/hf/model.safetensors")
check "bf16 weights are about half of f32 ($bf vs $f32)" '[ $((bf * 2)) -lt $((f32 + 20000)) ] && [ $((bf * 2)) -gt $((f32 - 20000)) ]'
"$BIN" convert --from "$tmp/hfbf" --to "$tmp/ckpt3" > /dev/null; rc=$?
check "bf16 sharded HF dir imports (got $rc)" '[ $rc -eq 0 ]'

# A run directory: its newest VALID checkpoint is exported.
mkdir -p "$tmp/run/checkpoints"
cp -r "$tmp/ckpt" "$tmp/run/checkpoints/step-00000010"
sed -i 's/"step": 0/"step": 10/' "$tmp/run/checkpoints/step-00000010/MANIFEST.json"
"$BIN" convert --from "$tmp/run/checkpoints/step-00000010" --to "$tmp/x" 2> "$tmp/err"; rc=$?
check "edited manifest is detected (exit $rc)" '[ $rc -eq 2 ] && grep -q "DONE: does not match" "$tmp/err"'
rm -rf "$tmp/run/checkpoints/step-00000010" "$tmp/x"
cp -r "$tmp/ckpt" "$tmp/run/checkpoints/step-00000000"
cp -r "$tmp/ckpt" "$tmp/run/checkpoints/step-00000020"
printf 'x' | dd of="$tmp/run/checkpoints/step-00000020/model.safetensors" bs=1 seek=5000 conv=notrunc 2>/dev/null
"$BIN" convert --from "$tmp/run" --to "$tmp/hfrun" --json > "$tmp/run.json" 2> "$tmp/err"; rc=$?
check "corrupt newest is skipped with a message, previous exported (exit $rc)" \
  '[ $rc -eq 0 ] && jq -e ".step == 0" "$tmp/run.json" > /dev/null && grep -q "skipping checkpoint .*step-00000020.*checksum mismatch" "$tmp/err"'

"$BIN" convert --from "$tmp/nope" --to "$tmp/y" 2> "$tmp/err"; rc=$?
check "missing source exits 2 (got $rc)" '[ $rc -eq 2 ] && grep -q "no such directory" "$tmp/err"'
mkdir -p "$tmp/notes" && echo hi > "$tmp/notes/a.txt"
"$BIN" convert --from "$FIX" --to "$tmp/notes" 2> "$tmp/err"; rc=$?
check "refuses to replace a non-checkpoint directory (exit $rc)" '[ $rc -eq 2 ] && [ -f "$tmp/notes/a.txt" ]'
"$BIN" convert --from "$tmp/ckpt" --to "$tmp/z" --dtype f16 2> /dev/null; rc=$?
check "unknown dtype exits 2 (got $rc)" '[ $rc -eq 2 ]'

# YaRN: the scaling travels through the checkpoint and comes back in the spelling it was read in,
# and the exported directory is still the same model (parity against the fixture dump).
YARN="$ROOT/tests/data/olmo3/tiny-yarn"
"$BIN" convert --from "$YARN" --to "$tmp/yck" > /dev/null && "$BIN" convert --from "$tmp/yck" --to "$tmp/yhf" > /dev/null
check "yarn checkpoint carries the scaling" 'jq -e ".rope_scaling.rope_type == \"yarn\"" "$tmp/yck/config.json" > /dev/null'
check "yarn legacy spelling written back, the per-layer-type form beside it" \
  'jq -e --slurpfile a "$YARN/config.json" ".rope_scaling == \$a[0].rope_scaling and .rope_theta == \$a[0].rope_theta and .rope_parameters.full_attention.rope_type == \"yarn\" and .rope_parameters.sliding_attention.rope_theta == \$a[0].rope_theta" "$tmp/yhf/config.json" > /dev/null'
mkdir -p "$tmp/ynest"
cp "$YARN/model.safetensors" "$tmp/ynest/"
jq '.rope_parameters = {full_attention: (.rope_scaling + {rope_theta: .rope_theta}), sliding_attention: {rope_type: "default", rope_theta: .rope_theta}} | del(.rope_scaling) | del(.rope_theta)' \
  "$YARN/config.json" > "$tmp/ynest/config.json"
"$BIN" convert --from "$tmp/ynest" --to "$tmp/ynck" > /dev/null && "$BIN" convert --from "$tmp/ynck" --to "$tmp/ynhf" > /dev/null
check "yarn per-layer-type spelling written back" \
  'jq -e --slurpfile a "$tmp/ynest/config.json" ".rope_parameters == \$a[0].rope_parameters and (has(\"rope_scaling\") | not) and (has(\"rope_theta\") | not)" "$tmp/ynhf/config.json" > /dev/null'
for d in yhf ynhf; do
  "$BIN" parity --model "$tmp/$d" --reference "$YARN/io.safetensors" --max-kl 1e-8 --min-top1 1.0 > /dev/null; rc=$?
  check "exported $d passes parity against the tiny-yarn dump (exit $rc)" '[ $rc -eq 0 ]'
done

# An HF directory holding NaN or Inf is refused naming the tensor, and no checkpoint is written.
for bad in nan inf; do
  cp -r "$FIX" "$tmp/hf-$bad"
  python3 - "$tmp/hf-$bad/model.safetensors" "$bad" <<'PY'
import json, struct, sys
path, bad = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
h = json.loads(data[8:8 + n])
t = h["model.layers.1.mlp.down_proj.weight"]
assert t["dtype"] == "F32", t["dtype"]
at = 8 + n + t["data_offsets"][0] + 4 * 5
data[at:at + 4] = struct.pack("<f", float(bad))
open(path, "wb").write(data)
PY
  "$BIN" convert --from "$tmp/hf-$bad" --to "$tmp/ckpt-$bad" > /dev/null 2> "$tmp/err"; rc=$?
  check "import of $bad weights exits 2 (got $rc)" '[ $rc -eq 2 ]'
  check "import of $bad weights names the tensor: $(cat "$tmp/err")" \
    'grep -q "model.layers.1.mlp.down_proj.weight.* holds $bad at element 5" "$tmp/err"'
  check "import of $bad weights writes no checkpoint" '[ ! -e "$tmp/ckpt-$bad/DONE" ]'
done

# bf16 weights holding NaN or Inf (a sharded bf16 export with one element overwritten) are refused
# by import the same way, and no checkpoint is written.
for bad in nan inf; do
  cp -r "$tmp/hfbf" "$tmp/hfbf-$bad"
  file=$(jq -r '.weight_map["model.layers.1.mlp.down_proj.weight"]' "$tmp/hfbf-$bad/model.safetensors.index.json")
  python3 - "$tmp/hfbf-$bad/$file" "$bad" <<'PY'
import json, struct, sys
path, bad = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
t = json.loads(data[8:8 + n])["model.layers.1.mlp.down_proj.weight"]
assert t["dtype"] == "BF16", t["dtype"]
at = 8 + n + t["data_offsets"][0] + 2 * 5
data[at:at + 2] = struct.pack("<H", 0x7fc0 if bad == "nan" else 0x7f80)
open(path, "wb").write(data)
PY
  "$BIN" convert --from "$tmp/hfbf-$bad" --to "$tmp/ckbf-$bad" > /dev/null 2> "$tmp/err"; rc=$?
  check "import of bf16 $bad weights exits 2 naming the tensor (got $rc): $(cat "$tmp/err")" \
    '[ $rc -eq 2 ] && grep -q "model.layers.1.mlp.down_proj.weight.* holds $bad at element 5" "$tmp/err"'
  check "import of bf16 $bad weights writes no checkpoint" '[ ! -e "$tmp/ckbf-$bad" ]'
done

# A finite fp32 weight beyond bf16's range (3.4e38 > 3.3895e38) would be exported to bf16 as Inf,
# which every reader refuses: the bf16 export is refused naming it, nothing written; f32 is exact.
cp -r "$FIX" "$tmp/hf-big"
python3 - "$tmp/hf-big/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
t = json.loads(data[8:8 + n])["model.layers.1.mlp.down_proj.weight"]
at = 8 + n + t["data_offsets"][0] + 4 * 5
data[at:at + 4] = struct.pack("<f", -3.4e38)
open(path, "wb").write(data)
PY
"$BIN" convert --from "$tmp/hf-big" --to "$tmp/ck-big" > /dev/null 2> "$tmp/err"
check "import of a finite -3.4e38 weight succeeds: $(cat "$tmp/err")" '[ -f "$tmp/ck-big/DONE" ]'
"$BIN" convert --from "$tmp/ck-big" --to "$tmp/hf-big-bf16" --dtype bf16 > /dev/null 2> "$tmp/err"; rc=$?
check "bf16 export of -3.4e38 exits 2 naming tensor, element and range (got $rc): $(cat "$tmp/err")" \
  '[ $rc -eq 2 ] && grep -q "tensor .model.layers.1.mlp.down_proj.weight. holds -3.4e+38 at element 5 .*beyond bf16.s range.*-inf" "$tmp/err"'
check "bf16 export of -3.4e38 writes nothing" '[ ! -e "$tmp/hf-big-bf16" ]'
"$BIN" convert --from "$tmp/ck-big" --to "$tmp/hf-big-f32" > /dev/null 2> "$tmp/err"; rc=$?
check "f32 export of -3.4e38 exits 0 and is exact (got $rc)" \
  '[ $rc -eq 0 ] && cmp -s "$tmp/hf-big/model.safetensors" "$tmp/hf-big-f32/model.safetensors"'

# --to inside a run's checkpoints/ folder is refused (the run would resume from it or prune it).
mkdir -p "$tmp/run/checkpoints"
"$BIN" convert --from "$FIX" --to "$tmp/run/checkpoints/step-00000005" > /dev/null 2> "$tmp/err"; rc=$?
check "convert --to RUN/checkpoints/step-N exits 2 (got $rc)" '[ $rc -eq 2 ]'
check "convert --to RUN/checkpoints/step-N says why: $(cat "$tmp/err")" \
  'grep -q "inside a run.s checkpoint folder" "$tmp/err"'
check "convert --to RUN/checkpoints/step-N writes nothing" '[ ! -e "$tmp/run/checkpoints/step-00000005" ]'

# ... also when the path reaches the folder through a symbolic link: a link to the folder, a link
# to a step directory that does not exist yet, a link to the run directory; either direction.
mkdir -p "$tmp/run2/checkpoints"
ln -s "$tmp/run2/checkpoints" "$tmp/cklink"
ln -s "$tmp/run2/checkpoints/step-00000007" "$tmp/steplink"
ln -s "$tmp/run2" "$tmp/runlink"
for to in "$tmp/cklink/step-00000006" "$tmp/steplink" "$tmp/runlink/checkpoints/step-00000008" \
          "$tmp/cklink/step-00000009/"; do
  for from in "$FIX" "$tmp/ckpt"; do
    "$BIN" convert --from "$from" --to "$to" > /dev/null 2> "$tmp/err"; rc=$?
    check "convert --from $from --to $to (a link into RUN/checkpoints) exits 2 (got $rc)" \
      '[ $rc -eq 2 ] && grep -q "inside a run.s checkpoint folder $tmp/run2/checkpoints" "$tmp/err"'
  done
done
check "no convert through a link wrote into RUN/checkpoints: $(ls "$tmp/run2/checkpoints")" \
  '[ -z "$(ls -A "$tmp/run2/checkpoints")" ]'

# Progress on stderr (as eval's): megabytes read, then written, ending at 100% with the output
# named; --no-progress prints nothing. Import, and a sharded bf16 export.
"$BIN" convert --from "$FIX" --to "$tmp/prog-ck" > /dev/null 2> "$tmp/err"
check "import prints progress: $(cat "$tmp/err")" \
  'grep -q "^convert: 0% (.* MB), .*; reading $FIX$" "$tmp/err" &&
   grep -q "^convert: 100% (\([0-9]*\) of \1 MB), .*; wrote $tmp/prog-ck$" "$tmp/err"'
"$BIN" convert --from "$tmp/prog-ck" --to "$tmp/prog-hf" --dtype bf16 --max-shard-size 600000 \
  > /dev/null 2> "$tmp/err"
check "export prints progress: $(cat "$tmp/err")" \
  'grep -q "; reading $tmp/prog-ck$" "$tmp/err" &&
   grep -q "^convert: 100% (\([0-9]*\) of \1 MB), .*; wrote $tmp/prog-hf$" "$tmp/err"'
rm -rf "$tmp/prog-hf"
"$BIN" convert --from "$tmp/prog-ck" --to "$tmp/prog-hf" --no-progress > /dev/null 2> "$tmp/err"
check "--no-progress prints nothing: $(cat "$tmp/err")" '[ ! -s "$tmp/err" ]'

[ $fail -eq 0 ] && echo "convert.sh: all checks passed"
exit $fail

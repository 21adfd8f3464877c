#!/usr/bin/env bash
# Hostile and malformed OLMo-core config.json files (docs/olmo-core.md "Bad input"): each is refused
# by plan, import-config and train with exit 2, a message naming the file and the JSON path, and
# nothing written; none crashes (no signal exit), none runs long. Also: the precision the recipe
# trains with is mapped, float8's refusal gives today's reason, a BOM does not make config.json
# YAML, and import-config --out neither overwrites its input nor an existing file without --force.
#   usage: olmo_core_hostile.sh <replica-binary> <repo-root>
set -u
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$(realpath "$1")
ROOT=$(realpath "$2")
P1="$ROOT/tests/data/olmo-core/OLMo-3-1025-7B-pretrain-1.sequence_mixer.json"
export OMP_NUM_THREADS=1

# refused <name> <config file> <text the message must contain>...: for plan, import-config and
# train: exit 2 within 20 s, every text in stderr, nothing on stdout, no run directory.
refused() {
  local name=$1 file=$2; shift 2
  for cmd in plan import-config train; do
    local args=()
    [ $cmd = train ] && args=(--run-dir "$tmp/run")
    timeout 20 "$BIN" $cmd "$file" "${args[@]}" > "$tmp/out" 2> "$tmp/err"; local rc=$?
    local ok=1
    [ $rc -eq 2 ] || ok=0
    for want in "$file" "$@"; do grep -qF -- "$want" "$tmp/err" || ok=0; done
    [ -s "$tmp/out" ] && ok=0
    [ -e "$tmp/run" ] && ok=0
    check "$cmd $name: exit 2 naming $* (rc $rc: $(head -c 300 "$tmp/err"))" '[ $ok -eq 1 ]'
    rm -rf "$tmp/run"
  done
}
edit() {  # edit <jq program> <out>: P1 edited
  jq "$1" "$P1" > "$2"
}
literal() {  # literal <jq path> <JSON number text> <out>: P1 with that number written verbatim (jq
             # itself would round integers above 2^53 and rewrite 1.5e3 as 1500)
  jq "$1 = 424242424242" "$P1" | sed "s/424242424242/$2/" > "$3"
}

# train_module.optim.betas that are not two numbers in [0, 1)
i=0
for b in '[0.9]' '[]' '0.9' '[0.9, 0.95, 0.99]' '["a", 0.9]' '[0.9, 1.5]'; do
  edit ".train_module.optim.betas = $b" "$tmp/betas$i.json"
  refused "betas $b" "$tmp/betas$i.json" "train_module.optim.betas"
  i=$((i + 1))
done

# nesting 100,000 and 30,000 levels deep (under a callback, where nothing reads it)
for depth in 100000 30000; do
  python3 - "$P1" "$depth" "$tmp/deep$depth.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
text = json.dumps(j)
deep = '{"a": ' * n + '1' + '}' * n
text = text[:-1] + ', "nested": ' + deep + '}'
open(sys.argv[3], "w").write(text)
PY
  refused "nested $depth deep" "$tmp/deep$depth.json" "nested.a.a.a.a.a..." "deeper than 64 levels"
done

# sizes checked before anything is built from them
for n in 100000000 9223372036854775807 0 -3; do
  literal .model.n_layers "$n" "$tmp/layers.json"
  refused "n_layers $n" "$tmp/layers.json" "model.n_layers" "expected 1 to 65536"
done
edit '.model.d_model = 100000000' "$tmp/d.json"
refused "d_model 1e8" "$tmp/d.json" "model.d_model"
edit '.model.block.sequence_mixer.n_heads = 99999999999' "$tmp/h.json"
refused "n_heads 1e11" "$tmp/h.json" "model.block.sequence_mixer.n_heads"
edit '.model.n_layers = 65536 | .model.d_model = 128 | .model.block.feed_forward.hidden_size = 256 |
      .model.block.sequence_mixer.n_heads = 2 | .model.block.sequence_mixer.n_kv_heads = 2 |
      .model.block.sequence_mixer.head_dim = 64' "$tmp/layers65536.json"
start=$(date +%s%N)  # the import alone (plan of this config: tests/cli/plan_layers.sh)
"$BIN" import-config "$tmp/layers65536.json" > "$tmp/l.yaml" 2>&1; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "import-config of 65,536 layers exits 0 within 10 s (rc $rc, $ms ms)" \
  '[ $rc -eq 0 ] && [ $ms -lt 10000 ] && grep -q "num_hidden_layers: 65536" "$tmp/l.yaml"'

# integers above 2^63 - 1, negative seeds, floats where OLMo-core has an int
literal .data_loader.seed 18446744073709551615 "$tmp/seed.json"
refused "data_loader.seed 2^64-1" "$tmp/seed.json" "data_loader.seed" "2^63 - 1"
edit '.data_loader.seed = -1' "$tmp/seedneg.json"
refused "data_loader.seed -1" "$tmp/seedneg.json" "data_loader.seed" "negative"
literal .data_loader.seed 1.5e3 "$tmp/seedf.json"
refused "data_loader.seed 1.5e3" "$tmp/seedf.json" "data_loader.seed" "expected an integer"
literal .trainer.hard_stop.value 9300000000000000000 "$tmp/hs.json"
refused "hard_stop 9.3e18" "$tmp/hs.json" "trainer.hard_stop.value"

# "type": the registered name of the class, and only on registrable classes
edit '.model.block.sequence_mixer.type = "normalized"' "$tmp/t1.json"
refused "sequence_mixer.type normalized" "$tmp/t1.json" "model.block.sequence_mixer.type" '"attention"'
edit '.train_module.optim.type = "lion"' "$tmp/t2.json"
refused "optim.type lion" "$tmp/t2.json" "train_module.optim.type" '"skip_step_adamw"'
edit '.model.type = "default"' "$tmp/t3.json"
refused "model.type" "$tmp/t3.json" "model.type" "no registered name"

# refusals that name the JSON path
edit '.train_module.float8_config.enabled = "yes"' "$tmp/f8.json"
refused "float8 enabled \"yes\"" "$tmp/f8.json" "train_module.float8_config.enabled" "true or false"
edit '.dataset.tokenizer.vocab_size = 100' "$tmp/tv.json"
refused "tokenizer.vocab_size 100" "$tmp/tv.json" "dataset.tokenizer.vocab_size"
edit '.dataset.tokenizer.vocab_size = 200000' "$tmp/tv2.json"
refused "tokenizer.vocab_size above the model's" "$tmp/tv2.json" "dataset.tokenizer.vocab_size" "model.vocab_size"
edit '.model.init_std = 1e308' "$tmp/std.json"
refused "init_std 1e308" "$tmp/std.json" "model.init_std" "(0, 1]"
edit '.model.block.sequence_mixer.n_kv_heads = 7' "$tmp/kv.json"
refused "n_kv_heads 7 (does not divide 32)" "$tmp/kv.json" "model.block.sequence_mixer.n_kv_heads"
edit '.data_loader.global_batch_size = 4194305' "$tmp/gb.json"
refused "global batch not whole instances" "$tmp/gb.json" "data_loader.global_batch_size"
edit '.train_module.optim.eps = 0' "$tmp/eps.json"
refused "optim.eps 0" "$tmp/eps.json" "train_module.optim.eps"
edit '.train_module.scheduler.warmup_steps = -5' "$tmp/wu.json"
refused "warmup -5" "$tmp/wu.json" "train_module.scheduler.warmup_steps"
edit 'del(.model.block.feed_forward.hidden_size)' "$tmp/ffn.json"
refused "feed_forward.hidden_size missing" "$tmp/ffn.json" "model.block.feed_forward.hidden_size" "missing"
edit 'del(.model.d_model)' "$tmp/dm.json"
refused "d_model missing" "$tmp/dm.json" "model.d_model" "missing"
# n_heads absent: AttentionConfig's default 16, said where it came from
edit 'del(.model.block.sequence_mixer.n_heads)' "$tmp/nh.json"
"$BIN" import-config "$tmp/nh.json" > "$tmp/nh.yaml" 2> "$tmp/err"; rc=$?
check "n_heads absent: AttentionConfig's default 16, named (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && grep -q "num_attention_heads: 16 .*# model.block.sequence_mixer.n_heads (absent: AttentionConfig default 16)" "$tmp/nh.yaml"'

# a norm or block whose absent name means OLMo-core's default (a LayerNorm, a pre-norm block)
edit 'del(.model.block.name)' "$tmp/bn.json"
refused "block.name absent" "$tmp/bn.json" "model.block.name" "absent"
edit 'del(.model.block.sequence_mixer.bias)' "$tmp/bias.json"
refused "attention bias absent (true)" "$tmp/bias.json" "model.block.sequence_mixer.bias" "absent"
edit 'del(.train_module.float8_config.enabled)' "$tmp/f8d.json"
refused "float8 enabled absent (true)" "$tmp/f8d.json" "train_module.float8_config.enabled" "absent"

# float8 is refused for what it is, not because replica "computes in fp32"
edit '.train_module.float8_config.enabled = true' "$tmp/f8t.json"
"$BIN" plan "$tmp/f8t.json" > /dev/null 2> "$tmp/err"
check "float8's reason names compute.precision, not 'computes in fp32'" \
  'grep -q "float8 matmuls are not implemented" "$tmp/err" && ! grep -q "computes in fp32;" "$tmp/err"'

# dp_config.param_dtype bfloat16 is compute.precision bf16
"$BIN" import-config "$P1" --out "$tmp/p1.yaml" 2> "$tmp/err"; rc=$?
check "import-config maps dp_config.param_dtype bfloat16 to compute.precision: bf16 (rc $rc)" \
  '[ $rc -eq 0 ] && grep -q "^  precision: bf16 .*# train_module.dp_config.param_dtype" "$tmp/p1.yaml"'
edit '.train_module.dp_config.param_dtype = "float16"' "$tmp/fp16.json"
refused "param_dtype float16" "$tmp/fp16.json" "train_module.dp_config.param_dtype"

# a UTF-8 byte order mark: still config.json
printf '\xef\xbb\xbf' > "$tmp/bom.json"; cat "$P1" >> "$tmp/bom.json"
"$BIN" plan "$tmp/bom.json" --json > "$tmp/bom.out" 2> "$tmp/err"; rc=$?
check "config.json with a BOM plans as config.json (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ "$(jq .params "$tmp/bom.out")" = 7298617344 ]'

# import-config --out: never the input, an existing file only with --force
cp "$P1" "$tmp/in.json"; sum=$(md5sum < "$tmp/in.json")
"$BIN" import-config "$tmp/in.json" --out "$tmp/in.json" > /dev/null 2> "$tmp/err"; rc=$?
check "import-config --out INPUT exits 2 and leaves the input (rc $rc)" \
  '[ $rc -eq 2 ] && grep -q "the input config" "$tmp/err" && [ "$(md5sum < "$tmp/in.json")" = "$sum" ]'
"$BIN" import-config "$tmp/in.json" --out "$tmp/../$(basename "$tmp")/in.json" --force > /dev/null 2>&1; rc=$?
check "import-config --out INPUT --force (another spelling) still exits 2 (rc $rc)" \
  '[ $rc -eq 2 ] && [ "$(md5sum < "$tmp/in.json")" = "$sum" ]'
echo keep > "$tmp/exists.yaml"
"$BIN" import-config "$tmp/in.json" --out "$tmp/exists.yaml" > /dev/null 2> "$tmp/err"; rc=$?
check "import-config --out EXISTING exits 2 without --force (rc $rc)" \
  '[ $rc -eq 2 ] && grep -q -- "--force" "$tmp/err" && [ "$(cat "$tmp/exists.yaml")" = keep ]'
"$BIN" import-config "$tmp/in.json" --out "$tmp/exists.yaml" --force > /dev/null 2>&1; rc=$?
check "import-config --out EXISTING --force replaces it (rc $rc)" \
  '[ $rc -eq 0 ] && grep -q "^model:" "$tmp/exists.yaml"'

# the YAML side: data.seed must be a non-negative integer written as one
for v in -1 1.5e3; do
  "$BIN" plan "$ROOT/configs/demo.yaml" --set "data.seed=$v" > /dev/null 2> "$tmp/err"; rc=$?
  check "YAML data.seed=$v exits 2 naming data.seed (rc $rc: $(head -c 200 "$tmp/err"))" \
    '[ $rc -eq 2 ] && grep -q "data.seed" "$tmp/err"'
done

cli_finish

#!/usr/bin/env bash
# Hostile and malformed OLMo-core config.json files (docs/olmo-core.md "Bad input"): each is refused
# by plan, import-config and train with exit 2, a message naming the file and the JSON path, and
# nothing written; none crashes (no signal exit), none runs long. Also: the precision the recipe
# trains with is mapped, float8's refusal gives today's reason, a BOM does not make config.json
# YAML, a UTF-16 file or malformed JSON is said as such (file:line:column), AdamW numbers given as
# null are refused, seeds must be integers, and import-config --out neither overwrites its input nor an existing file without --force.
#   usage: olmo_core_hostile.sh <replica-binary> <repo-root>
set -u
. "$(dirname "$0")/lib.sh"
cli_init
BIN=$(realpath "$1")
ROOT=$(realpath "$2")
P1="$ROOT/tests/data/olmo-core/OLMo-3-1025-7B-pretrain-1.sequence_mixer.json"
export OMP_NUM_THREADS=1

# refused <name> <config file> <text the message must contain>...: for plan, import-config and
# train: exit 2 (a 120 s timeout catches a hang), every text in stderr, nothing on stdout, no run directory.
refused() {
  local name=$1 file=$2; shift 2
  for cmd in plan import-config train; do
    local args=()
    [ $cmd = train ] && args=(--run-dir "$tmp/run")
    timeout 120 "$BIN" $cmd "$file" "${args[@]}" > "$tmp/out" 2> "$tmp/err"; local rc=$?
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
# the import alone (plan of this config: tests/cli/plan_layers.sh)
# the import takes 0.4 s in Release and 1 s under ASan on an idle 2-core VM;
# the timeout only turns a hang into a failure, never a slow machine
timeout 300 "$BIN" import-config "$tmp/layers65536.json" > "$tmp/l.yaml" 2>&1; rc=$?
check "import-config of 65,536 layers exits 0 (rc $rc; 124 is the 300 s timeout)" \
  '[ $rc -eq 0 ] && grep -q "num_hidden_layers: 65536" "$tmp/l.yaml"'

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

# dp_config.param_dtype bfloat16 is compute.precision bf16-fsdp
"$BIN" import-config "$P1" --out "$tmp/p1.yaml" 2> "$tmp/err"; rc=$?
check "import-config maps dp_config.param_dtype bfloat16 to compute.precision: bf16-fsdp (rc $rc)" \
  '[ $rc -eq 0 ] && grep -q "^  precision: bf16-fsdp .*# train_module.dp_config.param_dtype" "$tmp/p1.yaml"'
edit '.train_module.dp_config.param_dtype = "float16"' "$tmp/fp16.json"
refused "param_dtype float16" "$tmp/fp16.json" "train_module.dp_config.param_dtype"

# a UTF-8 byte order mark: still config.json
printf '\xef\xbb\xbf' > "$tmp/bom.json"; cat "$P1" >> "$tmp/bom.json"
"$BIN" plan "$tmp/bom.json" --json > "$tmp/bom.out" 2> "$tmp/err"; rc=$?
check "config.json with a BOM plans as config.json (rc $rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ "$(jq .params "$tmp/bom.out")" = 7298617344 ]'

# the file in another encoding, or not valid JSON: file, line and column, in replica's words
iconv -f UTF-8 -t UTF-16 "$P1" > "$tmp/utf16.json"
refused "UTF-16 config.json" "$tmp/utf16.json" "the file is UTF-16 (little-endian" "as UTF-8"
literal .train_module.optim.lr 1e400 "$tmp/e400.json"
line=$(grep -n '1e400' "$tmp/e400.json" | cut -d: -f1)
col=$(grep '1e400' "$tmp/e400.json" | sed 's/1e400.*//' | wc -c)  # characters before it, plus 1
refused "lr 1e400" "$tmp/e400.json" \
  "$tmp/e400.json:$line:$col: not valid JSON: the number 1e400 is beyond the range of a double"
head -c 300 "$P1" > "$tmp/cut.json"
refused "a config.json cut short" "$tmp/cut.json" ": not valid JSON: syntax error" \
  "unexpected end of input"
for f in "$tmp/e400.json" "$tmp/cut.json"; do
  "$BIN" plan "$f" > /dev/null 2> "$tmp/err"
  check "no JSON library wording for $(basename "$f"): $(cat "$tmp/err")" \
    '! grep -q "json.exception" "$tmp/err"'
done

# AdamW's numbers given as null: OLMo-core hands None to torch, which fails; refused, not defaulted
for k in betas lr eps weight_decay; do
  edit ".train_module.optim.$k = null" "$tmp/null-$k.json"
  refused "optim.$k null" "$tmp/null-$k.json" "train_module.optim.$k" "null: OLMo-core passes None"
done

# rank_microbatch_size: negative refused; under one instance (0 included) said as such
literal .train_module.rank_microbatch_size -5 "$tmp/rmb-neg.json"
refused "rank_microbatch_size -5" "$tmp/rmb-neg.json" "train_module.rank_microbatch_size" \
  "expected a number of tokens >= 0"
for v in 0 4096; do
  literal .train_module.rank_microbatch_size $v "$tmp/rmb.json"
  "$BIN" import-config "$tmp/rmb.json" > "$tmp/rmb.yaml" 2> "$tmp/err"; rc=$?
  check "rank_microbatch_size $v: 1 instance, said why (rc $rc: $(grep micro_batch_instances "$tmp/rmb.yaml"))" \
    "[ $rc -eq 0 ] && grep -q 'micro_batch_instances: 1 .*rank_microbatch_size = $v tokens is less than one instance of dataset.sequence_length' '$tmp/rmb.yaml'"
done

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

# the YAML side: data.seed and init.seed must be non-negative integers written as such
for key in data.seed init.seed; do
  for v in -1 1.5e3; do
    "$BIN" plan "$ROOT/configs/demo.yaml" --set "$key=$v" > /dev/null 2> "$tmp/err"; rc=$?
    check "YAML $key=$v exits 2 naming $key (rc $rc: $(head -c 200 "$tmp/err"))" \
      '[ $rc -eq 2 ] && grep -q "config key .$key.: expected" "$tmp/err"'
  done
  "$BIN" plan "$ROOT/configs/demo.yaml" --set "$key=1.5e3" > /dev/null 2> "$tmp/err"
  check "YAML $key=1.5e3: an integer seed is expected ($(cat "$tmp/err"))" \
    'grep -q "config key .$key.: expected an integer seed (digits, below 2^6[34]), got .1.5e3." "$tmp/err"'
done
sed 's/^  seed: 0$/  seed: 1.5e3/' "$ROOT/configs/demo.yaml" > "$tmp/seedf.yaml"
check "the YAML has init.seed 1.5e3" 'grep -q "^  seed: 1.5e3$" "$tmp/seedf.yaml"'
"$BIN" plan "$tmp/seedf.yaml" > /dev/null 2> "$tmp/err"; rc=$?
check "a YAML file with init.seed: 1.5e3 exits 2 (rc $rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "seedf.yaml: config key .init.seed.: expected an integer seed (digits, below 2^64), got .1.5e3." "$tmp/err"'
"$BIN" plan "$ROOT/configs/demo.yaml" --set init.seed=18446744073709551615 > /dev/null 2> "$tmp/err"
check "init.seed 2^64 - 1 is a seed ($(cat "$tmp/err"))" '[ $? -eq 0 ]'
iconv -f UTF-8 -t UTF-16 "$ROOT/configs/demo.yaml" > "$tmp/utf16.yaml"
"$BIN" train "$tmp/utf16.yaml" --run-dir "$tmp/run16" > /dev/null 2> "$tmp/err"; rc=$?
check "a UTF-16 YAML exits 2 saying so, no run directory (rc $rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "utf16.yaml: the file is UTF-16 (little-endian" "$tmp/err" && [ ! -e "$tmp/run16" ]'
iconv -f UTF-8 -t UTF-16BE "$ROOT/configs/demo.yaml" > "$tmp/utf16be.yaml"
"$BIN" plan "$tmp/utf16be.yaml" > /dev/null 2> "$tmp/err"; rc=$?
check "a UTF-16 YAML without a byte-order mark exits 2 saying so (rc $rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "utf16be.yaml: the file holds NUL bytes .*UTF-16 or UTF-32" "$tmp/err"'

cli_finish

#!/usr/bin/env bash
# Inputs that used to be taken silently, truncated, or hang: each is refused with exit 2, a message
# naming the flag, field, file or tensor, and nothing written.
#   usage: refusals.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive
fail=0
model="$ROOT/tests/data/olmo3/tiny-mha"

# expect_refused NAME TEXT CMD...: exit 2 within 60 s, stderr mentions TEXT.
expect_refused() {
  local name=$1 want=$2
  shift 2
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -ne 2 ]; then
    echo "FAIL: $name: expected exit 2, got $rc ($(tail -c 400 "$tmp/err"))"; fail=1; return
  fi
  if ! grep -qF -- "$want" "$tmp/err"; then
    echo "FAIL: $name: stderr does not mention '$want': $(cat "$tmp/err")"; fail=1; return
  fi
  echo "ok: $name -> $(head -c 300 "$tmp/err")"
}

# --- 64-bit ids ---
printf '{"text": "hello"}\n' > "$tmp/doc.jsonl"
expect_refused "tokenize --eos-id 2^32+100" "--eos-id" \
  "$BIN" tokenize --tokenizer dolma2 "$tmp/doc.jsonl" --out "$tmp/tok1" --eos-id 4294967396 --no-progress
[ -e "$tmp/tok1" ] && { echo "FAIL: tokenize wrote $tmp/tok1 for a bad --eos-id"; fail=1; }
expect_refused "tokenize --eos-id -5" "--eos-id" \
  "$BIN" tokenize --tokenizer dolma2 "$tmp/doc.jsonl" --out "$tmp/tok2" --eos-id -5 --no-progress
mkdir -p "$tmp/bigid"
cp "$model/model.safetensors" "$tmp/bigid/"
sed 's/"eos_token_id": 510/"eos_token_id": 4294967596/' "$model/config.json" > "$tmp/bigid/config.json"
printf '{"id": "a", "text": "some held-out text"}\n' > "$tmp/held.jsonl"
expect_refused "config.json eos_token_id 2^32+300" "eos_token_id" \
  "$BIN" eval --model "$tmp/bigid" --tokenizer bytes --seq-len 64 --eval "$tmp/held.jsonl"

# --- non-finite weights ---
mkdir -p "$tmp/nan"
cp "$model/config.json" "$tmp/nan/"
python3 - "$model/model.safetensors" "$tmp/nan/model.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
off = 8 + n + header["model.layers.1.self_attn.o_proj.weight"]["data_offsets"][0] + 4 * 5
raw = raw[:off] + struct.pack("<f", float("nan")) + raw[off + 4:]
open(sys.argv[2], "wb").write(raw)
PY
expect_refused "NaN in the weights" "model.layers.1.self_attn.o_proj.weight" \
  "$BIN" eval --model "$tmp/nan" --tokenizer bytes --seq-len 64 --eval "$tmp/held.jsonl"

# generate reads the LM head and embedding rows as stored, every step: a NaN there is refused too.
mkdir -p "$tmp/nanhead"
cp "$model/config.json" "$tmp/nanhead/"
python3 - "$model/model.safetensors" "$tmp/nanhead/model.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
off = 8 + n + header["lm_head.weight"]["data_offsets"][0] + 4 * 7
raw = raw[:off] + struct.pack("<f", float("inf")) + raw[off + 4:]
open(sys.argv[2], "wb").write(raw)
PY
expect_refused "Inf in the LM head (generate)" "lm_head.weight" \
  "$BIN" generate --model "$tmp/nanhead" --tokenizer bytes --prompt "Hello" --max-new-tokens 4
expect_refused "NaN in a layer (generate)" "model.layers.1.self_attn.o_proj.weight" \
  "$BIN" generate --model "$tmp/nan" --tokenizer bytes --prompt "Hello" --max-new-tokens 4

# --- FIFOs are not waited on ---
mkfifo "$tmp/fifo.jsonl"
expect_refused "FIFO as an eval set" "FIFO" \
  "$BIN" eval --model "$model" --tokenizer bytes --seq-len 64 --eval "$tmp/fifo.jsonl"
mkdir -p "$tmp/fifomodel"
cp "$model/config.json" "$tmp/fifomodel/"
mkfifo "$tmp/fifomodel/model.safetensors"
expect_refused "FIFO as the weights" "FIFO" \
  "$BIN" eval --model "$tmp/fifomodel" --tokenizer bytes --seq-len 64 --eval "$tmp/held.jsonl"

# --- sizes ---
expect_refused "plan --set model.num_hidden_layers=1e9" "num_hidden_layers" \
  "$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --set model.num_hidden_layers=1e9
expect_refused "plan --set model.vocab_size=1e12" "vocab_size" \
  "$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --set model.vocab_size=1e12
mkdir -p "$tmp/hd"
cp "$model/model.safetensors" "$tmp/hd/"
sed 's/"num_key_value_heads": 4,/"num_key_value_heads": 4, "head_dim": 4611686018427387920,/' \
  "$model/config.json" > "$tmp/hd/config.json"
expect_refused "head_dim overflowing head_dim * heads" "head_dim" \
  "$BIN" convert --from "$tmp/hd" --to "$tmp/hd-ckpt"
[ -e "$tmp/hd-ckpt" ] && { echo "FAIL: convert wrote $tmp/hd-ckpt"; fail=1; }

# --- duplicate YAML keys ---
cat > "$tmp/dup.yaml" <<'YAML'
model: {vocab_size: 256, hidden_size: 64, intermediate_size: 128, num_hidden_layers: 4,
        num_attention_heads: 4, rms_norm_eps: 1.0e-6, rope_theta: 500000, sliding_window: 8}
data: {paths: [t.npy], seq_len: 32}
train:
  max_steps: 10
  global_batch_instances: 4
  max_steps: 20
YAML
expect_refused "duplicate YAML key" "train.max_steps" "$BIN" plan "$tmp/dup.yaml"

# --- convert --to never replaces a training checkpoint or an unrelated directory ---
"$BIN" convert --from "$model" --to "$tmp/ckpt" >/dev/null || { echo "FAIL: import"; fail=1; }
mkdir -p "$tmp/notes"
echo "keep me" > "$tmp/notes/readme.txt"
expect_refused "export into an unrelated directory" "readme.txt" \
  "$BIN" convert --from "$tmp/ckpt" --to "$tmp/notes"
[ -e "$tmp/notes/model.safetensors" ] && { echo "FAIL: export wrote into $tmp/notes"; fail=1; }
expect_refused "import over an unrelated directory" "$tmp/notes" \
  "$BIN" convert --from "$model" --to "$tmp/notes"

if [ $fail -ne 0 ]; then echo "refusals.sh: FAILED"; exit 1; fi
echo "refusals.sh: all checks passed"

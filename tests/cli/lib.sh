# Helpers the CLI tests share. Source it from a test script:
#   . "$(dirname "$0")/lib.sh"
#   cli_init            # $tmp (removed on exit unless KEEP_TMP is set), fail=0, quiet OpenMP
#   check "what" 'shell condition'      # records a failure with its description
#   arith_tokens FILE [SEED] [DOCS]     # uint32 token file: arithmetic-sequence documents, EOS 255
#   cyclic_tokens FILE                  # 20,000 uint32 tokens (i*7 + i/13) mod 380
#   tiny_model_256 [LAYERS]             # YAML model block: vocab 256 (EOS 255, pad 254), window 8
#   tiny_model_384                      # YAML model block: vocab 384 (EOS 382, pad 383), window 16
#   same_checkpoint_state DIR_A DIR_B   # exit 0 iff two sharded checkpoints (format 2) hold the
#                                       # same bytes of params, Adam m, v and the same Adam step,
#                                       # whatever world sizes wrote them
#   cli_finish          # exit status: 1 if any check failed
# Token generators use only the Python standard library (any python3 on PATH).

cli_init() {
  fail=0
  tmp=$(mktemp -d)
  _cli_cleanup_extra=${_cli_cleanup_extra:-}
  trap '_cli_cleanup' EXIT
  export OMP_WAIT_POLICY=passive  # shared CI machines: do not spin on busy cores
}

_cli_cleanup() {
  [ -n "$_cli_cleanup_extra" ] && eval "$_cli_cleanup_extra"
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
}

# check <description> <condition>: evaluates the condition; on failure prints FAIL and the
# description, and makes the test fail at cli_finish.
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }

# same_runs <what> <run-a> <run-b> [compare flags]: `replica compare` finds the metrics identical.
same_runs() {
  local what=$1 a=$2 b=$3; shift 3
  if ! "$BIN" compare "$a" "$b" "$@" > "$tmp/cmp.txt" 2>&1; then
    echo "FAIL: $what: metrics differ"; cat "$tmp/cmp.txt"; fail=1
  fi
}
# same_runs_and_state <what> <run-a> <run-b> <checkpoint>: identical metrics, and the two runs'
# checkpoints/<checkpoint> hold the same parameters and Adam state.
same_runs_and_state() {
  same_runs "$1" "$2" "$3"
  same_checkpoint_state "$2/checkpoints/$4" "$3/checkpoints/$4" \
    || { echo "FAIL: $1: final parameters or Adam state differ"; fail=1; }
}

cli_finish() {
  if [ "$fail" -eq 0 ]; then echo "PASS: $(basename "$0")"; fi
  exit "$fail"
}

# Documents of arithmetic sequences mod 250, each ended by EOS 255.
arith_tokens() {
  python3 - "$1" "${2:-0}" "${3:-200}" <<'PY'
import array, random, sys
rng = random.Random(int(sys.argv[2]))
toks = []
for d in range(int(sys.argv[3])):
    start, n, step = rng.randrange(200), rng.randrange(20, 120), rng.choice([1, 2, 3])
    toks += [(start + i * step) % 250 for i in range(n)] + [255]
array.array('I', toks).tofile(open(sys.argv[1], 'wb'))
PY
}

cyclic_tokens() {
  python3 - "$1" <<'PY'
import struct, sys
t = [(i * 7 + i // 13) % 380 for i in range(20000)]
open(sys.argv[1], 'wb').write(struct.pack('<%dI' % len(t), *t))
PY
}

tiny_model_256() {
  cat <<YAML
model: {vocab_size: 256, hidden_size: 64, intermediate_size: 256, num_hidden_layers: ${1:-4},
        num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1.0e-6, rope_theta: 500000,
        sliding_window: 8, eos_token_id: 255, pad_token_id: 254}
YAML
}

tiny_model_384() {
  cat <<'YAML'
model: {model_type: olmo3, vocab_size: 384, hidden_size: 64, intermediate_size: 128,
        num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1.0e-6,
        rope_theta: 500000, sliding_window: 16, max_position_embeddings: 64, pad_token_id: 383,
        eos_token_id: 382, bos_token_id: null}
YAML
}

same_checkpoint_state() {
  python3 - "$1" "$2" <<'PY'
import json, os, struct, sys
def state(d):
    m = json.load(open(os.path.join(d, "MANIFEST.json")))
    assert m["version"] == 2, f"{d}: format version {m['version']}, expected 2"
    s = m["sharded"]
    out = {"adam_step": s["adam_step"], "layout": s["layout"]}
    for name in ("params", "adam_m", "adam_v"):
        parts = []
        for sh in s["shards"]:
            with open(os.path.join(d, sh["file"]), "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(n))
                lo, hi = header[name]["data_offsets"]
                f.seek(8 + n + lo)
                parts.append(f.read(hi - lo))
        out[name] = b"".join(parts)
        assert len(out[name]) == 4 * s["total_floats"], f"{d}: {name} has {len(out[name])} bytes"
    return out
a, b = state(sys.argv[1]), state(sys.argv[2])
bad = [k for k in a if a[k] != b[k]]
if bad:
    print(f"checkpoints differ in {bad}: {sys.argv[1]} vs {sys.argv[2]}")
    sys.exit(1)
PY
}

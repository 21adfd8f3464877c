#!/usr/bin/env bash
# ctest-labels: long
# bf16 precision end to end (docs/precision.md):
#  - `replica parity --precision bf16` on every fixture case: KL mean no worse than PyTorch 1.13
#    autocast bf16 on the same inputs (the figures the fixture READMEs and docs/BENCHMARKS.md give),
#    and fp32 parity unchanged (KL max <= 1e-8, top-1 100%), on the trained long-context model too;
#  - bad input exits 2 naming the flag or key: --precision fp16, an --isa the CPU lacks, a config
#    with compute.precision fp16, a compute.isa that is unknown or this CPU lacks (checked when
#    the run starts; plan reads it), a compute.device that is not registered (with the list of those
#    that are); nothing is written;
#  - `replica bench --precision bf16` reports the mode, MFU against the bf16 GEMM and the nominal peak;
#  - bf16 training is bit-identical on 1 and 2 ranks (mpirun) and across thread counts;
#  - the device switch: a run trained 10 steps in fp32 on 2 ranks (1 without mpirun) resumes in
#    bf16 on 1 rank, and one trained in bf16 resumes in fp32; metrics record the switch; from the
#    switch on, each switched loss lies within [min, max] of the unswitched fp32 and bf16 losses at
#    that step widened by the largest |bf16 - fp32| loss gap of the unswitched runs.
# usage: bf16.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2
FAIL() { echo "FAIL: $*"; fail=1; }
. "$(dirname "$0")/lib.sh"  # arith_tokens

# --- parity ---
check_parity() {  # check_parity <case-dir> <max bf16 kl_mean> <min bf16 top-1>
  local dir=$1 kl=$2 top1=$3
  "$BIN" parity --model "$dir" --reference "$dir/io.safetensors" --precision bf16 --max-kl 1 \
    --min-top1 0 --json --threads 2 > "$tmp/p16.json" 2> "$tmp/p16.err" \
    || { FAIL "bf16 parity $dir exit $?: $(cat "$tmp/p16.err")"; return; }
  "$BIN" parity --model "$dir" --reference "$dir/io.safetensors" --max-kl 1e-8 --min-top1 1.0 \
    --json --threads 2 > "$tmp/p32.json" 2>/dev/null || FAIL "fp32 parity $dir exit $?"
  python3 - "$tmp/p16.json" "$tmp/p32.json" "$kl" "$top1" "$dir" <<'PY' || FAIL "parity $dir"
import json, sys
b, f = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
kl, top1, name = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
print(f"{name}: bf16 KL mean {b['kl_mean']:.3e} max {b['kl_max']:.3e} top-1 {b['top1_agreement']:.4f}; "
      f"fp32 KL mean {f['kl_mean']:.3e} max {f['kl_max']:.3e} top-1 {f['top1_agreement']:.4f}")
assert b["precision"] == "bf16" and f["precision"] == "fp32", (b["precision"], f["precision"])
assert b["compute"]["precision"] == "bf16" and b["compute"]["isa"], b["compute"]
assert b["kl_mean"] <= kl, f"bf16 KL mean {b['kl_mean']} above PyTorch autocast's {kl}"
assert b["top1_agreement"] >= top1, f"bf16 top-1 {b['top1_agreement']} below {top1}"
assert b["kl_mean"] > 10 * f["kl_mean"], "bf16 is not on"
assert f["kl_max"] <= 1e-8 and f["top1_agreement"] == 1.0, "fp32 parity changed"
PY
}
# PyTorch 1.13 autocast bf16 on the same inputs (tools/torch_parity.py; fixture README for the long
# case): KL mean 1.6e-6 / 6.1e-6 / 2.4e-4, top-1 97.9% / 96.7% / 98.9%; the issue quotes 1.1e-6 / 5.2e-6
# (tiny) and the long README 9.2e-5 / 99.27%: the bars are the lower KL and the higher top-1.
check_parity "$ROOT/tests/data/olmo3/tiny-mha" 1.1e-6 0.979
check_parity "$ROOT/tests/data/olmo3/tiny-gqa" 5.2e-6 0.983
check_parity "$ROOT/tests/data/long/bytes-mqa-2048" 9.2e-5 0.9927

# --- bad input ---
expect_exit2() {  # expect_exit2 <what> <text in stderr> <command...>
  local what=$1 want=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || { FAIL "$what: exit $rc, expected 2"; return; }
  grep -q -- "$want" "$tmp/err" || FAIL "$what: stderr lacks '$want': $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && FAIL "$what: wrote output"
  echo "ok: $what -> $(head -c 300 "$tmp/err")"
}
M=$ROOT/tests/data/olmo3/tiny-mha
expect_exit2 "parity --precision fp16" "--precision" "$BIN" parity --model "$M" --reference "$M/io.safetensors" --precision fp16
expect_exit2 "parity --isa bogus" "--isa" "$BIN" parity --model "$M" --reference "$M/io.safetensors" --isa sse9
if ! grep -q amx_bf16 /proc/cpuinfo; then
  expect_exit2 "parity --isa amx without AMX" "not available" "$BIN" parity --model "$M" --reference "$M/io.safetensors" --isa amx
  expect_exit2 "bench --isa amx without AMX" "--isa" "$BIN" bench --model-config "$M/config.json" --isa amx
fi
expect_exit2 "bf16 with a dump of another model" "'logits'" "$BIN" parity --model "$M" \
  --reference "$ROOT/tests/data/olmo3/tiny-gqa/io.safetensors" --precision bf16
expect_exit2 "eval --precision fp16" "--precision" "$BIN" eval --model "$M" --eval "$tmp/none.jsonl" --precision fp16

# --- bench ---
"$BIN" bench --model-config "$M/config.json" --batch 1 --seq 32 --steps 1 --warmup 0 --peak-size 128 \
  --precision bf16 --json > "$tmp/bench.json" 2> "$tmp/bench.err" || FAIL "bench bf16 exit $?"
python3 - "$tmp/bench.json" <<'PY' || FAIL "bench bf16 JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["precision"] == "bf16", j
assert j["peak_gemm"]["bf16_gflops"] > 0 and j["peak_gflops"] == j["peak_gemm"]["bf16_gflops"], j
assert 0 < j["mfu"] and 0 < j["mfu_nominal"] < 1, j
assert j["nominal_peak"]["clock_ghz"] > 0.2, j
# One bf16 copy per linear weight (7 per layer) and the LM head per step on the oneDNN route,
# where GEMMs read weights from ops/cpu/bf16_weights.h; none on the emulated route.
layers = json.load(open(j["model_config"]))["num_hidden_layers"]
want = 7 * layers + 1 if j["compute"]["bf16_matmul"].startswith("onednn") else 0
assert j["bf16_weight_conversions_per_step"] == want, (j["bf16_weight_conversions_per_step"], want)
PY

# --- training: determinism, device switch ---
arith_tokens "$tmp/tokens.npy" 0 300
cat > "$tmp/tiny.yaml" <<'YAML'
model:
  vocab_size: 256
  hidden_size: 64
  intermediate_size: 256
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  rms_norm_eps: 1.0e-6
  rope_theta: 500000
  sliding_window: 8
  eos_token_id: 255
  pad_token_id: 254
data:
  paths: [tokens.npy]
  seq_len: 32
  seed: 3
train:
  max_steps: 20
  global_batch_instances: 8
  micro_batch_instances: 2
  threads: 2
  log_interval: 10
optim:
  lr: 3.0e-3
  schedule: {type: cosine, warmup: 5, t_max: 20}
checkpoint:
  interval: 10
  keep: 3
YAML
MPI=()
if command -v mpirun > /dev/null; then
  export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
  MPI=(mpirun --oversubscribe --bind-to none -np 2)
  [ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
fi
train() {  # train <ranks> <run-dir> [--set ...]
  local n=$1 dir=$2; shift 2
  if [ "$n" = 2 ] && [ ${#MPI[@]} -gt 0 ]; then
    "${MPI[@]}" "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1
  else
    "$BIN" train "$tmp/tiny.yaml" --run-dir "$dir" --quiet "$@" >> "$dir.log" 2>&1
  fi
}
expect_exit2 "train compute.precision fp16" "compute.precision" "$BIN" train "$tmp/tiny.yaml" \
  --run-dir "$tmp/bad" --set compute.precision=fp16
expect_exit2 "train compute.device gpu" "config key 'compute.device': unknown device 'gpu'; registered devices: cpu" \
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/bad-device" --set compute.device=gpu
[ -e "$tmp/bad-device" ] && FAIL "compute.device gpu: the run directory was created"
# compute.isa is the device's to check when the run starts: the config loads and plans, train
# refuses an unknown cap (and one this CPU lacks) before it writes anything.
"$BIN" plan "$tmp/tiny.yaml" --set compute.isa=amx > /dev/null 2>&1 || FAIL "plan of a config with compute.isa amx: exit $?"
expect_exit2 "train compute.isa sse9" "config key 'compute.isa'" "$BIN" train "$tmp/tiny.yaml" \
  --run-dir "$tmp/bad-isa" --set compute.isa=sse9
if ! grep -q amx_bf16 /proc/cpuinfo; then
  expect_exit2 "train compute.isa amx without AMX" "not available" "$BIN" train "$tmp/tiny.yaml" \
    --run-dir "$tmp/bad-isa" --set compute.isa=amx
fi
# compute.torch_cpu likewise: the device checks it when the run starts.
expect_exit2 "train compute.torch_cpu avx1" "config key 'compute.torch_cpu'" "$BIN" train \
  "$tmp/tiny.yaml" --run-dir "$tmp/bad-isa" --set compute.precision=bf16-fsdp \
  --set compute.torch_cpu=avx1
[ -e "$tmp/bad-isa" ] && FAIL "compute.isa: the run directory was created"
[ -e "$tmp/bad" ] && FAIL "a refused config left a run directory"

train 1 "$tmp/F32" || FAIL "fp32 run exit $?: $(tail -5 "$tmp/F32.log")"
train 1 "$tmp/B16" --set compute.precision=bf16 || FAIL "bf16 run exit $?: $(tail -5 "$tmp/B16.log")"
train 1 "$tmp/B16t1" --set compute.precision=bf16 --set train.threads=1 || FAIL "bf16 1-thread run"
"$BIN" compare "$tmp/B16" "$tmp/B16t1" > "$tmp/cmp.txt" 2>&1 || { FAIL "bf16: 1 vs 2 threads differ"; cat "$tmp/cmp.txt"; }
if [ ${#MPI[@]} -gt 0 ]; then
  train 2 "$tmp/B16r2" --set compute.precision=bf16 || FAIL "bf16 2-rank run"
  "$BIN" compare "$tmp/B16" "$tmp/B16r2" > "$tmp/cmp.txt" 2>&1 || { FAIL "bf16: 1 vs 2 ranks differ"; cat "$tmp/cmp.txt"; }
fi
grep -q '"precision": *"bf16"' "$tmp/B16/checkpoints/step-00000020/state.json" || FAIL "state.json lacks precision bf16"
grep -q '"isa": *"' "$tmp/B16/checkpoints/step-00000020/state.json" || FAIL "state.json lacks isa"

# fp32 on 2 ranks to step 10, then bf16 on 1 rank; and bf16 -> fp32.
train 2 "$tmp/S1" --set train.max_steps=10 || FAIL "switch part 1"
train 1 "$tmp/S1" --set compute.precision=bf16 || FAIL "switch part 2: $(tail -5 "$tmp/S1.log")"
train 1 "$tmp/S2" --set train.max_steps=10 --set compute.precision=bf16 || FAIL "switch back part 1"
train 1 "$tmp/S2" || FAIL "switch back part 2"
grep -q "compute switch at step 10" "$tmp/S1/train.log" || FAIL "train.log lacks the switch"
python3 - "$tmp" "${#MPI[@]}" <<'PY' || FAIL "device switch"
import json, sys
tmp, mpi = sys.argv[1], int(sys.argv[2]) > 0
def load(name):
    loss, switch, prec = {}, {}, {}
    for l in open(f"{tmp}/{name}/metrics.jsonl"):
        m = json.loads(l)
        if "compute_switch" in m: switch[m["step"]] = m["compute_switch"]
        if "loss" in m: loss[m["step"]] = m["loss"]; prec[m["step"]] = m["precision"]
        if "loss" in m: assert 0 < m["mfu_nominal"] < 1, m  # against FLOP/cycle x clock x threads
    return loss, switch, prec
f32, _, _ = load("F32")
b16, _, pb = load("B16")
assert all(p == "bf16" for p in pb.values())
spread = max(abs(f32[s] - b16[s]) for s in f32)
print(f"unswitched runs: largest |loss_bf16 - loss_fp32| over 20 steps = {spread:.3e}")
assert 0 < spread < 0.05, spread
for name, frm, to in (("S1", "fp32", "bf16"), ("S2", "bf16", "fp32")):
    loss, switch, prec = load(name)
    assert list(switch) == [11], (name, switch)
    sw = switch[11]
    assert sw["from"]["precision"] == frm and sw["to"]["precision"] == to, sw
    if name == "S1" and mpi:
        assert sw["from"]["world_size"] == 2 and sw["to"]["world_size"] == 1, sw
    assert all(prec[s] == (frm if s <= 10 else to) for s in loss), prec
    same_before = f32 if frm == "fp32" else b16
    assert all(loss[s] == same_before[s] for s in range(1, 11)), f"{name}: steps 1-10 differ"
    worst = 0
    for s in range(11, 21):
        lo, hi = min(f32[s], b16[s]) - spread, max(f32[s], b16[s]) + spread
        assert lo <= loss[s] <= hi, (name, s, loss[s], f32[s], b16[s], spread)
        worst = max(worst, abs(loss[s] - (f32[s] if to == "fp32" else b16[s])))
    print(f"{name} ({frm} -> {to} at step 10): largest gap to the unswitched {to} run {worst:.3e}")
PY

# bf16-fsdp: the torch CPU kind a run follows is in its state.json; a resume under the other kind
# is a compute switch like any other. A contiguous-layout run resumed on another number of ranks
# says that its steps now depend on that number.
train 1 "$tmp/K" --set train.max_steps=10 --set compute.precision=bf16-fsdp \
  --set compute.torch_cpu=avx512 || FAIL "torch kind part 1: $(tail -5 "$tmp/K.log")"
grep -q '"torch_cpu": *"avx512"' "$tmp/K/checkpoints/step-00000010/state.json" \
  || FAIL "state.json lacks torch_cpu avx512"
grep -q '"torch_cpu"' "$tmp/F32/checkpoints/step-00000020/state.json" \
  && FAIL "an fp32 state.json names a torch kind"
train 1 "$tmp/K" --set train.max_steps=12 --set compute.precision=bf16-fsdp \
  --set compute.torch_cpu=avx2 || FAIL "torch kind part 2: $(tail -5 "$tmp/K.log")"
grep -q 'compute switch at step 10: .*"torch_cpu":"avx512".* -> .*"torch_cpu":"avx2"' \
  "$tmp/K/train.log" || FAIL "train.log lacks the torch kind switch: $(grep switch "$tmp/K/train.log")"
python3 - "$tmp/K/metrics.jsonl" <<'PY' || FAIL "torch kind switch in metrics"
import json, sys
sw = [json.loads(l) for l in open(sys.argv[1]) if "compute_switch" in l]
assert len(sw) == 1 and sw[0]["step"] == 11, sw
assert sw[0]["compute_switch"]["from"]["torch_cpu"] == "avx512", sw
assert sw[0]["compute_switch"]["to"]["torch_cpu"] == "avx2", sw
PY
train 1 "$tmp/K2" --set train.max_steps=10 --set compute.precision=bf16-fsdp \
  --set compute.torch_cpu=avx2 || FAIL "torch kind resume part 1"
train 1 "$tmp/K2" --set compute.precision=bf16-fsdp --set train.max_steps=12 \
  --set compute.torch_cpu=avx2 || FAIL "torch kind resume part 2"
grep -q "compute switch" "$tmp/K2/train.log" && FAIL "a resume under the same torch kind is a switch"
if [ ${#MPI[@]} -gt 0 ]; then
  train 2 "$tmp/C" --set train.max_steps=10 --set train.micro_batch_layout=contiguous \
    || FAIL "contiguous part 1"
  train 1 "$tmp/C" --set train.micro_batch_layout=contiguous || FAIL "contiguous part 2"
  grep -q "warning: train.micro_batch_layout contiguous: 2 -> 1 ranks" "$tmp/C/train.log" \
    || FAIL "train.log lacks the contiguous-layout warning"
  grep -q "warning: train.micro_batch_layout" "$tmp/S1/train.log" \
    && FAIL "a strided run warned of its layout"
fi
[ $fail -eq 0 ] && echo "PASS"
exit $fail

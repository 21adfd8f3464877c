#!/usr/bin/env bash
# What the user reads: command-line mistakes in one style (`replica: error: ...`) with "did you
# mean", ranges in words, --set before or after CONFIG, an unknown --set section, JSON errors at
# file:line:column; a short run of a longer config told how to shorten its warm-up; plan's counts
# in B/T; the compute line naming only what runs; eval's progress line; bench on a run config;
# parity --against's progress, input and bf16 hint; compare's "missing"; a reference run's curve
# (OLMo-core console log, metrics_step JSON, W&B CSV) beside a replica run in compare and plot.
#   usage: messages.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "$0")/lib.sh"
cli_init
export OMP_NUM_THREADS=2
REF=$ROOT/tests/data/reference-runs
DATA=$ROOT/tests/data/olmo3

# refused NAME WANT CMD...: exit 2, one line on stderr in the house style containing WANT, no
# CLI11 wording and no number of 20 digits or more.
refused() {
  local name=$1 want=$2
  shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL: $name: exit $rc, expected 2 ($(head -c 300 "$tmp/err"))"; fail=1; return; fi
  if ! grep -qF -- "$want" "$tmp/err"; then echo "FAIL: $name: no '$want' in: $(cat "$tmp/err")"; fail=1; return; fi
  if ! head -1 "$tmp/err" | grep -q '^replica: error: '; then echo "FAIL: $name: not in the house style: $(cat "$tmp/err")"; fail=1; fi
  if grep -qE 'Run with --help|A subcommand is required|not expected|[0-9]{20}' "$tmp/err"; then
    echo "FAIL: $name: CLI11's wording leaks: $(cat "$tmp/err")"; fail=1
  fi
  echo "ok: $name -> $(head -c 200 "$tmp/err")"
}

{ tiny_model_256 2; cat <<'YAML'
data: {paths: [tokens.u32], seq_len: 32}
train: {max_steps: 2, global_batch_instances: 2, micro_batch_instances: 2, threads: 2}
optim: {lr: 1.0e-3, schedule: {type: cosine, warmup: 0}}
YAML
} > "$tmp/tiny.yaml"
arith_tokens "$tmp/tokens.u32"
mkdir -p "$tmp/oc"
printf '{"_CLASS_": "olmo_core.train.config.TrainConfig"}\n' > "$tmp/oc/config.json"

# --- command-line mistakes ---
refused "typo'd command" "unknown command 'trian' (did you mean 'train'?)" "$BIN" trian
refused "typo'd nested command" "unknown command 'bach' (did you mean 'batch'?)" "$BIN" data bach
refused "no command" "give a command: bench, compare" "$BIN"
refused "typo'd option behind a missing required one" "unknown option '--rundir' (did you mean '--run-dir'?)" \
  "$BIN" train "$tmp/tiny.yaml" --rundir "$tmp/r"
refused "an option that is a config key" "unknown option '--max-steps' (a run config key: --set train.max_steps=VALUE)" \
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/r" --max-steps 5
refused "an option near another and a key of two sections" "unknown option '--seed' (did you mean '--set'? a run config key: --set init.seed=VALUE or --set data.seed=VALUE)" \
  "$BIN" train "$tmp/tiny.yaml" --run-dir "$tmp/r" --seed 3
refused "extra arguments in the order given" "unexpected arguments 'a' 'b'" "$BIN" plan "$tmp/tiny.yaml" a b
refused "a missing required option says what it is" "--run-dir is required (run directory" "$BIN" train "$tmp/tiny.yaml"
refused "--epoch 0" "--epoch: must be at least 1 (got 0): epochs count from 1, as OLMo-core's data loader says ('epoch' must be at least 1)" \
  "$BIN" data order --instances 10 --seed 1 --epoch 0
refused "data batch -1" "N: must be at least 0 (got -1)" "$BIN" data batch -1 --config "$tmp/tiny.yaml"
refused "import-config --max-steps 0" "--max-steps: must be at least 1 (got 0)" \
  "$BIN" import-config "$tmp/oc/config.json" --max-steps 0
refused "eval --seq-len 1" "--seq-len: must be between 2 and 1048576 (got 1)" \
  "$BIN" eval --model "$DATA/tiny-mha" --seq-len 1 --eval x.jsonl
refused "a word for a number" "could not convert: --world = abc" "$BIN" plan "$tmp/tiny.yaml" --world abc
# An unknown --set section lists the sections (it listed no keys), with the nearest one.
refused "--set of no section" "--set: unknown config key 'foo.bar' (there is no section 'foo'; the sections are checkpoint, compute, data" \
  "$BIN" plan "$tmp/tiny.yaml" --set foo.bar=1
refused "--set of a misspelt section" "there is no section 'trian' (did you mean 'train'?)" \
  "$BIN" plan "$tmp/tiny.yaml" --set trian.max_steps=1
refused "--set of an unknown key of a section" "unknown config key 'train.foo' (known keys in 'train': max_steps," \
  "$BIN" plan "$tmp/tiny.yaml" --set train.foo=1
# A JSON file that is not valid JSON: the file, line and column, in replica's words.
cp -r "$DATA/tiny-gqa" "$tmp/hf400"
sed -i 's/"rms_norm_eps": [^,]*/"rms_norm_eps": 1e400/' "$tmp/hf400/config.json"
line=$(grep -n '1e400' "$tmp/hf400/config.json" | cut -d: -f1)
col=$(grep '1e400' "$tmp/hf400/config.json" | sed 's/1e400.*//' | wc -c)  # characters before it, plus 1
refused "config.json with 1e400" "$tmp/hf400/config.json:$line:$col: not valid JSON: the number 1e400 is beyond the range of a double" \
  "$BIN" convert --from "$tmp/hf400" --to "$tmp/ck400"
check "config.json with 1e400: no JSON library wording" '! grep -q "json.exception" "$tmp/err"'
[ ! -e "$tmp/r" ] || { echo "FAIL: a refused train wrote $tmp/r"; fail=1; }
# --set takes one KEY=VALUE: CONFIG after it stays CONFIG, in train as in plan.
"$BIN" train --set train.max_steps=1 "$tmp/tiny.yaml" --run-dir "$tmp/set-first" --quiet > /dev/null 2> "$tmp/err"
check "train --set k=v CONFIG trains ($(tail -c 300 "$tmp/err"))" '[ -f "$tmp/set-first/metrics.jsonl" ] && [ "$(wc -l < "$tmp/set-first/metrics.jsonl")" -eq 1 ]'
"$BIN" plan --set train.max_steps=7 "$tmp/tiny.yaml" > "$tmp/plan-set.txt" 2> "$tmp/err"
check "plan --set k=v CONFIG reads CONFIG ($(cat "$tmp/err"))" 'grep -q "^steps  *7$" "$tmp/plan-set.txt"'

# --- a short run of a longer config: the warm-up does not fit, and the message says what to set ---
refused "5 steps of configs/demo.yaml" "the warm-up of 10 steps does not end before train.max_steps 5" \
  "$BIN" plan "$ROOT/configs/demo.yaml" --set train.max_steps=5
check "... and names the --set that fixes it" 'grep -qF -- "--set optim.schedule.warmup=2" "$tmp/err"'
"$BIN" plan "$ROOT/configs/demo.yaml" --set train.max_steps=5 --set optim.schedule.warmup=2 > /dev/null 2>&1
rc=$?
check "the suggested --set is accepted (exit $rc)" '[ $rc -eq 0 ]'

# --- plan: counts for people as well as exact ---
"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" > "$tmp/plan.txt" 2>&1
check "plan prints 7.30 B parameters" 'grep -q "^parameters  *7298617344 (7.30 B)$" "$tmp/plan.txt"'
check "plan prints tokens in T" 'grep -qE "^tokens  *[0-9]+ \([0-9]+\.[0-9]{2} T\)$" "$tmp/plan.txt"'
"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --json > "$tmp/plan.json" 2>/dev/null
check "plan --json keeps the exact integer" '[ -s "$tmp/plan.json" ] && jq -e ".params == 7298617344" "$tmp/plan.json" > /dev/null'

# --- the compute line says what the command uses; eval shows progress ---
printf '{"id": "a", "text": "The state of the Union is strong."}\n{"id": "b", "text": "Call me Ishmael."}\n' > "$tmp/held.jsonl"
"$BIN" eval --model "$DATA/tiny-mha" --tokenizer bytes --seq-len 64 --eval "$tmp/held.jsonl" --threads 2 > /dev/null 2> "$tmp/eval32.err"
check "fp32 eval: compute line names fp32 matmuls only ($(grep compute: "$tmp/eval32.err"))" \
  'grep -q "compute: precision fp32.*fp32 matmuls" "$tmp/eval32.err" && ! grep -q "bf16 matmuls" "$tmp/eval32.err"'
check "eval prints progress with the total ($(grep '^eval:' "$tmp/eval32.err" | tail -1))" \
  'grep -qE "^eval: 100% \([0-9,]+ of [0-9,]+ positions\), [0-9]+s elapsed" "$tmp/eval32.err"'
"$BIN" eval --model "$DATA/tiny-mha" --tokenizer bytes --seq-len 64 --eval "$tmp/held.jsonl" --threads 2 --no-progress > /dev/null 2> "$tmp/evalq.err"
check "--no-progress: no progress line" '! grep -q "^eval:" "$tmp/evalq.err"'
"$BIN" eval --model "$DATA/tiny-mha" --tokenizer bytes --seq-len 64 --eval "$tmp/held.jsonl" --threads 2 --precision bf16 > /dev/null 2> "$tmp/eval16.err"
check "bf16 eval: compute line names the bf16 route" 'grep -q "compute: precision bf16.*bf16 matmuls" "$tmp/eval16.err"'

# --- bench takes a run config's model section, and says what it expects otherwise ---
"$BIN" bench --model-config "$tmp/tiny.yaml" --batch 1 --seq 16 --steps 1 --warmup 0 --peak-size 64 --threads 2 --json > "$tmp/bench.json" 2> "$tmp/err"
check "bench --model-config RUN.yaml ($(tail -c 300 "$tmp/err"))" '[ -s "$tmp/bench.json" ] && jq -e ".tokens_per_s > 0" "$tmp/bench.json" > /dev/null'
echo "not a config" > "$tmp/notes.txt"
refused "bench --model-config on a text file" "expected a Hugging Face config.json, a run config" \
  "$BIN" bench --model-config "$tmp/notes.txt"

# --- parity --against: the input is named; a bf16 copy failing exact thresholds gets the hint ---
"$BIN" convert --from "$DATA/tiny-gqa" --to "$tmp/ck" > /dev/null 2>&1
"$BIN" convert --from "$tmp/ck" --to "$tmp/bf16" --dtype bf16 > /dev/null 2>&1
"$BIN" parity --model "$tmp/bf16" --against "$DATA/tiny-gqa" --seq-len 40 --threads 2 > "$tmp/par.txt" 2> "$tmp/par.err"
rc=$?
check "parity --against prints progress ($(grep '^parity:' "$tmp/par.err" | tail -1))" \
  'grep -qE "^parity: 100% \([0-9]+ of [0-9]+ passes\)" "$tmp/par.err"'
check "bf16 copy at default thresholds fails (exit $rc)" '[ $rc -eq 1 ]'
check "the text says the tokens were random" 'grep -q "input  *40 random token ids, uniform in \[0, [0-9]*) from seed 0 (not text" "$tmp/par.txt"'
check "the hint names bf16 rounding and the thresholds ($(grep hint: "$tmp/par.txt"))" \
  'grep -q "^hint: --model stores its weights as BF16 and --against as F32: rounding to bf16" "$tmp/par.txt" && grep -qF -- "--max-kl 1e-2 --min-top1 0.9" "$tmp/par.txt"'
"$BIN" parity --model "$tmp/bf16" --against "$DATA/tiny-gqa" --seq-len 40 --threads 2 --max-kl 1e-2 --min-top1 0.9 --json > "$tmp/par.json" 2>/dev/null
check "the hint's thresholds pass this pair" '[ -s "$tmp/par.json" ] && jq -e ".pass and .hint == null and (.input | test(\"random\"))" "$tmp/par.json" > /dev/null'

# --- compare: a value in one run only is "missing" ---
printf '{"step":1,"loss":2.0}\n{"step":2,"loss":1.5}\n' > "$tmp/a.jsonl"
printf '{"step":1,"loss":2.0}\n{"step":2,"grad_norm":1.0}\n' > "$tmp/b.jsonl"
"$BIN" compare "$tmp/a.jsonl" "$tmp/b.jsonl" > "$tmp/cmp.txt"
check "compare says missing ($(grep '^loss' "$tmp/cmp.txt"))" 'grep -qE "^loss  *0  *0  *1 in B  *2$" "$tmp/cmp.txt" && grep -q "loss: A 1.5  B missing" "$tmp/cmp.txt"'

# --- a reference run's curve beside replica's ---
"$BIN" compare "$REF/metrics.jsonl" "$REF/olmo_core_console.log" --tolerance 1e-3 > "$tmp/ref.txt"
rc=$?
check "compare with an OLMo-core console log at 1e-3 (exit $rc)" '[ $rc -eq 0 ] && grep -q "(OLMo-core console log)" "$tmp/ref.txt" && grep -qE "^ce_loss " "$tmp/ref.txt" && grep -qE "^grad_norm " "$tmp/ref.txt"'
"$BIN" compare "$REF/metrics.jsonl" "$REF/olmo_core_console.log" > /dev/null
rc=$?
check "... but not bit-identical: it keeps 4 digits (exit $rc)" '[ $rc -eq 1 ]'
"$BIN" compare "$REF/metrics.jsonl" "$REF/wandb_chart.csv" --metrics loss,ce_loss,z_loss,grad_norm,lr > /dev/null
rc=$?
check "compare with a W&B chart export, bit-identical (exit $rc)" '[ $rc -eq 0 ]'
mkdir -p "$tmp/saver" && cp "$REF"/metrics_step*.json "$tmp/saver/"
"$BIN" compare "$REF/metrics.jsonl" "$tmp/saver" --allow-missing-steps --metrics loss,ce_loss,lr > /dev/null
rc=$?
check "compare with OLMo-core metrics_step files (exit $rc)" '[ $rc -eq 0 ]'
if command -v gnuplot > /dev/null; then
  "$BIN" plot "$REF/metrics.jsonl" "$REF/olmo_core_console.log" "$REF/wandb_history.csv" --out "$tmp/plots" > /dev/null 2> "$tmp/err"
  check "plot a replica run with reference curves ($(tail -c 300 "$tmp/err"))" \
    '[ -s "$tmp/plots/loss.png" ] && grep -q "olmo_core_console.log" "$tmp/plots/plot.gp" && grep -q "wandb_history.csv" "$tmp/plots/plot.gp"'
fi
cli_finish

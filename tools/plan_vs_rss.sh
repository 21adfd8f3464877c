#!/usr/bin/env bash
# replica plan's memory per rank against the peak RSS of every rank of a real run
# (docs/memory.md "Plan against measured peak RSS"). Model bench-S, fp32, seq_len 128, 8 instances
# per step in micro-batches of 2, 2 steps, one checkpoint at the end, one thread per rank; ranks
# 1, 2 and 4 (2 and 4 under mpirun). Extra arguments are --set overrides for every run, e.g.
#   tools/plan_vs_rss.sh build/replica --set parallel.sharding=zero3 --set train.grad_accumulation=sequential
# Needs /usr/bin/time (GNU time) and, for 2 and 4 ranks, mpirun.   usage: plan_vs_rss.sh <replica> [--set k=v ...]
set -u
[ $# -ge 1 ] && [ -x "$1" ] || { echo "usage: tools/plan_vs_rss.sh <replica-binary> [--set key=value ...]" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time (GNU time) not found" >&2; exit 2; }
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); shift
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; cd "$work"
python3 - <<'PY'
import array, random
rng = random.Random(0); toks = []
while len(toks) < 200000:
    n = rng.randrange(50, 400); toks += [rng.randrange(8000) for _ in range(n)] + [8191]
open("tokens.npy", "wb").write(array.array("I", toks).tobytes())
PY
cat > run.yaml <<YAML
model: {hf_config: $ROOT/tests/data/bench-shapes/bench-S/config.json}
data: {paths: [tokens.npy], seq_len: 128, seed: 1}
train: {max_steps: 2, global_batch_instances: 8, micro_batch_instances: 2, threads: 1, recompute: none}
optim: {lr: 1.0e-3, schedule: {type: cosine, warmup: 1}}
checkpoint: {interval: 0, keep: 1}
YAML
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1 OMP_WAIT_POLICY=passive
MPI=(mpirun --oversubscribe --bind-to none); [ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
for R in 1 2 4; do
  [ "$R" != 1 ] && ! command -v mpirun > /dev/null && { echo "R=$R: skipped (no mpirun)"; continue; }
  plan=$("$BIN" plan run.yaml --world "$R" --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["memory_per_rank_bytes"])') \
    || { echo "R=$R: plan failed"; exit 1; }
  rm -rf run rss.*
  if [ "$R" = 1 ]; then /usr/bin/time -v -o rss.0 "$BIN" train run.yaml --run-dir run --quiet "$@" > log 2>&1
  else "${MPI[@]}" -np "$R" bash -c "/usr/bin/time -v -o rss.\$OMPI_COMM_WORLD_RANK $BIN train run.yaml --run-dir run --quiet $*" > log 2>&1; fi \
    || { echo "R=$R: train failed:"; tail -n 5 log; exit 1; }
  for f in rss.*; do
    kb=$(awk '/Maximum resident/ {print $NF}' "$f")
    python3 -c "print('R=$R rank ${f#rss.}: peak RSS %.1f MiB, plan %.1f MiB, plan/RSS %.4f' % ($kb/1024, $plan/2**20, $plan/1024/$kb))"
  done
done

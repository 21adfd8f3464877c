#!/usr/bin/env bash
# `replica plan`: the 7B stage-1 preset has 7,298,617,344 parameters and the recipe's LR at given
# steps; its memory per rank (zero3, recompute auto) fits 20 GiB at the smallest world it reports;
# bad input exits 2 naming the problem.   usage: plan.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --lr-at 1,1000,2000,476838,1192093 --json \
  > "$tmp/s1.json" || { echo "FAIL: plan stage1 exit $?"; fail=1; }
python3 - "$tmp/s1.json" <<'PY' || fail=1
import json, math, sys
p = json.load(open(sys.argv[1]))
ok = True
def want(cond, what):
    global ok
    if not cond:
        print("FAIL:", what); ok = False
want(p["params"] == 7298617344, f"params {p['params']}")
want(p["steps"] == 597046, f"steps {p['steps']}")
want(p["tokens"] == 597046 * 4194304, f"tokens {p['tokens']}")
want(p["flops_per_token"] > 6 * (7298617344 - 4096 * 100352), "flops_per_token too small")
want(p["memory_per_rank_bytes"] > 16 * 7298617344, "memory below params+grads+adam")
lr = {int(k): v for k, v in p["lr_at"].items()}
want(lr[1] == 1.5e-7, f"lr(1) {lr[1]}")
want(lr[1000] == 1.5e-4, f"lr(1000) {lr[1000]}")
cos = lambda s: 3e-5 + (3e-4 - 3e-5) * (1 + math.cos(math.pi * (s - 2000) / 1190093)) / 2
want(abs(lr[476838] - cos(476838)) < 1e-18, f"lr(476838) {lr[476838]}")
want(abs(lr[476838] - 2.0712352850360292e-4) < 1e-18, "stage-2 peak LR")
want(lr[1192093] == 3e-5 * 1.0 or abs(lr[1192093] - 3e-5) < 1e-20, f"lr(t_max) {lr[1192093]}")
sys.exit(0 if ok else 1)
PY

# Adam state per rank shrinks with the world size (zero3, as zero1).
"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --world 512 --json > "$tmp/w.json" \
  || { echo "FAIL: plan --world 512"; fail=1; }
python3 -c "
import json,sys
a=json.load(open('$tmp/s1.json'))['memory_breakdown_bytes']['adam']
b=json.load(open('$tmp/w.json'))['memory_breakdown_bytes']['adam']
sys.exit(0 if b*512 >= a and b*511 < a else 1)" || { echo "FAIL: adam not sharded"; fail=1; }

"$BIN" plan "$ROOT/configs/olmo3-7b-stage2.yaml" --lr-at 1,47684 --json > "$tmp/s2.json" \
  || { echo "FAIL: plan stage2"; fail=1; }
python3 -c "
import json,sys
p=json.load(open('$tmp/s2.json')); lr=p['lr_at']
ok = abs(lr['1'] - 2.0712352850360292e-4*(1-1/47684)) < 1e-19 and lr['47684'] == 0 and p['tokens'] == 47684*2097152
sys.exit(0 if ok else 1)" || { echo "FAIL: stage2 plan values"; fail=1; }

# YaRN (the released long-context config): `plan` shows the scaling of the full-attention layers.
python3 - "$ROOT/configs/olmo3-7b.json" "$tmp/7b-yarn.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["max_position_embeddings"] = 65536
c["rope_scaling"] = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
                     "beta_fast": 32.0, "beta_slow": 1.0, "attention_factor": 1.2079441541679836}
json.dump(c, open(sys.argv[2], "w"))
PY
"$BIN" plan "$ROOT/configs/olmo3-7b-stage2.yaml" --set "model.hf_config=$tmp/7b-yarn.json" --json \
  > "$tmp/yarn.json" || { echo "FAIL: plan with YaRN"; fail=1; }
python3 -c "
import json,sys
r=json.load(open('$tmp/yarn.json'))['rope']
f, s = r['full_attention'], r['sliding_attention']
ok = (f['rope_type'] == 'yarn' and f['factor'] == 8 and f['original_max_position_embeddings'] == 8192
      and f['attention_factor'] == 1.2079441541679836 and s['rope_type'] == 'default'
      and s['rope_theta'] == f['rope_theta'] == 500000)
sys.exit(0 if ok else 1)" || { echo "FAIL: plan rope fields"; fail=1; }
"$BIN" plan "$ROOT/configs/olmo3-7b-stage2.yaml" --set "model.hf_config=$tmp/7b-yarn.json" \
  | grep -q "RoPE *full layers yarn (theta 500000.0, factor 8.0, original_max_position_embeddings 8192" \
  || { echo "FAIL: plan text lacks the YaRN line"; fail=1; }

# Memory per rank for the recipe's mode (zero3, sequential, recompute auto, 20GiB per rank): the
# breakdown sums to the total; the smallest world it reports fits and the next smaller runnable
# world does not; auto picks the cheapest policy that fits; the FLOP overhead of full recompute is
# the forward of every layer but the last (computed here from the shape).
"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --json > "$tmp/m.json" || { echo "FAIL: plan m"; fail=1; }
W=$(python3 -c "import json; print(json.load(open('$tmp/m.json'))['smallest_world']['world'])")
"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --world "$W" --json > "$tmp/mw.json" || { echo "FAIL: plan --world $W"; fail=1; }
"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --world "$((W / 2))" --json > "$tmp/mh.json" || { echo "FAIL: plan --world $((W / 2))"; fail=1; }
"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --world 1 --memory 1TiB --json > "$tmp/big.json" || { echo "FAIL: plan 1TiB"; fail=1; }
# The world plan names without the prefetch (when smaller) is where the run fits with it off.
WN=$(python3 -c "import json; print(json.load(open('$tmp/m.json'))['smallest_world'].get('without_prefetch', {}).get('world', 0))")
if [ "$WN" != 0 ]; then
  "$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --set parallel.prefetch=false --json > "$tmp/np.json" || { echo "FAIL: plan no prefetch"; fail=1; }
  python3 - "$tmp/np.json" "$WN" "$W" <<'PY3' || { echo "FAIL: smallest world without prefetch"; fail=1; }
import json, sys
p = json.load(open(sys.argv[1])); wn, w = int(sys.argv[2]), int(sys.argv[3])
assert p["smallest_world"]["world"] == wn < w, (p["smallest_world"], wn, w)
assert "without_prefetch" not in p["smallest_world"], p["smallest_world"]
PY3
fi
python3 - "$tmp" "$ROOT/configs/olmo3-7b.json" <<'PY2' || fail=1
import json, sys
d = sys.argv[1]
m, mw, mh, big = (json.load(open(f"{d}/{n}.json")) for n in ("m", "mw", "mh", "big"))
hf = json.load(open(sys.argv[2]))
ok = True
def want(cond, what):
    global ok
    if not cond:
        print("FAIL:", what); ok = False
for p in (m, mw, mh, big):
    want(sum(p["memory_breakdown_bytes"].values()) == p["memory_per_rank_bytes"], "terms sum to the total")
    by = p["memory_per_rank_by_recompute_bytes"]
    want(by["full"] < by["mlp"] < by["none"], f"policies not ordered {by}")
want(m["sharding"] == "zero3" and m["grad_accumulation"] == "sequential" and m["recompute_requested"] == "auto", "recipe mode")
want(m["memory_budget_bytes"] == 20 * 2**30 and m["memory_budget_source"] == "parallel.memory_per_rank", "budget from the config")
W = m["smallest_world"]["world"]
want(W is not None and 1 < W <= 512, f"7B fits 20GiB at some world <= 512 ({W})")
want(mw["fits"] and mw["memory_per_rank_bytes"] <= 20 * 2**30, "fits at the smallest world")
want(mw["memory_per_rank_bytes"] == m["smallest_world"]["memory_per_rank_bytes"], "same total there")
want(not mh["fits"] and mh["recompute"] == "full", "half the smallest world does not fit")
want(big["recompute"] == "none" and big["fits"], "a roomy budget keeps every activation")
# FLOPs of one layer's forward per token, every layer but the last (the recompute of full).
D, I, H, KV = hf["hidden_size"], hf["intermediate_size"], hf["num_attention_heads"], hf["num_key_value_heads"]
hd = D // H; T = 8192; Wn = hf["sliding_window"]
def vis(w): return T * (T + 1) // 2 if (w == 0 or T <= w) else w * (w + 1) // 2 + (T - w) * w
types = hf["layer_types"]
extra = sum(2 * (D * (2 * H * hd + 2 * KV * hd) + 3 * D * I) + 4 * H * hd * vis(Wn if t == "sliding_attention" else 0) / T
            for t in types[:-1])
want(abs(mw["recompute_flops_per_token"] - extra) <= 1e-9 * extra, f"full recompute FLOPs {mw['recompute_flops_per_token']} vs {extra}")
want(abs(mw["recompute_flops_overhead"] - extra / mw["flops_per_token"]) < 1e-12, "overhead ratio")
want(big["recompute_flops_per_token"] == 0, "none costs nothing")
sys.exit(0 if ok else 1)
PY2
"$BIN" plan "$ROOT/configs/olmo3-7b-stage1.yaml" --memory 4GiB > "$tmp/nofit.txt" || { echo "FAIL: plan 4GiB"; fail=1; }
grep -q "smallest world    none: does not fit at any world size up to 512" "$tmp/nofit.txt" \
  || { echo "FAIL: 4GiB does not say it cannot fit"; cat "$tmp/nofit.txt"; fail=1; }
grep -q "DOES NOT FIT" "$tmp/nofit.txt" || { echo "FAIL: 4GiB at world 1 not refused"; fail=1; }

expect_exit2() {  # expect_exit2 <what> <text the error must contain> <args...>
  local what=$1 text=$2; shift 2
  "$BIN" plan "$@" > /dev/null 2> "$tmp/err"
  local rc=$?
  if [ $rc -ne 2 ] || ! grep -q -- "$text" "$tmp/err"; then
    echo "FAIL: $what: exit $rc, stderr: $(cat "$tmp/err")"; fail=1
  fi
}
expect_exit2 "world not dividing the batch" "--world 3" "$ROOT/configs/olmo3-7b-stage1.yaml" --world 3
expect_exit2 "bad --memory" "--memory: '24 gigs'" "$ROOT/configs/olmo3-7b-stage1.yaml" --memory "24 gigs"
expect_exit2 "bad memory_per_rank" "parallel.memory_per_rank" "$ROOT/configs/olmo3-7b-stage1.yaml" --set parallel.memory_per_rank=-3GiB
expect_exit2 "zero1 with sequential on 2 ranks" "--world 2: parallel.sharding zero1 with more than one rank needs train.grad_accumulation: tree" \
  "$ROOT/configs/olmo3-7b-stage1.yaml" --set parallel.sharding=zero1 --world 2
expect_exit2 "unknown key" "optim.learning_rate" "$ROOT/configs/olmo3-7b-stage1.yaml" --set optim.learning_rate=1
expect_exit2 "missing config" "nope.yaml" "$tmp/nope.yaml"
expect_exit2 "yarn factor below 1" "'rope_scaling.factor'" "$ROOT/configs/olmo3-7b-stage2.yaml" \
  --set "model.hf_config=$tmp/7b-yarn.json" --set "model.rope_scaling={rope_type: yarn, factor: 0.5}"
expect_exit2 "unknown rope_type" "'rope_scaling.rope_type'" "$ROOT/configs/olmo3-7b-stage2.yaml" \
  --set "model.rope_scaling={rope_type: ntk, factor: 2}"
exit $fail

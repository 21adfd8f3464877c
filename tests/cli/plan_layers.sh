#!/usr/bin/env bash
# ctest-labels: long
# `replica plan` of the largest layer count replica accepts (65,536) finishes: the memory planner
# walks the layers once, not once per world size and recompute policy it tries (it took minutes).
# The bound is ctest's TIMEOUT for this test (CMakeLists.txt), not a timed check here.
#   usage: plan_layers.sh <replica-binary> <repo-root>
set -u
BIN=$1
ROOT=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init
export OMP_NUM_THREADS=1

# An OLMo-core config (the 7B recipe: global batch 512 instances, so many world sizes are tried)
# with 65,536 small layers, and the same in replica's YAML.
jq '.model.n_layers = 65536 | .model.d_model = 128 | .model.block.feed_forward.hidden_size = 256 |
    .model.block.sequence_mixer.n_heads = 2 | .model.block.sequence_mixer.n_kv_heads = 2 |
    .model.block.sequence_mixer.head_dim = 64' \
  "$ROOT/tests/data/olmo-core/OLMo-3-1025-7B-pretrain-1.sequence_mixer.json" > "$tmp/layers.json"
sed 's/^  num_hidden_layers: 4 /  num_hidden_layers: 65536 /' "$ROOT/configs/demo.yaml" > "$tmp/layers.yaml"
check "the YAML has 65,536 layers" 'grep -q "num_hidden_layers: 65536" "$tmp/layers.yaml"'

for cfg in "$tmp/layers.json" "$tmp/layers.yaml"; do
  "$BIN" plan "$cfg" --json > "$tmp/plan.json" 2> "$tmp/err"; rc=$?
  check "plan $(basename "$cfg") exits 0 (rc $rc: $(head -c 300 "$tmp/err"))" '[ $rc -eq 0 ]'
  check "plan $(basename "$cfg") searched the world sizes" \
    'jq -e ".smallest_world.searched_up_to >= 8 and .params > 0" "$tmp/plan.json" > /dev/null'
  # a budget no world size meets: every world size up to the global batch is planned
  "$BIN" plan "$cfg" --memory 1MiB --json > "$tmp/plan.json" 2> "$tmp/err"; rc=$?
  check "plan $(basename "$cfg") --memory 1MiB exits 0 and fits nowhere (rc $rc)" \
    '[ $rc -eq 0 ] && jq -e ".smallest_world.world == null" "$tmp/plan.json" > /dev/null'
done
cli_finish

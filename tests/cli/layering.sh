#!/usr/bin/env bash
# The library layering of docs/design.md §1: a folder of src/ includes headers only from itself and
# from folders listed before it; and the "never" rules of §1 and §8:
#  - model never includes train (nor anything above it), nor an ops implementation folder;
#  - parallel never spells a model tensor's name (which tensors are matmul weights comes from the
#    layout, model/layer_tensors.h), nor does the plan (run/plan.*: sizes come from the model's
#    functions that allocate them);
#  - run never includes the ops table, the registry or an op: only the config-value headers
#    ops/precision.h and ops/rope_params.h (what compute.precision and RoPE keys parse to);
#  - nothing outside src/ops includes a CPU backend header (ops/cpu/cpu_*backend.h), and no folder
#    but ops names a backend class (backends are chosen by SelectBackend, ops/registry.h);
#  - ops/backend.h includes no implementation header (nothing under ops/<impl>/);
#  - below cli, no folder includes an ops implementation header: the machine (the ISA cap, the
#    settings a run records, the MFU denominators) is the backend's Device (ops/device.h), and the
#    weights' step bracket and its invalidation go through the Backend.
# Usage: layering.sh REPLICA_BINARY SOURCE_DIR (the binary is unused).
set -euo pipefail
src="${2:?source dir}/src"
order=(core tensor io ops model hf tokenizer data checkpoint infer optim run train parallel eval cli)
declare -A rank
for i in "${!order[@]}"; do rank[${order[$i]}]=$i; done
bad=0
for dir in "$src"/*/; do
  d=$(basename "$dir")
  [ -n "${rank[$d]+x}" ] || { echo "layering: src/$d is not in the layer order"; bad=1; continue; }
  while IFS=: read -r file line inc; do
    top=${inc%%/*}
    [ -n "${rank[$top]+x}" ] || continue  # not a folder of src/ (e.g. a file-local header)
    if [ "${rank[$top]}" -gt "${rank[$d]}" ]; then
      echo "layering: ${file#"$src"/}:$line includes $inc ($top is above $d)"
      bad=1
    fi
  done < <(grep -rnoE '^#include "[^"]+"' "$dir" | sed -E 's/#include "([^"]+)"/\1/')
done
never() {  # never <what> <grep -E pattern> <paths...>: any match is a violation
  local what=$1 pat=$2; shift 2
  local hits
  hits=$(grep -rnE "$pat" "$@" 2>/dev/null || true)
  if [ -n "$hits" ]; then
    echo "layering: $what:"; echo "$hits" | sed "s#$src/##"; bad=1
  fi
}
never "model includes train or an ops implementation" '^#include "(train|parallel|eval|cli)/|^#include "ops/[a-z0-9_]+/' "$src/model"
never "parallel or the plan spells a tensor name" '"[^"]*(_proj\.weight|model\.layers|embed_tokens|lm_head|layernorm|norm\.weight)[^"]*"' "$src/parallel" "$src"/run/plan.*
run_ops=$(grep -rnoE '^#include "ops/[^"]+"' "$src/run" | grep -vE '"ops/(precision|rope_params)\.h"' || true)
[ -z "$run_ops" ] || { echo "layering: run includes ops beyond config values:"; echo "$run_ops" | sed "s#$src/##"; bad=1; }
never "a backend chosen by type outside ops" 'cpu_[a-z0-9_]*backend\.h|Cpu[A-Za-z0-9]*Backend|dynamic_cast<const [A-Za-z]*Backend' \
  $(find "$src" -mindepth 1 -maxdepth 1 -type d ! -name ops)
impl=$(grep -rnoE '^#include "ops/[a-z0-9_]+/[^"]+"' $(find "$src" -mindepth 1 -maxdepth 1 -type d ! -name ops ! -name cli) || true)
[ -z "$impl" ] || { echo "layering: an ops implementation header included below cli:"; echo "$impl" | sed "s#$src/##"; bad=1; }
never "ops/backend.h includes an implementation" '^#include "ops/[a-z0-9_]+/' "$src/ops/backend.h" "$src/ops/registry.h" "$src/ops/device.h"
[ "$bad" -eq 0 ] && echo "layering: ok (${#order[@]} layers, never-rules hold)"
exit "$bad"

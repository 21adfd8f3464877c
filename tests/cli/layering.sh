#!/usr/bin/env bash
# The library layering of docs/design.md §1: a folder of src/ includes headers only from itself and
# from folders listed before it. Usage: layering.sh REPLICA_BINARY SOURCE_DIR (the binary is unused).
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
[ "$bad" -eq 0 ] && echo "layering: ok (${#order[@]} layers)"
exit "$bad"

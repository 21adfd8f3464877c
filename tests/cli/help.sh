#!/usr/bin/env bash
# `replica --version` and every subcommand's --help: exit 0, descriptions start in lower case,
# one wording for --json ("... JSON on stdout") and for --threads ("(default: all cores)").
#   usage: help.sh <replica-binary> <repo-root>
set -u
BIN=$1
fail=0
bad() { echo "FAIL: $*"; fail=1; }

v=$("$BIN" --version); rc=$?
[ $rc -eq 0 ] || bad "--version exit $rc"
echo "$v" | grep -Eq '^replica [0-9]+\.[0-9]+\.[0-9]+' || bad "--version printed '$v'"

top=$("$BIN" --help) || bad "--help exit $?"
# Subcommands as CLI11 lists them: "  name   description" after "Subcommands:".
mapfile -t subs < <(echo "$top" | awk '/^Subcommands:/ {on = 1; next} on && NF >= 2 {print $1}')
[ ${#subs[@]} -ge 10 ] || bad "found only ${#subs[@]} subcommands in --help"
check_help() {  # $1: the command words, $2: its --help text
  local cmd=$1 text=$2
  while IFS= read -r line; do
    if echo "$line" | grep -Eq -- '--json( |,|$)'; then
      echo "$line" | grep -q 'JSON on stdout' || bad "'$cmd' --json help: $line"
    fi
    case "$line" in
      *--threads*) echo "$line" | grep -q '(default: all cores)' || bad "'$cmd' --threads help: $line" ;;
    esac
  done <<< "$text"
  # Descriptions of nested subcommands start in lower case.
  echo "$text" | awk '/^Subcommands:/ {on = 1; next} on && NF >= 2 {print}' | while read -r name desc; do
    case "$desc" in [A-Z]*) case "$desc" in OLMo*|HF*|JSON*) ;; *) echo "FAIL: '$cmd $name' description: $desc" ;; esac ;; esac
  done
}
for s in "${subs[@]}"; do
  desc=$(echo "$top" | awk -v s="$s" '/^Subcommands:/ {on = 1; next} on && $1 == s {$1 = ""; print}')
  case "${desc# }" in [A-Z]*) bad "'$s' description starts in upper case: $desc" ;; esac
  text=$("$BIN" "$s" --help 2>&1) || bad "'$s --help' exit $?"
  out=$(check_help "$s" "$text"); [ -z "$out" ] || { echo "$out"; fail=1; }
  mapfile -t nested < <(echo "$text" | awk '/^Subcommands:/ {on = 1; next} on && NF >= 2 {print $1}')
  for n in "${nested[@]}"; do
    ntext=$("$BIN" "$s" "$n" --help 2>&1) || bad "'$s $n --help' exit $?"
    out=$(check_help "$s $n" "$ntext"); [ -z "$out" ] || { echo "$out"; fail=1; }
  done
done
[ $fail -eq 0 ] && echo "help.sh: all checks passed (${#subs[@]} subcommands)"
exit $fail

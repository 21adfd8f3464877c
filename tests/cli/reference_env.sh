#!/usr/bin/env bash
# scripts/reference_env on environments that are missing, half-created, or differ from the lock
# file: each is named and refused (exit 2); a whole one matching the lock is used. Runs on a lock
# of no packages in a temporary cache (no download), with a hand-made package record for the
# version and extra-package cases.
# usage: reference_env.sh REPLICA_BINARY SOURCE_DIR
. "$(dirname "$0")/lib.sh"
SRC=$2
cli_init
command -v python3.11 >/dev/null || { echo "FAIL: python3.11 is not on PATH (Debian 12 has it: python3.11)"; exit 1; }
export REPLICA_REFERENCE_CACHE=$tmp/cache
lock=$tmp/empty.lock
echo "# a lock of no packages" > "$lock"
export REPLICA_REFERENCE_LOCK=$lock
renv() { bash "$SRC/scripts/reference_env" "$@"; }

renv > "$tmp/out" 2> "$tmp/err"; rc=$?
check "missing environment: exit 2" '[ $rc -eq 2 ]'
check "missing environment: names the command that creates it" 'grep -q "does not exist; create it with: scripts/setup --with-reference" "$tmp/err"'

renv create > "$tmp/create.out" 2>&1; rc=$?
check "create on an empty lock: exit 0" '[ $rc -eq 0 ]'
renv > "$tmp/out" 2> "$tmp/err"; rc=$?
py=$(cat "$tmp/out")
check "created environment: used, its python printed" '[ $rc -eq 0 ] && [ -x "$py" ]'
dir=$(dirname "$(dirname "$py")")
check "the directory is keyed by the lock's hash" '[ "$(basename "$dir")" = "reference-$(sha256sum "$lock" | cut -c1-16)" ]'

renv create > "$tmp/again.out" 2>&1
check "create again: reuses it" 'grep -q "reference environment present" "$tmp/again.out"'

# An extra package the lock does not list.
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$site/stray_pkg-1.0.dist-info"
printf 'Metadata-Version: 2.1\nName: stray-pkg\nVersion: 1.0\n' > "$site/stray_pkg-1.0.dist-info/METADATA"
renv > "$tmp/out" 2> "$tmp/err"; rc=$?
check "extra package: exit 2" '[ $rc -eq 2 ]'
check "extra package: named" 'grep -q "stray-pkg==1.0 is installed but not in the lock file" "$tmp/err"'
rm -rf "$site/stray_pkg-1.0.dist-info"

# A half-created environment (the marker is written last; an interrupted install has none).
rm "$dir/complete"
renv > "$tmp/out" 2> "$tmp/err"; rc=$?
check "no marker: exit 2" '[ $rc -eq 2 ]'
check "no marker: called incomplete" 'grep -q "incomplete (an install was interrupted)" "$tmp/err"'
check "no marker: never used (no python printed)" '[ ! -s "$tmp/out" ]'
mkdir -p "$REPLICA_REFERENCE_CACHE/reference-deadbeefdeadbeef/bin"  # another lock's killed install
renv create > "$tmp/recreate.out" 2>&1; rc=$?
check "create over a half-created environment: rebuilt" '[ $rc -eq 0 ] && [ -f "$dir/complete" ] && grep -q "removing the unusable" "$tmp/recreate.out"'
check "create: another lock's half-created environment removed" '[ ! -d "$REPLICA_REFERENCE_CACHE/reference-deadbeefdeadbeef" ]'

# A version other than the lock's, and a pinned package missing: a lock that pins two packages,
# against a directory holding one of them at another version.
lock2=$tmp/two.lock
printf 'pinned-pkg==1.0\nabsent-pkg==3.1\n# data: some-wheel==1.0 pkg/ref.json %s\n' "$(printf x | sha256sum | cut -c1-64)" > "$lock2"
export REPLICA_REFERENCE_LOCK=$lock2
dir2=$REPLICA_REFERENCE_CACHE/reference-$(sha256sum "$lock2" | cut -c1-16)
python3.11 -m venv --without-pip "$dir2"
site2=$("$dir2/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$site2/pinned_pkg-2.0.dist-info"
printf 'Metadata-Version: 2.1\nName: pinned-pkg\nVersion: 2.0\n' > "$site2/pinned_pkg-2.0.dist-info/METADATA"
sha256sum "$lock2" | cut -c1-16 > "$dir2/complete"
renv > "$tmp/out" 2> "$tmp/err"; rc=$?
check "wrong version: exit 2" '[ $rc -eq 2 ]'
check "wrong version: named" 'grep -q "pinned-pkg is 2.0, the lock file says 1.0" "$tmp/err"'
check "missing package: named" 'grep -q "absent-pkg==3.1 is in the lock file but not installed" "$tmp/err"'
check "missing reference data file: named" 'grep -q "data file $dir2/data/ref.json (pkg/ref.json of some-wheel==1.0) is missing" "$tmp/err"'
mkdir -p "$dir2/data" && printf y > "$dir2/data/ref.json"
renv > "$tmp/out" 2> "$tmp/err"
check "altered reference data file: named" 'grep -q "data file $dir2/data/ref.json does not have the lock file" "$tmp/err"'

# make crosscheck without an environment stops at once with the command (exit 2).
mkdir -p "$tmp/build" && : > "$tmp/build/replica" && chmod +x "$tmp/build/replica"
export REPLICA_REFERENCE_CACHE=$tmp/nothing-here
bash "$SRC/scripts/crosscheck" "$tmp/build" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "crosscheck without environment: exit 2" '[ $rc -eq 2 ]'
check "crosscheck without environment: says how to create it" 'grep -q "create it with: scripts/setup --with-reference" "$tmp/err"'
cli_finish

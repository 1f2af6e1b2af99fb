#!/usr/bin/env bash
# Runs every benchmark: the C programs (bench_*) and the scripts (bench-*.sh). Usage:
#   bench/run-all.sh BUILD_DIR [NAME...]
set -euo pipefail
build=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
names=("$@")
want() { [ ${#names[@]} -eq 0 ] && return 0; for n in "${names[@]}"; do [ "$n" = "$1" ] && return 0; done; return 1; }
for prog in "$build"/bench/bench_*; do
    [ -x "$prog" ] || continue
    name=$(basename "$prog")
    want "$name" || continue
    echo "== $name"
    "$prog"
done
for script in "$here"/bench-*.sh; do
    [ -f "$script" ] || continue
    name=$(basename "$script" .sh)
    want "$name" || continue
    echo "== $name"
    TY_BUILD="$build" bash "$script"
done

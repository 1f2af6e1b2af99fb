#!/usr/bin/env bash
# No exported function without a caller: one that nothing calls is code to read, keep and trust
# that does nothing (logcache_read was credited with a speed-up for a year while nothing called
# it). Takes every global function the daemon's, the CLI's and the worker's libraries define
# (nm) and fails for each whose name appears nowhere in the tree's C files but at its definition
# and its one declaration. A caller in a test or a benchmark counts.
#   tests/deadcode.sh BUILD_DIR
cd "$(dirname "$0")/.."
build=${1:?usage: deadcode.sh BUILD_DIR}
# The build's own libraries, not those of trees built inside it (80-valgrind's valgrind-build).
libs=$(ls "$build"/libty_*.a "$build"/worker/libty_worker.a 2>/dev/null)
[ -n "$libs" ] || { echo "FAIL no libty_*.a in $build (build it first)"; exit 1; }
defined=$(nm -g --defined-only $libs 2>/dev/null | awk '$2 == "T" { print $3 }' | sort -u)

# Every identifier of the tree's C sources and headers, with how often it appears.
count() { git ls-files -- "$@" | xargs grep -ohwE '[A-Za-z_][A-Za-z0-9_]*' | sort | uniq -c; }
checked=$(wc -w <<<"$defined")
# Dead: once in the C files (its definition) and at most once in the headers (its declaration).
dead=$(awk 'FNR == 1 { file++ } file == 1 { c[$2] = $1; next } file == 2 { h[$2] = $1; next }
            c[$1] <= 1 && h[$1] <= 1 { print $1 }' <(count '*.c') <(count '*.h') - <<<"$defined")
fails=0
for fn in $dead; do
    echo "FAIL $fn is defined in $(git grep -lw "$fn" -- '*.c' | head -1) but nothing calls it:" \
        "delete it, or call it where it belongs"
    fails=$((fails + 1))
done
echo "$checked functions checked; $((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]

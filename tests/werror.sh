#!/usr/bin/env bash
# Warnings are errors in CI and `make test`, and only there: a plain `make` or cmake configure
# (a packager, a user on a newer compiler) gets warnings without -Werror; TY_WERROR=ON puts it
# on every compile; the Makefile's test builds (the ones CI runs) turn it on.
cd "$(dirname "$0")/.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trainyard-werror.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() {
    if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
# count DIR PATTERN: compile commands of the tree configured in DIR that match PATTERN
count() { jq --arg re "$2" '[.[] | select(.command | test($re))] | length' "$1/compile_commands.json"; }

cmake -S . -B "$tmp/plain" >/dev/null || { echo "FAIL: cannot configure"; exit 1; }
cmake -S . -B "$tmp/werror" -DTY_WERROR=ON >/dev/null || { echo "FAIL: cannot configure"; exit 1; }
total=$(jq length "$tmp/plain/compile_commands.json")
check "a plain configure compiles with -Wall ($total commands)" \
    '[ "$total" -gt 0 ] && [ "$(count "$tmp/plain" " -Wall ")" = "$total" ]'
check "a plain configure has no -Werror" '[ "$(count "$tmp/plain" " -Werror")" = 0 ]'
check "TY_WERROR=ON puts -Werror on every compile" \
    '[ "$(count "$tmp/werror" " -Werror ")" = "$(jq length "$tmp/werror/compile_commands.json")" ]'

# The Makefile: every configure in the test recipe turns it on, the one in build does not.
recipe() { awk -v t="$1:" '$1 == t { on = 1; next } on && !/^\t/ { exit } on' Makefile; }
check "make test configures build-test and build-fuzz with -DTY_WERROR=ON" \
    '[ "$(recipe test | grep -c "cmake -S .*-DTY_WERROR=ON")" = 2 ]'
check "make (build) configures without -DTY_WERROR" \
    'recipe build | grep -q "cmake -S " && ! recipe build | grep -q TY_WERROR'
check "CI runs make test" 'grep -qx "make test" .ci/run'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

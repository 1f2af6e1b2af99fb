#!/usr/bin/env bash
# A test that cannot run here must show as skipped, not passed: it exits 77 and ctest, told so
# by SKIP_RETURN_CODE, reports "Skipped". Checks both halves: every ctest case of the build has
# SKIP_RETURN_CODE 77, and no test script says SKIP and then exits 0 (ty_skip in
# integration/lib.sh is the way to skip).
#   tests/skips.sh BUILD_DIR
cd "$(dirname "$0")/.."
build=${1:?usage: skips.sh BUILD_DIR}
fails=0 checked=0

tests=$(cd "$build" && ctest --show-only=json-v1) || { echo "FAIL ctest cannot list $build"; exit 1; }
while read -r name code; do
    checked=$((checked + 1))
    [ "$code" = 77 ] && continue
    echo "FAIL ctest case $name has SKIP_RETURN_CODE ${code:-unset}: a skip would show as passed or failed"
    fails=$((fails + 1))
done < <(echo "$tests" | jq -r '.tests[] | [.name, ((.properties // [])[] |
    select(.name == "SKIP_RETURN_CODE") | .value | tostring)] | join(" ")')

# A skip message followed within three lines by `exit 0`.
for f in $(git ls-files 'tests/*.sh'); do
    checked=$((checked + 1))
    hit=$(grep -n -A3 'echo "SKIP' "$f" | grep -E '^[0-9]+-\s*exit 0\b')
    [ -z "$hit" ] && continue
    echo "FAIL $f:${hit%%-*} exits 0 after SKIP: exit 77 (ty_skip) so that ctest shows a skip"
    fails=$((fails + 1))
done
echo "$checked checked; $((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]

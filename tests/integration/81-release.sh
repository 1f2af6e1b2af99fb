#!/usr/bin/env bash
# The daemon `make` builds and `make run` starts, optimised and linked with mimalloc, which no
# other test runs (they run the sanitizer build; 80-valgrind, one without mimalloc). A burst of
# concurrent submissions on keep-alive connections is answered and stored in full; kill -9 and a
# restart lose none of it; reads page through the jobs; ranks forked from the daemon run and
# their logs are kept.
# The daemon is the one in build/ (TY_RELEASE_BUILD to test another): `make test` builds it
# before ctest, so this test builds nothing then; run alone, it configures and brings build/ up
# to date the way `make` does, rather than building a third tree of its own.
source "$(dirname "$0")/lib.sh"
REL_BUILD=${TY_RELEASE_BUILD:-$TY_SRC/build}
if ! { { [ -f "$REL_BUILD/CMakeCache.txt" ] ||
    cmake -S "$TY_SRC" -B "$REL_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null; } &&
    cmake --build "$REL_BUILD" -j2 --target trainyard >/dev/null; }; then
    echo "FAIL: cannot build the release daemon in $REL_BUILD" >&2
    exit 1
fi
TRAINYARD="$REL_BUILD/trainyard"
stored() { api GET /metrics | awk '/^trainyard_jobs\{/ {n += $2} END {print n + 0}'; }
ty_start
check_eq "malloc is mimalloc's" mimalloc "$(api GET /version | jq -r .allocator)"

# 32 keep-alive connections submit the benchmark's spec for 3 s.
TY_TOKEN=$TOKEN wrk -t2 -c32 -d3s -s "$TY_SRC/bench/post-job.lua" "$URL/v1/jobs" >"$WORK/wrk.out"
answered=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
check_eq "no submission answered other than 2xx" "non-2xx responses: 0" \
    "$(grep 'non-2xx' "$WORK/wrk.out")"
check "a burst, not a trickle (wrk counted ${answered:-none})" test "${answered:-0}" -ge 300
before=$(stored)
check "every answered submission is stored ($before stored)" test "$before" -ge "${answered:-1}"
check_eq "a page of 50, newest first" "50 true" \
    "$(api GET '/v1/jobs?limit=50' | jq -r '[(.items | length), (.items[0].id > .items[49].id)] | join(" ")')"

ty_kill9
ty_restart
check_eq "kill -9 and a restart lose none" "$before" "$(stored)"

id=$(job ranks 'for i in 1 2 3; do echo "rank $RANK step $i"; done' '"procs_per_node":2')
check "a 2-rank job succeeds" wait_state "$id" succeeded 60
check "its logs are complete" wait_logs_complete "$id"
check_eq "every line kept" 6 "$(api GET "/v1/jobs/$id/logs?format=ndjson" | jq -s length)"
ty_done

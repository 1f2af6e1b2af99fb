#!/usr/bin/env bash
# The store's reads through the API, for one or more builds against copies of one database:
# GET /v1/jobs?limit=50 and GET /v1/jobs/{id}, ROUNDS times interleaved (wrk -t2 -c16, 5 s each),
# so that an old and a new build are compared minutes apart. With --callgrind, each build serves
# 200 list pages and 200 GETs under callgrind instead, and the instructions of the handlers and
# of the store's reads are printed: the figure the machine's noise does not touch.
# Usage: bench/bench-reads.sh [--callgrind] [ROUNDS] BUILD...   (default: 3 rounds of build/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
callgrind=false
[ "${1:-}" = --callgrind ] && callgrind=true && shift
rounds_and_builds "$@"
token=ty_benchadmintoken0123456789abcdefghijk
export TY_TOKEN=$token
seed=$(mktemp -d /tmp/bench-reads.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$seed"' EXIT

build=${builds[0]}
TRAINYARD_ADMIN_TOKEN=$token serve "$seed"
wrk -t2 -c64 -d6s -s "$here/post-job.lua" "$url/v1/jobs" >/dev/null
curl -s -H "Authorization: Bearer $token" "$url/v1/jobs?limit=200" | jq -r '.items[].id' >"$seed/ids"
echo "jobs stored: $(curl -s -H "Authorization: Bearer $token" "$url/metrics" |
    awk '/^trainyard_jobs\{/ {n += $2} END {print n}') (written by $build)"
kill $pid
wait $pid 2>/dev/null || true
pid=""

rate() { awk '/Requests\/sec/ {r = $2} $1 == "99%" {p = $2} END {printf "%6.0f/s p99 %-8s", r, p}'; }

one_run() {
    build=$1
    local work
    work=$(mktemp -d /tmp/bench-reads-run.XXXXXX)
    cp -r "$seed/data" "$work/data"
    TRAINYARD_ADMIN_TOKEN=$token serve "$work"
    local t list get
    t=$(cpu_ticks)
    list=$(wrk -t2 -c16 -d5s --latency -H "Authorization: Bearer $token" "$url/v1/jobs?limit=50" | rate)
    get=$(TY_IDS="$seed/ids" wrk -t2 -c16 -d5s --latency -s "$here/get-jobs.lua" "$url" | rate)
    printf "%-28s list %s get %s steal %s\n" "$build" "$list" "$get" "$(steal_since "$t")"
    kill $pid
    wait $pid 2>/dev/null || true
    pid=""
    rm -rf "$work"
}

one_callgrind() {
    local build=$1 work out
    work=$(mktemp -d /tmp/bench-reads-run.XXXXXX)
    cp -r "$seed/data" "$work/data"
    out="$work/callgrind.out"
    TRAINYARD_ADMIN_TOKEN=$token valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$build/trainyard" serve --listen 127.0.0.1:0 --data-dir "$work/data" --log-level warn \
        >"$work/out" 2>"$work/err" &
    pid=$!
    for _ in $(seq 1 600); do
        url=$(grep -o 'http://[0-9.:]*' "$work/out" 2>/dev/null | head -1 || true)
        [ -n "$url" ] && curl -sf "$url/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    for _ in $(seq 1 200); do
        curl -s -o /dev/null -H "Authorization: Bearer $token" "$url/v1/jobs?limit=50"
    done
    while read -r id; do
        curl -s -o /dev/null -H "Authorization: Bearer $token" "$url/v1/jobs/$id"
    done <"$seed/ids"
    kill $pid
    wait $pid 2>/dev/null || true
    pid=""
    echo "== $build: instructions, 200 list pages of 50 and 200 GETs"
    callgrind_annotate --inclusive=yes "$out" 2>/dev/null |
        grep -E ':(jobs_list|jobs_get|store_job_list|store_job_labels|store_ranks_get) ' || true
    rm -rf "$work"
}

if $callgrind; then
    for b in "${builds[@]}"; do one_callgrind "$b"; done
    exit 0
fi
echo "build                        GET /v1/jobs?limit=50         GET /v1/jobs/{id}            CPU stolen"
for _ in $(seq 1 "$rounds"); do
    for b in "${builds[@]}"; do one_run "$b"; done
done

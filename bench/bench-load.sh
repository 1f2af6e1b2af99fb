#!/usr/bin/env bash
# Load: submissions, log follows and queries at once against one daemon, for LOAD_SECONDS
# (default 180), everything on the same 2 cores:
#   - real jobs: one every 2 s, 2 ranks printing 500 lines each over 20 s, each followed to the
#     end by a client that must receive every line;
#   - a probe job printing its write time every 20 ms, followed by 50 SSE clients
#     (bench_follow: write-to-follower latency);
#   - wrk at fixed rates: POST /v1/jobs (suspended, 640-byte spec), GET /v1/jobs/{id}, list pages
#     (with a state and label selector), log tails, log searches.
# Prints per request kind the rate, p50/p90/p99 and errors; the daemon's RSS, threads and open
# files and the bounded caches every 5 s, and whether memory outside those caches levelled off.
# Exits 1 on any error, lost line or growing memory.
# Usage: bench/bench-load.sh (TY_BUILD defaults to build/; needs wrk, jq, curl)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
build=${TY_BUILD:-$here/../build}
secs=${LOAD_SECONDS:-180}
work=$(mktemp -d /tmp/bench-load.XXXXXX)
token=ty_loadadmintoken0123456789abcdefghijkl
export TY_TOKEN=$token
pid=""
bg=()
finish() {
    for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    pkill -f "trainyard shim --dir $work" 2>/dev/null
    rm -rf "$work"
}
trap finish EXIT
for tool in wrk jq curl; do
    command -v $tool >/dev/null || { echo "bench-load: $tool is not installed" >&2; exit 2; }
done
[ -x "$build/bench/bench_follow" ] || cmake --build "$build" --target bench_follow >/dev/null
[ -x "$build/trainyard" ] || cmake --build "$build" --target trainyard >/dev/null

load0=$(cut -d" " -f1-3 /proc/loadavg)
TRAINYARD_ADMIN_TOKEN=$token serve "$work" --local-slots 64 --max-followers 200 --stop-grace 2s
api() { curl -s -H "Authorization: Bearer $token" "$@"; }
submit() { api -X POST -H 'Content-Type: application/json' -d "$1" "$url/v1/jobs" | jq -r '.id // empty'; }

# A real job: 2 ranks, 500 lines each in bursts of 5 every 0.2 s (few forks), words to search.
EMIT='i=0; while [ $i -lt 500 ]; do for k in 1 2 3 4 5; do i=$((i+1)); echo "step $i loss 0.$((i * 7 % 1000)) lr=0.001 rank $RANK"; done; [ $((i % 100)) = 0 ] && echo "NCCL INFO comm rank $RANK ring $i"; sleep 0.2; done'
EMIT_LINES=$((2 * (500 + 5)))
emit_spec=$(jq -n --arg s "$EMIT" '{name: "load-emit", command: ["sh", "-c", $s], procs_per_node: 2, labels: {team: "load"}}')
follow_job() { # ID: follows a job's log to its end; the line count goes to follows/ID
    local n
    n=$(api -N --max-time 120 "$url/v1/jobs/$1/logs?follow=true" | grep -c '^\[rank ')
    echo "$n" >"$work/follows/$1"
}
mkdir -p "$work/follows"
followers=()
: >"$work/jobs"
start_emit() {
    local id
    id=$(submit "$emit_spec")
    if [ -n "$id" ]; then
        echo "$id" >>"$work/jobs"
        follow_job "$id" &
        followers+=($!)
    else
        echo x >>"$work/submit-errors"
    fi
}
for _ in 1 2 3 4 5 6 7 8; do start_emit; done
sleep 3
cp "$work/jobs" "$work/ids"

# The follow-latency probe and its 50 followers.
probe_lines=$((secs * 1000 / 20))
PROBE="sleep 1; i=0; while [ \$i -lt $probe_lines ]; do i=\$((i+1)); echo \"t=\$(date +%s%N)\"; sleep 0.02; done"
probe=$(submit "$(jq -n --arg s "$PROBE" '{name: "load-probe", command: ["sh", "-c", $s]}')")
"$build/bench/bench_follow" "$url" "$probe" 50 "$probe_lines" >"$work/follow-probe" 2>&1 &
bg+=($!)
follow_pid=$!

# RSS, threads, open files and the bounded caches (SQLite's heap, the log line cache) every 5 s.
(
    while kill -0 "$pid" 2>/dev/null; do
        rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
        thr=$(awk '/Threads/ {print $2}' /proc/$pid/status 2>/dev/null)
        fds=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
        caches=$(api "$url/metrics" | awk '/^trainyard_sqlite_memory_bytes/ {s = $2} /^trainyard_log_cache_bytes/ {c = $2} END {print s + 0, c + 0}')
        echo "$(date +%s) ${rss:-0} ${thr:-0} $fds $caches"
        sleep 5
    done
) >"$work/rss" &
bg+=($!)

# The wrk load, one process per kind: KIND CONNECTIONS RATE-PER-CONNECTION.
run_wrk() {
    TY_KIND=$1 TY_RATE=$3 TY_IDS="$work/ids" wrk -t1 -c"$2" -d"${secs}s" --timeout 10s --latency \
        -s "$here/load.lua" "$url" >"$work/wrk-$1" 2>&1
}
run_wrk submit 2 50 &
w1=$!
run_wrk get 4 50 &
w2=$!
run_wrk list 2 25 &
w3=$!
run_wrk logs 2 25 &
w4=$!
run_wrk search 2 10 &
w5=$!
t_end=$(($(date +%s) + secs))
while [ "$(date +%s)" -lt $((t_end - 20)) ]; do
    start_emit
    sleep 2
done
wait $w1 $w2 $w3 $w4 $w5
wait "$follow_pid" 2>/dev/null

# Every real job must finish, and every follower and the store must have every line.
for _ in $(seq 1 90); do
    left=$(api "$url/v1/jobs?state=queued,starting,running&limit=1000" | jq '[.items[] | select(.name == "load-emit")] | length')
    [ "$left" = 0 ] && break
    sleep 1
done
wait "${followers[@]}"
total=0 ok=0 followed=0 stored_ok=0
while read -r id; do
    total=$((total + 1))
    st=$(api "$url/v1/jobs/$id" | jq -r .state)
    [ "$st" = succeeded ] && ok=$((ok + 1))
    [ "$(cat "$work/follows/$id" 2>/dev/null)" = "$EMIT_LINES" ] && followed=$((followed + 1))
    n=$(api "$url/v1/jobs/$id/logs?format=ndjson&limit=100000" | wc -l)
    [ "$n" = "$EMIT_LINES" ] && stored_ok=$((stored_ok + 1))
done <"$work/jobs"

errors=0
echo "== load: ${secs} s, $(nproc) cores shared by the daemon, wrk, curl followers and the ranks;" \
    "load average at start $load0, at end $(cut -d" " -f1-3 /proc/loadavg)"
printf '%-8s %8s %9s %9s %9s %9s %8s\n' kind req/s p50 p90 p99 max errors
for k in submit get list logs search; do
    f="$work/wrk-$k"
    rate=$(awk '/Requests\/sec/ {print $2}' "$f")
    p50=$(awk '$1 == "50%" {print $2}' "$f")
    p90=$(awk '$1 == "90%" {print $2}' "$f")
    p99=$(awk '$1 == "99%" {print $2}' "$f")
    max=$(awk '$1 == "Latency" {print $4}' "$f")
    bad=$(awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' "$f")
    errors=$((errors + bad))
    printf '%-8s %8s %9s %9s %9s %9s %8s\n' "$k" "$rate" "$p50" "$p90" "$p99" "$max" "$bad"
done
sed 's/^/follow probe: /' "$work/follow-probe"
grep -q "followers that got every line: 50" "$work/follow-probe" || errors=$((errors + 1))
submit_errors=0
[ -f "$work/submit-errors" ] && submit_errors=$(wc -l <"$work/submit-errors")
echo "real jobs: $total submitted ($submit_errors submissions failed), $ok succeeded," \
    "$followed followed to the end with all $EMIT_LINES lines, $stored_ok with all lines stored"
[ "$ok" = "$total" ] && [ "$followed" = "$total" ] && [ "$stored_ok" = "$total" ] &&
    [ "$submit_errors" = 0 ] || errors=$((errors + 1))
jobs_stored=$(api "$url/metrics" | awk '/^trainyard_jobs\{/ {n += $2} END {print n}')
lines=$(api "$url/metrics" | awk '/^trainyard_log_lines_ingested_total/ {print $2}')
echo "jobs stored at the end: $jobs_stored; log lines ingested: $lines; daemon log errors:" \
    "$(grep -c ' error ' "$work/err")"

# Memory, from the samples taken while the load ran. RSS grows while the bounded caches fill
# (SQLite's page caches, at most cache_size per connection; the log line cache, at most 64 MiB),
# so the verdict is on the rest: RSS minus those caches must level off (the last third's peak
# within 10%, or 4 MiB, of the middle third's). The checks after the load read every job's whole
# log: the RSS after them is shown apart.
awk -v secs="$secs" '
    NR == 1 { t0 = $1 }
    { after = $2 / 1024 }
    $1 - t0 > secs + 2 { next }
    {
        n++; tt[n] = $1 - t0; rss[n] = $2 / 1024; thr[n] = $3; fds[n] = $4
        sq[n] = $5 / 1048576; lc[n] = $6 / 1048576; rest[n] = rss[n] - sq[n] - lc[n]
    }
    END {
        for (i = 1; i <= n; i++) {
            third = tt[i] < secs / 3 ? 1 : tt[i] < 2 * secs / 3 ? 2 : 3
            if (rss[i] > peak[third]) peak[third] = rss[i]
            if (rest[i] > rpeak[third]) rpeak[third] = rest[i]
        }
        printf "RSS (MiB) every 5 s:"
        for (i = 1; i <= n; i++) printf " %.0f", rss[i]
        printf "\n  of which SQLite:  "
        for (i = 1; i <= n; i++) printf " %.0f", sq[i]
        printf "\n  of which log cache:"
        for (i = 1; i <= n; i++) printf " %.0f", lc[i]
        printf "\nRSS peak by third of the run: %.1f / %.1f / %.1f MiB; without the caches: %.1f / %.1f / %.1f MiB\n",
            peak[1], peak[2], peak[3], rpeak[1], rpeak[2], rpeak[3]
        printf "threads %d..%d; open files %d at start, %d at the end of the load\n", thr[1], thr[n], fds[1], fds[n]
        printf "RSS after reading every job\047s whole log: %.1f MiB\n", after
        grow = rpeak[3] - rpeak[2]
        plateau = grow <= 4 || grow <= 0.10 * rpeak[2]
        printf "memory outside the bounded caches levelled off: %s\n", plateau ? "yes" : "NO (still growing)"
        exit plateau ? 0 : 1
    }' "$work/rss" || errors=$((errors + 1))
[ "$(grep -c 'ERROR: AddressSanitizer\|runtime error' "$work/err")" = 0 ] || errors=$((errors + 1))
if [ "$errors" -ne 0 ]; then
    echo "bench-load: FAILED ($errors problems)" >&2
    tail -20 "$work/err" >&2
    exit 1
fi
echo "bench-load: no errors"

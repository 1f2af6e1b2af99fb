#!/usr/bin/env bash
# What the local sandbox costs a start: the time from submitting a 16-rank job until every rank
# runs (state running), and the daemon's CPU per rank start, with ranks sandboxed (the default
# where the daemon is root) and with --local-sandbox=off, in interleaved rounds on one build.
#
#   bench/bench-rank-start.sh [ROUNDS (3)] [BUILD (build/)]     # as root, for the sandbox
set -eu
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rounds_and_builds "$@"
build=${builds[0]}
ranks=16
work=$(mktemp -d)
trap 'kill ${pid:-} 2>/dev/null; rm -rf "$work"' EXIT
# The daemon's CPU time in ns, every thread (schedstat: ns on the CPU; /proc/PID/stat's ticks
# are 10 ms, too coarse for a few ms).
cpu_of() { cat /proc/"$1"/task/*/schedstat | awk '{ns += $1} END {print ns}'; }
one() { # one MODE: prints "seconds cpu_ms_per_rank"
    local mode=$1 dir=$work/$1-$RANDOM
    mkdir -p "$dir"
    serve "$dir" --auth=off --local-slots $ranks --local-sandbox "$mode"
    local c0 t0 id state
    c0=$(cpu_of "$pid")
    t0=$(date +%s%N)
    id=$(curl -s -X POST "$url/v1/jobs" -H 'Content-Type: application/json' \
        -d "{\"name\":\"start\",\"command\":[\"sleep\",\"30\"],\"procs_per_node\":$ranks}" | jq -r .id)
    for _ in $(seq 1 3000); do
        state=$(curl -s "$url/v1/jobs/$id" | jq -r .state)
        [ "$state" = running ] && break
        sleep 0.005
    done
    local t1 c1
    t1=$(date +%s%N)
    c1=$(cpu_of "$pid")
    curl -s -X POST "$url/v1/jobs/$id/cancel" >/dev/null
    sleep 0.5
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    awk -v t="$((t1 - t0))" -v c="$((c1 - c0))" -v r=$ranks \
        'BEGIN { printf "%.3f s to every rank running, %.2f ms of daemon CPU per rank start", t / 1e9, c / 1e6 / r }'
}
t=$(cpu_ticks)
for ((i = 1; i <= rounds; i++)); do
    for mode in auto off; do
        echo "round $i, sandbox $mode: $(one "$mode")"
    done
done
echo "steal $(steal_since "$t")"

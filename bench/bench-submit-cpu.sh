#!/usr/bin/env bash
# Daemon CPU per durable submission, by thread, for one or more builds run in turn (ROUNDS times,
# interleaved), so that builds are compared within minutes of each other: on a shared machine
# absolute rates move 30% between runs, same-round ratios do not.
# Usage: bench/bench-submit-cpu.sh [ROUNDS] BUILD_DIR...   (default: 3 rounds of $TY_BUILD or build/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rounds_and_builds "$@"
token=ty_benchadmintoken0123456789abcdefghijk
export TY_TOKEN=$token

# cpu_by_thread PID: "thread-name ticks" per thread name
cpu_by_thread() {
    for t in /proc/"$1"/task/*; do
        echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
    done | awk '{a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}

one_run() {
    local build=$1 work pid url
    work=$(mktemp -d /tmp/bench-submit-cpu.XXXXXX)
    TRAINYARD_ADMIN_TOKEN=$token serve "$work"
    wrk -t2 -c64 -d2s -s "$here/post-job.lua" "$url/v1/jobs" >/dev/null # warm-up
    cpu_by_thread $pid >"$work/before"
    local ticks
    ticks=$(cpu_ticks)
    wrk -t2 -c64 -d8s --latency -s "$here/post-job.lua" "$url/v1/jobs" >"$work/wrk"
    cpu_by_thread $pid >"$work/after"
    local n rate p99 hz steal
    steal=$(steal_since "$ticks")
    n=$(awk '/requests in/ {print $1}' "$work/wrk")
    rate=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$work/wrk")
    p99=$(awk '$1 == "99%" {print $2}' "$work/wrk")
    hz=$(getconf CLK_TCK)
    join "$work/before" "$work/after" | awk -v n="$n" -v hz="$hz" -v rate="$rate" -v p99="$p99" \
        -v b="$build" -v steal="$steal" '{us = ($3 - $2) * 1e6 / hz / n; tot += us; if (us >= 1) s = s sprintf(" %s %.0f", $1, us)}
        END {printf "%-28s %6d/s p99 %-8s %5.0f us/submission (%s) steal %s\n", b, rate, p99, tot, substr(s, 2), steal}'
    kill $pid
    wait $pid 2>/dev/null || true
    rm -rf "$work"
}

echo "build                        submissions  p99  daemon CPU per submission (by thread, us), CPU stolen by the hypervisor"
for _ in $(seq 1 "$rounds"); do
    for b in "${builds[@]}"; do
        one_run "$b"
    done
done

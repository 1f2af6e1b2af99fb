#!/usr/bin/env bash
# Start-up of trainyard-worker: wall time of `version`, of `run -- true`, and from exec to the
# first logged step of a single-rank `train`, plus the peak RSS at that step; median of N runs.
# Usage: TY_BUILD=build bench/bench-worker-startup.sh [OTHER_BINARY...]
# Other binaries (e.g. one built from an older commit) are measured the same way, for comparison.
set -u
build=${TY_BUILD:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-10}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
wall_ms() { # command... -> ms
    local s
    s=$(date +%s%N)
    "$@" > /dev/null 2>&1
    echo $((($(date +%s%N) - s) / 1000000))
}
first_step() { # binary -> "ms hwm_kb"
    local s e line pid hwm
    s=$(date +%s%N)
    coproc T { exec "$1" train --steps 100000 --log-every 1 --data "$src/examples/corpus.txt" 2> /dev/null; }
    pid=$T_PID
    read -r line <&"${T[0]}"
    e=$(date +%s%N)
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid"
    echo "$(((e - s) / 1000000)) $hwm"
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); median of $N runs"
printf '%-40s %10s %10s %14s %12s\n' binary version "run true" "train 1st step" "train RSS"
for w in "$build/trainyard-worker" "$@"; do
    v=$(for _ in $(seq "$N"); do wall_ms "$w" version; done | median)
    r=$(for _ in $(seq "$N"); do wall_ms "$w" run -- true; done | median)
    for _ in $(seq "$N"); do first_step "$w"; done > /tmp/ty-bench-startup.$$
    t=$(awk '{ print $1 }' /tmp/ty-bench-startup.$$ | median)
    m=$(awk '{ print $2 }' /tmp/ty-bench-startup.$$ | median)
    rm -f /tmp/ty-bench-startup.$$
    printf '%-40s %7s ms %7s ms %11s ms %8s MiB\n' "$w" "$v" "$r" "$t" $((m / 1024))
done

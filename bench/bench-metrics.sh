#!/usr/bin/env bash
# The cost of a Prometheus scrape (GET /metrics) with many jobs: 10,000 jobs stored (suspended)
# and 100 running, each with a step, a loss and a throughput (6 per-job families), and the
# latency histogram filled for the routes a client uses. Prints the body size and the latency
# of 300 scrapes one after another (curl, keep-alive) and the daemon's CPU time per scrape, per
# build, builds interleaved for ROUNDS rounds so that an old and a new build are compared minutes
# apart. The CPU figure moves less than the latencies on a busy machine.
# Usage: bench/bench-metrics.sh [ROUNDS] BUILD_DIR...   (default: 3 rounds of $TY_BUILD or build/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rounds=3
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    rounds=$1
    shift
fi
builds=("${@:-${TY_BUILD:-$here/../build}}")
token=ty_benchadmintoken0123456789abcdefghijk
export TY_TOKEN=$token
STORED=${STORED:-10000}
RUNNING=${RUNNING:-100}
SCRAPES=${SCRAPES:-300}
pid=""
work=""
trap '[ -n "$pid" ] && stop' EXIT

api() { curl -s -H "Authorization: Bearer $token" "$@"; }
stored() { api "$url/metrics" | awk '/^trainyard_jobs\{/ {n += $2} END {print n + 0}'; }

populate() {
    while [ "$(stored)" -lt "$STORED" ]; do
        wrk -t2 -c16 -d1s -s "$here/post-job.lua" "$url/v1/jobs" >/dev/null
    done
    local cmd
    for i in $(seq 1 "$RUNNING"); do
        cmd="echo step=$i loss=1.25 tokens_per_sec=900; exec sleep 600"
        api -X POST "$url/v1/jobs" -H 'Content-Type: application/json' \
            -d "{\"name\":\"m-$i\",\"command\":[\"sh\",\"-c\",\"$cmd\"]}" | jq -r .id >>"$work/running"
    done
    # Until every running job's step has reached the health registry.
    for _ in $(seq 1 300); do
        [ "$(api "$url/metrics" | grep -c '^trainyard_job_step{')" -ge "$RUNNING" ] && break
        sleep 0.1
    done
    api "$url/v1/jobs?limit=10" >/dev/null
    api "$url/v1/jobs/nosuchjob" >/dev/null
    api "$url/healthz" >/dev/null
}

# CPU ticks (user + system) the daemon has used.
ticks_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# One daemon of build $1: populated, then SCRAPES scrapes; prints "bytes p50 p90 p99 mean cpu":
# latencies in ms, and the daemon's CPU per scrape in ms.
one_run() {
    build=$1
    work=$(mktemp -d /tmp/bench-metrics.XXXXXX)
    : >"$work/running"
    TRAINYARD_ADMIN_TOKEN=$token serve "$work" --local-slots $((RUNNING + 4))
    populate
    local n
    n=$(api "$url/metrics" | wc -c)
    for _ in $(seq 1 20); do api -o /dev/null "$url/metrics"; done # warm-up
    local urls=() t0
    for _ in $(seq 1 "$SCRAPES"); do urls+=(-o /dev/null "$url/metrics"); done
    t0=$(ticks_of $pid)
    api -w "%{time_total}\n" "${urls[@]}" >"$work/times"
    local cpu_ms=$((($(ticks_of $pid) - t0) * 1000 / $(getconf CLK_TCK)))
    sort -n "$work/times" | awk -v n="$n" -v cpu="$cpu_ms" '
        { t[NR] = $1 * 1000; s += $1 * 1000 }
        END {
            printf "%d %.2f %.2f %.2f %.2f %.2f\n", n, t[int(NR * .5)], t[int(NR * .9)],
                t[int(NR * .99)], s / NR, cpu / NR
        }'
    stop
}

# Cancels the running jobs (their ranks would outlive the daemon), then stops it.
stop() {
    while read -r id; do api -X POST "$url/v1/jobs/$id/cancel" >/dev/null; done <"$work/running"
    for _ in $(seq 1 100); do
        [ "$(api "$url/metrics" | awk '$1 == "trainyard_local_slots_used" {print $2}')" = 0 ] && break
        sleep 0.1
    done
    kill $pid
    wait $pid 2>/dev/null || true
    pid=""
    rm -rf "$work"
    work=""
}

echo "GET /metrics: $STORED jobs stored, $RUNNING running; $SCRAPES scrapes in a row, keep-alive"
for r in $(seq 1 "$rounds"); do
    for b in "${builds[@]}"; do
        ticks=$(cpu_ticks)
        one_run "$b" >/tmp/bench-metrics.$$
        read -r bytes p50 p90 p99 mean cpu </tmp/bench-metrics.$$
        rm -f /tmp/bench-metrics.$$
        printf "round %d %-28s %6d bytes  p50 %5.2f  p90 %5.2f  p99 %6.2f  mean %5.2f ms" \
            "$r" "$b" "$bytes" "$p50" "$p90" "$p99" "$mean"
        printf "  daemon CPU %4.2f ms/scrape  (steal %s)\n" "$cpu" "$(steal_since "$ticks")"
    done
done

#!/usr/bin/env bash
# Durable submissions per second (keep-alive clients), GET and list latency with 100,000 jobs
# stored, memory when idle and with 100,000 jobs, start-up time. Usage: bench/bench-submit.sh
# (TY_BUILD defaults to build/; wrk from Debian is the load generator, on the same 2 cores).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
build=${TY_BUILD:-$here/../build}
work=$(mktemp -d /tmp/bench-submit.XXXXXX)
token=ty_benchadmintoken0123456789abcdefghijk
export TY_TOKEN=$token
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
start() {
    TRAINYARD_ADMIN_TOKEN=$token serve "$work"
}
rss() { awk '/VmRSS/ {printf "%.1f MiB", $2 / 1024}' /proc/$pid/status; }
count() { curl -s -H "Authorization: Bearer $token" "$url/metrics" | awk '/^trainyard_jobs\{/ {n += $2} END {print n}'; }

t0=$(date +%s%N); start; t1=$(date +%s%N)
echo "start-up (empty database): $(((t1 - t0) / 1000000)) ms; RSS idle: $(rss)"
echo "-- POST /v1/jobs, 640-byte spec, 64 keep-alive connections, 10 s (wrk -t2 -c64)"
ticks=$(cpu_ticks)
wrk -t2 -c64 -d10s --latency -s "$here/post-job.lua" "$url/v1/jobs" >"$work/wrk"
echo "CPU stolen by the hypervisor meanwhile: $(steal_since "$ticks")"
grep -E 'Requests/sec|50%|90%|99%|non-2xx|requests in' "$work/wrk"
answered=$(awk '/requests in/ {print $1}' "$work/wrk")
echo "jobs stored: $(count) (wrk counted $answered answers; in-flight requests at the end can add up to 64)"
echo "-- filling to 100,000 jobs"
while [ "$(count)" -lt 100000 ]; do
    wrk -t2 -c64 -d5s -s "$here/post-job.lua" "$url/v1/jobs" >/dev/null
done
echo "jobs stored: $(count); RSS: $(rss)"
curl -s -H "Authorization: Bearer $token" "$url/v1/jobs?limit=1000" | jq -r '.items[].id' >"$work/ids"
echo "-- GET /v1/jobs/{id}, random ids, 10 s"
TY_IDS="$work/ids" wrk -t2 -c16 -d10s --latency -s "$here/get-jobs.lua" "$url" | grep -E 'Requests/sec|50%|90%|99%'
echo "-- GET /v1/jobs?limit=50 (newest page), 10 s"
wrk -t2 -c16 -d10s --latency -H "Authorization: Bearer $token" "$url/v1/jobs?limit=50" | grep -E 'Requests/sec|50%|90%|99%'
echo "-- GET /v1/jobs?state=queued&selector=team%3Dnlp&limit=50, 10 s"
wrk -t2 -c16 -d10s --latency -H "Authorization: Bearer $token" "$url/v1/jobs?state=queued&selector=team%3Dnlp&limit=50" | grep -E 'Requests/sec|50%|99%'
echo "RSS with $(count) jobs after the reads: $(rss)"
port=${url##*:}
kill $pid; wait $pid 2>/dev/null || true
t0=$(date +%s%N); start; t1=$(date +%s%N)
echo "start-up with $(count) jobs: $(((t1 - t0) / 1000000)) ms; RSS after start: $(rss)"
du -sh "$work/data" | awk '{print "database size: " $1}'

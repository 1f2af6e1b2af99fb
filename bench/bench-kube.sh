#!/usr/bin/env bash
# The Kubernetes executor at scale, against the test API server (tests/kube/testserver,
# 200 simulated nodes): JOBS PyTorchJobs of 8 pods each submitted at once, every pod printing
# LINES lines, one every INTERVAL_MS. Prints: time from submission to object created (p50,
# p99), API requests per job-minute (all of them: creates, watches, log streams), daemon CPU
# and memory, and the log lines per second collected across all pods.
# Usage: bench/bench-kube.sh   (TY_BUILD defaults to build/; env JOBS, PODS, LINES, INTERVAL_MS,
# HISTORY: the API server's watch history in events, like the minutes kube-apiserver keeps;
# EXTRA: more `trainyard serve` flags)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
build=${TY_BUILD:-$here/../build}
jobs=${JOBS:-1000}
pods=${PODS:-8}
lines=${LINES:-60}
interval=${INTERVAL_MS:-1000}
history=${HISTORY:-100000}
work=$(mktemp -d /tmp/bench-kube.XXXXXX)
token=ty_benchadmintoken0123456789abcdefghijk
pid="" kpid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -n "$kpid" ] && kill $kpid 2>/dev/null; rm -rf "$work"' EXIT

"$build/tests/kube/testserver" --port 0 --nodes 200 --history "$history" --kubeconfig "$work/kc" \
    >"$work/kurl" 2>"$work/kerr" &
kpid=$!
for _ in $(seq 1 200); do [ -s "$work/kurl" ] && break; sleep 0.05; done
kurl=$(head -1 "$work/kurl")
TRAINYARD_ADMIN_TOKEN=$token serve "$work" --executor kubernetes --kubeconfig "$work/kc" ${EXTRA:-}
api() { curl -s -H "Authorization: Bearer $token" "$@"; }
metric() { api "$url/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
kreqs() { curl -s "$kurl/_test/state" | jq .requests; }
cpu_ticks() { awk '{print $14 + $15}' /proc/$pid/stat; }
hz=$(getconf CLK_TCK)
sleep 1

spec=$(jq -nc --argjson n "$pods" --arg l "$lines" --arg i "$interval" \
    '{name:"bench",image:"nvcr.io/nvidia/pytorch:24.10-py3",command:["torchrun","train.py"],nodes:$n,
      labels:{team:"bench"},kubernetes:{annotations:{"testserver.trainyard.io/steps":$l,
      "testserver.trainyard.io/line-interval-ms":$i}}}')
for _ in $(seq 1 "$jobs"); do
    printf 'next\nurl = "%s/v1/jobs"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata = %s\noutput = /dev/null\n' \
        "$url" "$token" "$(jq -Rs . <<<"$spec")"
done >"$work/curl.cfg"
echo "-- $jobs jobs x $pods pods, $lines lines per pod every ${interval} ms; 200 simulated nodes; history $history"
k0=$(kreqs); c0=$(cpu_ticks); l0=$(metric trainyard_log_lines_ingested_total); t0=$(date +%s%N)
curl -s --parallel --parallel-max 16 -K "$work/curl.cfg" 2>/dev/null
t1=$(date +%s%N)
echo "submitted in $(((t1 - t0) / 1000000)) ms"
total=$((jobs * pods * (lines + 2)))
peak_rss=0 done_at=0
while :; do
    n=$(api "$url/metrics" | awk '/^trainyard_jobs\{state="(succeeded|failed)"\}/ {s += $2} END {print s + 0}')
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
    [ "$rss" -gt "$peak_rss" ] && peak_rss=$rss
    stored=$(metric trainyard_log_lines_ingested_total)
    if [ "$n" -ge "$jobs" ] && [ "$done_at" = 0 ]; then done_at=$(date +%s%N); fi
    [ "$done_at" != 0 ] && [ "$stored" -ge "$total" ] && break
    [ $(( ($(date +%s%N) - t0) / 1000000000 )) -gt 900 ] && { echo "gave up after 900 s"; break; }
    sleep 1
done
t2=$(date +%s%N)
k1=$(kreqs); c1=$(cpu_ticks); l1=$(metric trainyard_log_lines_ingested_total)
secs=$(awk -v a="$t0" -v b="$t2" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
jobsecs=$(awk -v a="$t0" -v b="$done_at" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
echo "all jobs ended after ${jobsecs} s; every line stored after ${secs} s"
echo "-- time from submission to object created (accepted -> Created event), $jobs jobs"
api "$url/v1/jobs?limit=1000&selector=team%3Dbench" | jq -r '.items[].id' | head -n "$jobs" >"$work/ids"
while read -r id; do
    api "$url/v1/jobs/$id/events?limit=20" |
        jq -r '[.items[]|select(.type=="accepted" or (.reason=="Created" and .source=="trainyard"))|.time]|select(length==2)|.[]' |
        paste - - | awk '{
            split($1, a, /[T:Z]/); split($2, b, /[T:Z]/)
            print ((b[2]*3600 + b[3]*60 + b[4]) - (a[2]*3600 + a[3]*60 + a[4])) * 1000 }'
done <"$work/ids" | sort -n >"$work/lat"
awk '{v[NR] = $1} END {printf "p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d jobs)\n", v[int(NR*0.5)+1], v[int(NR*0.99)], v[NR], NR}' "$work/lat"
dk=$((k1 - k0))
echo "-- API requests (test server's count): $dk in ${secs} s for $jobs jobs"
awk -v r="$dk" -v j="$jobs" -v s="$jobsecs" 'BEGIN {printf "requests per job: %.1f; per job-minute of running: %.1f\n", r / j, r / (j * s / 60)}'
api "$url/metrics" | grep '^trainyard_kube_requests_total' | sed 's/trainyard_kube_requests_total/  /'
api "$url/metrics" | grep -E '^trainyard_kube_(watch_restarts_total|reconcile_lag|create_seconds)' | sed 's/trainyard_kube_/  /'
echo "-- daemon"
awk -v c="$((c1 - c0))" -v hz="$hz" -v s="$secs" 'BEGIN {printf "CPU: %.1f s over %.1f s (%.0f%% of one core)\n", c / hz, s, 100 * c / hz / s}'
echo "Kubernetes loop thread busy $(metric trainyard_kube_loop_busy_seconds_total) s, of which handing lines to the log pipeline $(metric trainyard_kube_log_push_seconds_total) s"
echo "RSS peak $((peak_rss / 1024)) MiB; now $(awk '/VmRSS/ {printf "%d", $2 / 1024}' /proc/$pid/status) MiB; VmHWM $(awk '/VmHWM/ {printf "%d", $2 / 1024}' /proc/$pid/status) MiB"
echo "-- logs: $((l1 - l0)) lines stored of $total printed"
awk -v n="$((l1 - l0))" -v s="$secs" -v j="$jobsecs" 'BEGIN {printf "%.0f lines/s over the whole run (%.0f lines/s while jobs ran)\n", n / s, n / j}'
echo "log streams open at the end: $(metric trainyard_kube_log_streams); duplicates dropped: $(metric trainyard_kube_log_duplicates_total)"

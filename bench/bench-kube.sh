#!/usr/bin/env bash
# The Kubernetes executor at scale, against a real control plane (tests/kube/cluster/up.sh:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler 1.20) with kubesim's NODES
# simulated nodes, kubelets and Training Operator acting through it, and the daemon as deploy/'s
# ServiceAccount. JOBS PyTorchJobs of PODS pods each are submitted at once, every pod printing
# LINES lines, one every INTERVAL_MS. Prints: submission to object created (p50, p99), API
# requests per job and per job-minute, daemon CPU and RSS with every pod followed, the log lines
# stored, the HTTP versions and connections used; then the time from a rank's failure (as the
# kubelet reports it) to every other pod of its job deleted; and the control plane's own CPU
# and RSS in the same runs.
# Usage: bench/bench-kube.sh   (TY_BUILD defaults to build/; env JOBS, PODS, LINES,
# INTERVAL_MS, NODES, EXTRA: more `trainyard serve` flags, REAPS: failure runs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${TY_BUILD:-$here/../build}
jobs=${JOBS:-1000}
pods=${PODS:-8}
lines=${LINES:-600}
interval=${INTERVAL_MS:-1000}
nodes=${NODES:-64}
reaps=${REAPS:-5}
work=$(mktemp -d /tmp/bench-kube.XXXXXX)
token=ty_benchadmintoken0123456789abcdefghijk
pid="" spid=""
finish() {
    # set -e stays on in here: a kill of a process already gone (a crashed daemon) must not end
    # the clean-up before the control plane is down
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null || true
    "$src/tests/kube/cluster/down.sh" "$work/cluster"
    [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap finish EXIT

t_up=$(date +%s)
"$src/tests/kube/cluster/up.sh" "$work/cluster" 2>"$work/up.err" || { cat "$work/up.err"; exit 1; }
source "$work/cluster/env"
"$build/tests/kube/kubesim" --kubeconfig "$KUBE_SIM" --pki "$KUBE_PKI" --nodes "$nodes" \
    >"$work/ksim" 2>"$work/ksim.err" &
spid=$!
for _ in $(seq 1 1200); do [ -s "$work/ksim" ] && break; sleep 0.1; done
[ -s "$work/ksim" ] || { cat "$work/ksim.err"; exit 1; }
echo "-- control plane and $nodes kubesim nodes up in $(($(date +%s) - t_up)) s"
TRAINYARD_ADMIN_TOKEN=$token serve "$work" --executor kubernetes --kubeconfig "$KUBE_DAEMON" \
    --kube-log-streams 100000 ${EXTRA:-}
api() { curl -s -H "Authorization: Bearer $token" "$@"; }
metric() { api "$url/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
requests() { api "$url/metrics" | awk '/^trainyard_kube_requests_total/ {s += $2} END {print s + 0}'; }
hz=$(getconf CLK_TCK)
# ticks PID: user + system CPU ticks; rss PID: resident KiB
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
declare -A procs
while read -r name p; do procs[$name]=$p; done <"$work/cluster/pids"
procs[kubesim]=$spid
procs[trainyard]=$pid
declare -A c0 peak
for n in "${!procs[@]}"; do c0[$n]=$(ticks "${procs[$n]}"); peak[$n]=0; done
sample() {
    local n r
    for n in "${!procs[@]}"; do
        r=$(rss "${procs[$n]}")
        if [ "$r" -gt "${peak[$n]}" ]; then peak[$n]=$r; fi
    done
}

spec=$(jq -nc --argjson n "$pods" --arg l "$lines" --arg i "$interval" \
    '{name:"bench",image:"nvcr.io/nvidia/pytorch:24.10-py3",command:["torchrun","train.py"],nodes:$n,
      labels:{team:"bench"},kubernetes:{annotations:{"testserver.trainyard.io/steps":$l,
      "testserver.trainyard.io/line-interval-ms":$i}}}')
for _ in $(seq 1 "$jobs"); do
    printf 'next\nurl = "%s/v1/jobs"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata = %s\noutput = /dev/null\n' \
        "$url" "$token" "$(jq -Rs . <<<"$spec")"
done >"$work/curl.cfg"
echo "-- $jobs jobs x $pods pods, $lines lines per pod every ${interval} ms"
r0=$(requests); l0=$(metric trainyard_log_lines_ingested_total); t0=$(date +%s%N)
curl -s --parallel --parallel-max 16 -K "$work/curl.cfg" 2>/dev/null
echo "submitted in $((($(date +%s%N) - t0) / 1000000)) ms"
total=$((jobs * pods * (lines + 2)))
done_at=0 all_followed="" max_streams=0 max_conns=0 running_at=0
while :; do
    sample
    m=$(api "$url/metrics")
    n=$(awk '/^trainyard_jobs\{state="(succeeded|failed)"\}/ {s += $2} END {print s + 0}' <<<"$m")
    run=$(awk '/^trainyard_jobs\{state="running"\}/ {print $2}' <<<"$m")
    streams=$(awk '$1 == "trainyard_kube_log_streams" {print $2}' <<<"$m")
    [ "${streams:-0}" -gt "$max_streams" ] && max_streams=$streams
    conns=$(ss -tnp 2>/dev/null | grep -c "pid=$pid," || true)
    [ "$conns" -gt "$max_conns" ] && max_conns=$conns
    if [ "$running_at" = 0 ] && [ "${run:-0}" -ge "$jobs" ]; then
        running_at=$(date +%s%N)
        # a minute with every pod running: the daemon's steady cost, and its requests then
        sleep 5
        ra=$(requests); ca=$(ticks "$pid")
        sleep 60
        rb=$(requests); cb=$(ticks "$pid")
        steady="$(($(rss "$pid") / 1024)) MiB RSS, $(awk -v c="$((cb - ca))" -v hz="$hz" 'BEGIN {printf "%.1f", c / hz}') s of CPU in 60 s, $(api "$url/metrics" | awk '$1 == "trainyard_kube_log_streams" {print $2}') log streams open, $((rb - ra)) API requests in 60 s ($(awk -v r="$((rb - ra))" -v j="$jobs" 'BEGIN {printf "%.3f", r / j}') per job-minute)"
        all_followed=$steady
    fi
    stored=$(awk '$1 == "trainyard_log_lines_ingested_total" {print $2}' <<<"$m")
    if [ "$n" -ge "$jobs" ] && [ "$done_at" = 0 ]; then done_at=$(date +%s%N); fi
    [ "$done_at" != 0 ] && [ "$stored" -ge "$total" ] && break
    [ $((($(date +%s%N) - t0) / 1000000000)) -gt 1800 ] && { echo "gave up after 1800 s"; break; }
    sleep 1
done
t2=$(date +%s%N)
r1=$(requests); l1=$(metric trainyard_log_lines_ingested_total)
secs=$(awk -v a="$t0" -v b="$t2" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
jobsecs=$(awk -v a="$t0" -v b="$done_at" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
runsecs=$(awk -v a="$running_at" -v b="$done_at" 'BEGIN {printf "%.1f", a ? (b - a) / 1e9 : 0}')
echo "every job running after $(awk -v a="$t0" -v b="$running_at" 'BEGIN {printf "%.1f", a < b ? (b - a) / 1e9 : -1}') s; all ended after ${jobsecs} s; every line stored after ${secs} s"
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
dk=$((r1 - r0))
echo "-- API requests (the daemon's own): $dk in ${secs} s for $jobs jobs"
awk -v r="$dk" -v j="$jobs" -v s="$jobsecs" 'BEGIN {printf "requests per job: %.1f; per job-minute: %.2f\n", r / j, r / (j * s / 60)}'
api "$url/metrics" | grep '^trainyard_kube_requests_total' | sed 's/trainyard_kube_requests_total/  /'
api "$url/metrics" | grep -E '^trainyard_kube_(responses_total|connections_total|watch_restarts_total)' | sed 's/trainyard_kube_/  /'
echo "  most TCP connections of the daemon at once: $max_conns; most log streams at once: $max_streams"
echo "-- daemon"
c=$(($(ticks "$pid") - c0[trainyard]))
awk -v c="$c" -v hz="$hz" -v s="$secs" 'BEGIN {printf "CPU: %.1f s over %.1f s (%.0f%% of one core)\n", c / hz, s, 100 * c / hz / s}'
echo "with every job running: ${all_followed:-never at once (jobs ended before the last started)}"
echo "RSS peak $((peak[trainyard] / 1024)) MiB; VmHWM $(awk '/VmHWM/ {printf "%d", $2 / 1024}' /proc/$pid/status) MiB"
echo "-- logs: $((l1 - l0)) lines stored of $total printed; duplicates dropped: $(metric trainyard_kube_log_duplicates_total)"

# ---- a rank fails: how long until every other pod of its job is deleted
ns=trainyard-jobs
kq() { curl -s --cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer $KUBE_ADMIN_TOKEN" "$KUBE_SERVER$1"; }
echo "-- a rank fails (OOMKilled, restart never, the others hang): its failure as the kubelet reports it -> every other pod deleted ($reaps runs)"
for i in $(seq 1 "$reaps"); do
    id=$(api "$url/v1/jobs" -H 'Content-Type: application/json' -d "$(jq -nc --argjson n "$pods" \
        '{name:"reap",image:"x",nodes:$n,restart:{policy:"never"},kubernetes:{annotations:{"testserver.trainyard.io/oom-ranks":"3","testserver.trainyard.io/run-forever":"true","testserver.trainyard.io/steps":"10"}}}')" | jq -r .id)
    sel="labelSelector=trainyard.io%2Fjob-id%3D$id"
    seen=0 gone=0
    for _ in $(seq 1 600); do
        p=$(kq "/api/v1/namespaces/$ns/pods?$sel")
        now=$(date +%s%N)
        if [ "$seen" = 0 ] && jq -e '[.items[]|select(.status.phase=="Failed")]|length>0' <<<"$p" >/dev/null; then seen=$now; fi
        if [ "$seen" != 0 ] && jq -e '[.items[]|select(.status.phase!="Failed" and .status.phase!="Succeeded")]|length==0' <<<"$p" >/dev/null; then gone=$now; break; fi
        sleep 0.05
    done
    [ "$gone" != 0 ] && echo "$(((gone - seen) / 1000000))" >>"$work/reap"
done
sort -n "$work/reap" | awk '{v[NR] = $1} END {printf "failure seen on the API server -> last other pod gone: p50 %d ms, max %d ms (%d runs; polled every 50 ms)\n", v[int(NR*0.5)+1], v[NR], NR}'
echo "pods trainyard deleted: $(metric trainyard_kube_pods_reaped_total)"

echo "-- the control plane and the simulator in the same run (CPU since the daemon started, peak RSS)"
for n in etcd apiserver controller-manager scheduler kubesim trainyard; do
    c=$(($(ticks "${procs[$n]}") - c0[$n]))
    sample
    awk -v n="$n" -v c="$c" -v hz="$hz" -v r="${peak[$n]}" 'BEGIN {printf "  %-19s CPU %7.1f s   RSS peak %5d MiB\n", n, c / hz, r / 1024}'
done

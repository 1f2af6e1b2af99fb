#!/usr/bin/env bash
# Log ingest end to end: RANKS ranks each `cat` a file of LINES realistic training-log lines
# (about 100 bytes) as fast as they can; measured from the job's start until every line is in
# the store and searchable. In the same run, a raw `cat` of the same lines to a file, for the
# ratio. Usage: bench/bench-ingest.sh [LINES per rank, default 1000000] [RANKS, default 2]
# TY_SERVE_FLAGS adds daemon flags (e.g. --diagnosis=off to measure ingest without analysis).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
build=${TY_BUILD:-$here/../build}
lines=${1:-1000000}
ranks=${2:-2}
work=$(mktemp -d /tmp/bench-ingest.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT

awk -v n="$lines" 'BEGIN {
  for (i = 0; i < n; i++) {
    s = i % 5
    if (s == 0) printf "ip-10-0-%d-%d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via NET/AWS Libfabric/%d/GDRDMA\n", i%97, i%89, i%1000, i%64, i%8, i%32, i%8, i%4, (i+1)%8, i%4, i%4
    else if (s == 1) printf "{\047loss\047: %d.%04d, \047grad_norm\047: %d.%03d, \047learning_rate\047: 2.%de-05, \047epoch\047: %d.%02d}\n", i%7, i%9973, i%3, i%997, i%9, i%5, i%100
    else if (s == 2) printf "[Rank %d] step=%d, skipped=0, lr=[%d.%de-05], mom=[(0.9, 0.95)] samples/sec=%d.%d\n", i%8, i, i%9, i%7, 100+i%900, i%10
    else if (s == 3) printf " iteration %8d/  500000 | consumed samples: %10d | elapsed time per iteration (ms): %d.%d | lm loss: %d.%03dE+00\n", i, i*512, 400+i%300, i%10, i%9, i%1000
    else printf "INFO:trainer: saving checkpoint shard %d of %d to /fsx/checkpoints/run-%d/step-%d ok\n", i%8, 8, i%50, i
  }
}' >"$work/lines.txt"
bytes=$(stat -c %s "$work/lines.txt")
echo "input: $ranks ranks x $lines lines ($(awk -v b="$bytes" 'BEGIN {printf "%.0f", b / 1e6}') MB each)"

t0=$(date +%s%N)
for r in $(seq 1 "$ranks"); do cat "$work/lines.txt" >"$work/cat.$r" & done
wait
sync -f "$work" 2>/dev/null || true
t1=$(date +%s%N)
raw_ms=$(((t1 - t0) / 1000000))
total=$((lines * ranks))
echo "raw cat to files: ${raw_ms} ms = $((total * 1000 / (raw_ms > 0 ? raw_ms : 1))) lines/s"
rm -f "$work"/cat.*

serve "$work" --auth=off --local-slots "$ranks" ${TY_SERVE_FLAGS:-}
cpu() { awk '{print $14 + $15}' /proc/$pid/stat; }
c0=$(cpu)
t0=$(date +%s%N)
id=$(curl -s -X POST "$url/v1/jobs" -H 'Content-Type: application/json' \
    -d "{\"name\":\"ingest\",\"command\":[\"cat\",\"$work/lines.txt\"],\"procs_per_node\":$ranks}" | jq -r .id)
while ! curl -s -D - -o /dev/null "$url/v1/jobs/$id/logs?limit=1" | grep -qi 'Trainyard-Log-Complete: true'; do
    sleep 0.05
done
t1=$(date +%s%N)
c1=$(cpu)
stored=$(curl -s "$url/metrics" | awk '/^trainyard_log_lines_ingested_total/ {print $2}')
ms=$(((t1 - t0) / 1000000))
echo "trainyard: $stored lines stored and searchable in ${ms} ms = $((stored * 1000 / ms)) lines/s"
echo "daemon CPU: $(((c1 - c0) * 10)) ms ($(awk -v c=$((c1 - c0)) -v n="$stored" 'BEGIN {printf "%.2f", c * 10000 / n}') us per line, shims not included)"
echo "ratio to raw cat: $(awk -v a="$ms" -v b="$raw_ms" 'BEGIN {printf "%.1f", a / (b > 0 ? b : 1)}')x the time"
t0=$(date +%s%N)
n=$(curl -s "$url/v1/jobs/$id/logs/search?q=%22shard+3+of%22+run-19&limit=1000" | jq '.matches | length')
t1=$(date +%s%N)
echo "search '\"shard 3 of\" run-19' over the job: $n matches in $(((t1 - t0) / 1000000)) ms"
t0=$(date +%s%N)
curl -s "$url/v1/jobs/$id/logs?tail=1000" >/dev/null
t1=$(date +%s%N)
echo "tail 1000 over HTTP: $(((t1 - t0) / 1000000)) ms"
echo "ranks' raw log files on disk once stored: $(du -sk "$work/data/jobs" | awk '{printf "%.1f MB", $1 / 1024}')"
du -sk "$work/data/trainyard.db" "$work/data/trainyard.db-wal" 2>/dev/null | awk -v n="$stored" '{k += $1} END {printf "database: %.1f MB = %.1f MB per million lines\n", k / 1024, k / 1024 / (n / 1e6)}'

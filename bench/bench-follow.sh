#!/usr/bin/env bash
# Follow latency with many followers: one rank writes LINES lines, one every 20 ms, each with the
# time it was written; FOLLOWERS clients follow over SSE (bench_follow). Usage:
#   bench/bench-follow.sh [FOLLOWERS, default 100] [LINES, default 300]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${TY_BUILD:-$here/../build}
followers=${1:-100}
lines=${2:-300}
work=$(mktemp -d /tmp/bench-follow.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
"$build/trainyard" serve --listen 127.0.0.1:0 --data-dir "$work/data" --auth=off \
    --max-followers $((followers + 10)) --log-level warn >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 1 300); do
    url=$(grep -o 'http://[0-9.:]*' "$work/out" 2>/dev/null | head -1 || true)
    [ -n "$url" ] && curl -sf "$url/readyz" >/dev/null 2>&1 && break
    sleep 0.01
done
script="sleep 2; for i in \$(seq 1 $lines); do echo \"t=\$(date +%s%N)\"; sleep 0.02; done"
id=$(curl -s -X POST "$url/v1/jobs" -H 'Content-Type: application/json' \
    -d "{\"name\":\"follow\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$script" '$s')]}" | jq -r .id)
"$build/bench/bench_follow" "$url" "$id" "$followers" "$lines"

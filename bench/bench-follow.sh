#!/usr/bin/env bash
# Follow latency with many followers: one rank writes LINES lines, one every 20 ms, each with the
# time it was written; FOLLOWERS clients follow over SSE (bench_follow). Usage:
#   bench/bench-follow.sh [FOLLOWERS, default 100] [LINES, default 300]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
build=${TY_BUILD:-$here/../build}
followers=${1:-100}
lines=${2:-300}
work=$(mktemp -d /tmp/bench-follow.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
serve "$work" --auth=off --max-followers $((followers + 10))
script="sleep 2; for i in \$(seq 1 $lines); do echo \"t=\$(date +%s%N)\"; sleep 0.02; done"
id=$(curl -s -X POST "$url/v1/jobs" -H 'Content-Type: application/json' \
    -d "{\"name\":\"follow\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$script" '$s')]}" | jq -r .id)
"$build/bench/bench_follow" "$url" "$id" "$followers" "$lines"

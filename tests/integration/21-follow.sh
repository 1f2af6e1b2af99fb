#!/usr/bin/env bash
# Following logs live: a follower attached mid-job sees every line exactly once (by sequence),
# also across reconnects with Last-Event-ID and across a kill -9 of the daemon; the stream ends
# when the job does; several followers at once.
source "$(dirname "$0")/lib.sh"
ty_start --max-followers 3

PRINT='for i in $(seq 1 300); do echo "rank $RANK line $i"; sleep 0.01; done'
spec="{\"name\":\"follow\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$PRINT" '$s')],\"procs_per_node\":2}"
id=$(submit "$spec" | jq -r .id)
wait_state "$id" running
sleep 0.3

sse() { curl -sN -H "Authorization: Bearer $TOKEN" -H 'Accept: text/event-stream' "$@"; }
seqs_of() { grep '^data: {' "$1" | sed 's/^data: //' | jq -r 'select(.seq) | .seq'; }

# A whole follow, attached mid-job, and an NDJSON follower at the same time.
sse "$URL/v1/jobs/$id/logs?follow=true" >"$WORK/full.sse" &
f1=$!
curl -sN -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id/logs?follow=true&format=ndjson&rank=1" >"$WORK/rank1.ndjson" &
f2=$!
# A follower that drops and reconnects with Last-Event-ID.
sse "$URL/v1/jobs/$id/logs?follow=true" >"$WORK/part1.sse" &
f3=$!
sleep 1
kill $f3 2>/dev/null
wait $f3 2>/dev/null
last=$(grep '^id: ' "$WORK/part1.sse" | tail -1 | cut -d' ' -f2)
sse -H "Last-Event-ID: $last" "$URL/v1/jobs/$id/logs?follow=true" >"$WORK/part2.sse" &
f4=$!
check "first follower ends with the job" wait $f1
check "second follower ends with the job" wait $f2
check "resumed follower ends with the job" wait $f4
check_eq "follower saw every line" 600 "$(seqs_of "$WORK/full.sse" | sort -un | wc -l)"
check_eq "follower saw each line once" 600 "$(seqs_of "$WORK/full.sse" | wc -l)"
check_eq "in sequence order" "$(seqs_of "$WORK/full.sse" | sort -n | paste -sd,)" "$(seqs_of "$WORK/full.sse" | paste -sd,)"
check "stream ends with an end event" grep -q '^event: end' "$WORK/full.sse"
check "end event carries the state" grep -q '"state":"succeeded"' "$WORK/full.sse"
check_eq "rank filter while following" "300 1" "$(jq -s '[length, (map(.rank)|unique|length)] | map(tostring) | join(" ")' -r "$WORK/rank1.ndjson")"
cat "$WORK/part1.sse" "$WORK/part2.sse" >"$WORK/joined.sse"
check_eq "reconnect with Last-Event-ID: every line" 600 "$(seqs_of "$WORK/joined.sse" | sort -un | wc -l)"
check_eq "reconnect with Last-Event-ID: none twice" 600 "$(seqs_of "$WORK/joined.sse" | wc -l)"

# Follow across kill -9 of the daemon: the collector resumes from its committed position.
id=$(submit "$spec" | jq -r .id)
wait_state "$id" running
sse "$URL/v1/jobs/$id/logs?follow=true" >"$WORK/k1.sse" &
f5=$!
sleep 1
ty_kill9
wait $f5 2>/dev/null
last=$(grep '^id: ' "$WORK/k1.sse" | tail -1 | cut -d' ' -f2)
ty_restart
sse -H "Last-Event-ID: ${last:-0}" "$URL/v1/jobs/$id/logs?follow=true" >"$WORK/k2.sse"
cat "$WORK/k1.sse" "$WORK/k2.sse" >"$WORK/k.sse"
check_eq "across kill -9: every line" 600 "$(seqs_of "$WORK/k.sse" | sort -un | wc -l)"
check_eq "across kill -9: none twice" 600 "$(seqs_of "$WORK/k.sse" | wc -l)"
check_eq "across kill -9: every line text once" 600 "$(grep '^data: {' "$WORK/k.sse" | sed 's/^data: //' | jq -r 'select(.seq) | .line' | sort -u | wc -l)"

# Latency: a line written now reaches a text follower promptly.
id=$(submit '{"name":"slowprint","command":["sh","-c","sleep 1; echo marker-$(date +%s%N); sleep 1"]}' | jq -r .id)
curl -sN -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id/logs?follow=true" | while read -r line; do
    echo "$(date +%s%N) $line"
done >"$WORK/latency.txt"
sent=$(grep -o 'marker-[0-9]*' "$WORK/latency.txt" | cut -d- -f2)
got=$(grep marker "$WORK/latency.txt" | cut -d' ' -f1)
check "line seen within 500 ms of being written ($(((got - sent) / 1000000)) ms)" test $(((got - sent) / 1000000)) -lt 500

# Followers per client are bounded.
id=$(submit '{"name":"longrun","command":["sleep","30"]}' | jq -r .id)
wait_state "$id" running
followers=()
for i in $(seq 1 3); do
    curl -sN -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id/logs?follow=true" >/dev/null &
    followers+=($!)
done
sleep 0.5
check_eq "follower limit reached gives 429" 429 "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id/logs?follow=true")"
api POST "/v1/jobs/$id/cancel" >/dev/null
check "followers end when the job is cancelled" wait "${followers[@]}"
ty_done

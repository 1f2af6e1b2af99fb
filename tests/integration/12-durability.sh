#!/usr/bin/env bash
# Nothing answered 2xx is lost: idempotent retries, kill -9 of the daemon while ranks run and
# while submissions are in flight; ranks that kept running are adopted, ranks that ended while
# the daemon was down are reported with how they ended, queued jobs start.
source "$(dirname "$0")/lib.sh"
ty_start

# Idempotency-Key: the same key and spec return the original job; another spec is a conflict.
spec='{"name":"idem","command":["true"]}'
r1=$(api POST /v1/jobs -H 'Idempotency-Key: ci-run-42' -H 'Content-Type: application/json' -d "$spec" -w ' %{http_code}')
r2=$(api POST /v1/jobs -H 'Idempotency-Key: ci-run-42' -H 'Content-Type: application/json' -d "$spec" -w ' %{http_code}')
check_eq "first submission is 201" 201 "${r1##* }"
check_eq "retry is 200" 200 "${r2##* }"
check_eq "retry returns the same job" "$(echo "${r1% *}" | jq -r .id)" "$(echo "${r2% *}" | jq -r .id)"
check_eq "same key, other spec is 409" 409 "$(status POST /v1/jobs -H 'Idempotency-Key: ci-run-42' -H 'Content-Type: application/json' -d '{"name":"other","command":["true"]}')"
check_eq "one job for the key" 1 "$(api GET '/v1/jobs?name=idem' | jq '.items | length')"

# kill -9 while a 2-rank job runs and prints: after restart it finishes, every line once.
PRINT='for i in $(seq 1 40); do echo "rank $RANK line $i"; sleep 0.05; done'
id=$(submit "{\"name\":\"survivor\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$PRINT" '$s')],\"procs_per_node\":2}" | jq -r .id)
wait_state "$id" running
sleep 0.7
ty_kill9
sleep 0.5
ty_restart
check "adopted job succeeds" wait_state "$id" succeeded
check "its log completes" wait_logs_complete "$id"
lines=$(api GET "/v1/jobs/$id/logs?format=ndjson&limit=1000")
check_eq "every line stored" 80 "$(echo "$lines" | jq -s length)"
check_eq "no line twice" 80 "$(echo "$lines" | jq -r .line | sort -u | wc -l)"
check_eq "sequence has no gaps" "1 80" "$(echo "$lines" | jq -s -r '[(map(.seq)|min), (map(.seq)|max)] | join(" ")')"
check "adoption in the daemon log" grep -q "adopted job $id" "$WORK/daemon.err"

# Ranks that end while the daemon is down are reported with their exit codes.
id=$(submit '{"name":"ended-while-down","command":["sh","-c","sleep 1; exit $((RANK + 4))"],"procs_per_node":2}' | jq -r .id)
wait_state "$id" running
ty_kill9
sleep 2
ty_restart
check "job that ended while down failed" wait_state "$id" failed
check_eq "exit codes read from the rank files" "4,5" "$(api GET "/v1/jobs/$id" | jq -r '[.ranks[].exit_code] | sort | map(tostring) | join(",")')"

# A burst of submissions, kill -9 in the middle: every job answered 201 exists afterwards.
burst() {
    for i in $(seq 1 300); do
        curl -s -o /dev/null -w '%{http_code} %header{location}\n' -X POST \
            -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
            -d "{\"name\":\"burst-$i\",\"command\":[\"true\"],\"suspend\":true}" "$URL/v1/jobs" || true
    done
}
for k in 1 2 3 4; do burst >"$WORK/burst.$k" & done
sleep 0.6
ty_kill9
wait
ty_restart
answered=$(cat "$WORK"/burst.* | awk '$1 == 201 {print $2}' | sort -u)
check "some submissions were answered before the kill" test -n "$answered"
missing=0
for loc in $answered; do
    [ "$(status GET "$loc")" = 200 ] || missing=$((missing + 1))
done
check_eq "no answered submission lost ($(echo "$answered" | wc -l) answered)" 0 "$missing"

# Queued jobs start after a restart.
id=$(submit '{"name":"queued-across-restart","command":["true"],"suspend":true}' | jq -r .id)
ty_kill9
ty_restart
api POST "/v1/jobs/$id/resume" >/dev/null
check "queued job runs after restart" wait_state "$id" succeeded
# A rank whose files are gone while the daemon is down (its data directory wiped): its shim ends
# with the rank, instead of waiting an hour for room to write a status nobody will read.
id=$(submit '{"name":"orphan","command":["sleep","1"]}' | jq -r .id)
wait_state "$id" running
check "the orphan's shim runs" pgrep -f "trainyard shim --dir .*$id"
ty_kill9
rm -rf "${DATA:?}/jobs/$id"
for _ in $(seq 1 50); do pgrep -f "trainyard shim --dir .*$id" >/dev/null || break; sleep 0.1; done
check "the orphan's shim ends with its rank" test -z "$(pgrep -f "trainyard shim --dir .*$id")"
ty_restart
ty_done

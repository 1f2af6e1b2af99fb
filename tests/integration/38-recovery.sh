#!/usr/bin/env bash
# Recovery as a user relies on it, on the local executor:
# - a trainer saves in $TRAINYARD_CHECKPOINT_DIR on its first attempt (the directory exists and
#   is the ranks' to write, the default one and a checkpoint.path alike) and resumes from it
#   after a restart;
# - restarts back off (the spec's backoff_seconds, else the daemon's --restart-backoff, doubling
#   with each restart), and the job's message says when the next attempt starts;
# - logs by attempt (?attempt=N) on every log route: read, search, download, follow (which ends
#   when its attempt is over), and since/until relative to now ("10m"), also in `trainyard logs`;
# - a job past deadline_seconds whose ranks trap SIGTERM stays running until every rank has
#   ended, then fails DeadlineExceeded: `trainyard wait` returns only after the processes ended.
source "$(dirname "$0")/lib.sh"
ty_start --stop-grace 5s
export TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN XDG_CONFIG_HOME=$WORK/xdg HOME=$WORK
unset TRAINYARD_CONFIG TRAINYARD_OUTPUT TRAINYARD_CACERT TRAINYARD_RETRY_FOR
ty() { "$TRAINYARD" "$@"; }

# A trainer of 10 steps that saves its step after each (write, then rename) and resumes from the
# saved one; on the first attempt it crashes right after saving step 5.
TRAINER='f=$TRAINYARD_CHECKPOINT_DIR/step.$RANK step=0
if [ -f "$f" ]; then step=$(cat "$f"); echo "resumed from step $step"; fi
while [ "$step" -lt 10 ]; do
    step=$((step + 1))
    echo "step=$step loss=0.$step"
    { echo "$step" >"$f.tmp" && mv "$f.tmp" "$f"; } || { echo "cannot save in $TRAINYARD_CHECKPOINT_DIR" >&2; exit 2; }
    if [ "$step" = 5 ] && [ "$TRAINYARD_RESTART_COUNT" = 0 ]; then echo "saved step 5, crashing" >&2; exit 1; fi
done
echo "finished at step $step"'
RESTART='"restart":{"policy":"on_failure","max_restarts":1,"backoff_seconds":2}'
def=$(job ckpt-default "$TRAINER" "\"procs_per_node\":2,$RESTART")
own=$(job ckpt-path "$TRAINER" "\"procs_per_node\":2,$RESTART,\"checkpoint\":{\"path\":\"$WORK/ckpt/a/b\"}")
# Fails every attempt: the daemon's backoff (1 s in these tests), then twice that.
always=$(job always-fails 'echo "attempt $TRAINYARD_RESTART_COUNT"; exit 1' '"restart":{"policy":"on_failure","max_restarts":2}')
# Attempt 0 fails; attempt 1 waits for the test's go.
two=$(job two-attempts 'if [ "$TRAINYARD_RESTART_COUNT" = 0 ]; then echo "line of attempt 0"; sleep 1; exit 1; fi
echo "line of attempt 1"; while [ ! -e "$TRAINYARD_CHECKPOINT_DIR/go" ]; do sleep 0.1; done' "$RESTART")
# A follow of attempt 0, from before it ended: it must end once attempt 1 runs.
curl -sN --max-time 40 -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$two/logs?follow=true&attempt=0&format=ndjson" >"$WORK/follow0" &
follow0=$!

# The backoff, as the job shows it while it waits: restarting, the message saying when.
check "restarting after the first attempt" wait_state "$def" restarting 30
msg=$(api GET "/v1/jobs/$def" | jq -r .message)
check "the message says when the next attempt starts" grep -Eq '; restart 1 at [0-9T:.-]+Z \(backoff 2s\)$' <<<"$msg"
at=$(grep -Eo 'restart 1 at [^ ]+' <<<"$msg" | cut -d' ' -f4)

for id in $def $own $always; do
    check "job $id ended" wait_end "$id"
done
for id in $def $own; do
    j=$(api GET "/v1/jobs/$id")
    check_eq "$id: succeeded after one restart" "succeeded 1" "$(jq -r '"\(.state) \(.restarts)"' <<<"$j")"
done
ev=$(api GET "/v1/jobs/$def/events")
exited=$(jq -r '[.items[] | select(.type=="rank_exited")][0].time' <<<"$ev")
started=$(jq -r '[.items[] | select(.type=="starting")][1].time' <<<"$ev")
check "the restart started no sooner than the message said" test ! "$started" \< "$at"
check "2 s after the first attempt ended" awk -v a="$(date -d "$exited" +%s.%N)" -v b="$(date -d "$started" +%s.%N)" 'BEGIN { exit !(b - a >= 2) }'
msgs=$(api GET "/v1/jobs/$always/events" | jq -r '.items[] | select(.type=="restarting") | .message')
check "the daemon's backoff first" grep -q "restart 1 at .* (backoff 1s)" <<<"$msgs"
check "then doubled" grep -q "restart 2 at .* (backoff 2s)" <<<"$msgs"
check_eq "then failed, restarts spent" "failed 2" "$(api GET "/v1/jobs/$always" | jq -r '"\(.state) \(.restarts)"')"

# The checkpoints: written on the first attempt, read on the second, in the job's own directory
# and at checkpoint.path (made for the job though it did not exist).
check_eq "default directory: final step saved" "10 10" "$(cat "$(ckpt "$def")/step.0" "$(ckpt "$def")/step.1" | xargs)"
check_eq "checkpoint.path: final step saved" "10 10" "$(cat "$WORK/ckpt/a/b/step.0" "$WORK/ckpt/a/b/step.1" | xargs)"
for id in $def $own; do
    wait_logs_complete "$id"
    a0=$(api GET "/v1/jobs/$id/logs?attempt=0")
    a1=$(api GET "/v1/jobs/$id/logs?attempt=1")
    check "$id: attempt 0 saved and crashed" grep -q "saved step 5, crashing" <<<"$a0"
    check "$id: attempt 0 did not resume" test "$(grep -c resumed <<<"$a0")" = 0
    check_eq "$id: attempt 1 resumed on every rank" 2 "$(grep -c "resumed from step 5" <<<"$a1")"
    check "$id: attempt 1 finished" grep -q "finished at step 10" <<<"$a1"
    check "$id: nothing could not be saved" test "$(grep -c "cannot save" <<<"$a0$a1")" = 0
done

# Logs by attempt on every route.
nd=$(api GET "/v1/jobs/$def/logs?attempt=1&format=ndjson")
check "ndjson: every line says its attempt" jq -se 'length > 0 and all(.attempt == 1)' <<<"$nd"
check "ndjson without attempt: both attempts" jq -se '[.[].attempt] | unique == [0,1]' <<<"$(api GET "/v1/jobs/$def/logs?format=ndjson")"
check_eq "search attempt 0: no resume" 0 "$(api GET "/v1/jobs/$def/logs/search?q=resumed&attempt=0" | jq '.matches | length')"
check_eq "search attempt 1: two" 2 "$(api GET "/v1/jobs/$def/logs/search?q=resumed&attempt=1" | jq '.matches | length')"
dl=$(api GET "/v1/jobs/$def/logs/download?attempt=0")
check "download attempt 0" grep -q crashing <<<"$dl"
check "download attempt 0: only its lines" test "$(grep -c resumed <<<"$dl")" = 0
sse=$(curl -sN --max-time 20 -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$def/logs?follow=true&attempt=1&format=sse")
check "follow attempt 1 of an ended job: its lines, then the end" grep -q "^event: end" <<<"$sse"
check "follow attempt 1: no line of attempt 0" test "$(grep -c crashing <<<"$sse")" = 0
for bad in 2 -1 x; do
    r=$(api GET "/v1/jobs/$def/logs?attempt=$bad")
    check "attempt=$bad: 400 naming the parameter" jq -e '.status == 400 and (.detail | test("attempt"))' <<<"$r"
done
check_eq "attempt=2 on search: 400" 400 "$(status GET "/v1/jobs/$def/logs/search?q=x&attempt=2")"
check_eq "attempt=2 on download: 400" 400 "$(status GET "/v1/jobs/$def/logs/download?attempt=2")"

# The follow of attempt 0 started before it ended: over once attempt 1 runs, the job still
# running; only attempt 0's line.
eventually "two: attempt 1 runs" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' '$URL/v1/jobs/$two' | jq -e '.state == \"running\" and .restarts == 1'"
for _ in $(seq 1 100); do kill -0 "$follow0" 2>/dev/null || break; sleep 0.1; done
check "follow attempt=0 ended while attempt 1 runs" bash -c "! kill -0 $follow0 2>/dev/null"
check_eq "the job still runs" running "$(api GET "/v1/jobs/$two" | jq -r .state)"
check "follow attempt=0: its line" grep -q "line of attempt 0" "$WORK/follow0"
check "follow attempt=0: not the next attempt's" test "$(grep -c "line of attempt 1" "$WORK/follow0")" = 0
touch "$(ckpt "$two")/go"
check "two: succeeded" wait_state "$two" succeeded 30

# since/until: RFC 3339, or a duration before now.
all=$(api GET "/v1/jobs/$def/logs" | wc -l)
check_eq "since=1h: every line" "$all" "$(api GET "/v1/jobs/$def/logs?since=1h" | wc -l)"
check_eq "since=10m: every line (the job ran just now)" "$all" "$(api GET "/v1/jobs/$def/logs?since=10m" | wc -l)"
check_eq "until=10m: none" 0 "$(api GET "/v1/jobs/$def/logs?until=10m" | wc -l)"
check_eq "since=0s: none (from now on)" 0 "$(api GET "/v1/jobs/$def/logs?since=0s" | wc -l)"
check_eq "search since=10m" 2 "$(api GET "/v1/jobs/$def/logs/search?q=resumed&since=10m" | jq '.matches | length')"
check_eq "download until=10m: empty" 0 "$(api GET "/v1/jobs/$def/logs/download?until=10m" | wc -c)"
check "since as RFC 3339 still" test "$(api GET "/v1/jobs/$def/logs?since=2000-01-01T00:00:00Z" | wc -l)" = "$all"
for bad in 600 yesterday 10x; do
    r=$(api GET "/v1/jobs/$def/logs?since=$bad")
    check "since=$bad: 400 naming the parameter" jq -e '.status == 400 and (.detail | test("since"))' <<<"$r"
done

# The CLI.
out=$(ty logs "$def" --attempt 1)
check "cli --attempt 1" grep -q "^\[rank 0\] resumed from step 5" <<<"$out"
check "cli --attempt 1: not attempt 0" test "$(grep -c crashing <<<"$out")" = 0
check "cli --attempt 0 --since 10m" grep -q crashing <<<"$(ty logs "$def" --attempt 0 --since 10m)"
out=$(ty logs "$def" --until 10m)
check_eq "cli --until 10m: nothing, exit 0" "0 0" "$? $(printf '%s' "$out" | wc -c)"
check "cli -f --attempt 0 ends" grep -q crashing <<<"$(timeout 20 "$TRAINYARD" logs -f "$def" --attempt 0)"
err=$(ty logs "$def" --since 600 2>&1)
check "cli --since 600: a usage error" test $? -ne 0 -a -n "$(grep -- --since <<<"$err")"
err=$(ty logs "$def" --attempt 7 2>&1)
check "cli --attempt 7: the daemon's refusal" test $? -ne 0 -a -n "$(grep "attempt" <<<"$err")"

# The deadline: 8 ranks that trap SIGTERM and take 1.5 s to exit.
DL='trap "sleep 1.5; touch \$TRAINYARD_CHECKPOINT_DIR/exited.\$RANK; exit 0" TERM
echo ready; while :; do sleep 0.1; done'
dl=$(job deadline "$DL" '"procs_per_node":8,"deadline_seconds":2')
# trainyard wait from the start; what it returns with, and how many ranks had exited by then.
(
    ty wait "$dl" >/dev/null 2>&1
    echo "$? $(ls "$(ckpt "$dl")" | grep -c '^exited\.')" >"$WORK/waited"
) &
waiter=$!
eventually "the deadline passes" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' '$URL/v1/jobs/$dl/events' | jq -e '[.items[].type] | index(\"deadline_exceeded\")'"
check_eq "running while its ranks take their grace period" running "$(api GET "/v1/jobs/$dl" | jq -r .state)"
wait "$waiter"
check_eq "trainyard wait: failed, once every rank had ended" "1 8" "$(cat "$WORK/waited")"
j=$(api GET "/v1/jobs/$dl")
check_eq "failed, DeadlineExceeded" "failed DeadlineExceeded" "$(jq -r '"\(.state) \(.reason)"' <<<"$j")"
check_eq "the message" "ran longer than deadline_seconds (2 s)" "$(jq -r .message <<<"$j")"
check_eq "the event, then the end" "deadline_exceeded failed" "$(api GET "/v1/jobs/$dl/events" | jq -r '[.items[].type | select(. == "deadline_exceeded" or . == "failed")] | join(" ")')"
ty_done

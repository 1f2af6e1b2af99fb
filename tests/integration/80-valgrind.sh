#!/usr/bin/env bash
# The daemon under valgrind (memcheck) through a tour of the API: jobs in JSON and YAML that
# succeed, fail, are cancelled while a client follows their logs, log reads and searches, bad
# requests of every kind, tokens, an S3 trigger fed MinIO deliveries, then SIGTERM with a job
# still running. It must shut down cleanly (threads stopped, everything freed): any leak
# (definite or indirect) or memory error fails the test. Valgrind cannot run the sanitizer
# build and sees only the system's malloc, so this builds a plain one beside it, without mimalloc.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hooklib.sh"
if ! command -v valgrind >/dev/null; then
    ty_skip "valgrind is not installed (apt-get install valgrind)"
fi
VG_BUILD="$TY_BUILD/valgrind-build"
if ! { cmake -S "$TY_SRC" -B "$VG_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTY_SANITIZE=OFF \
    -DTY_FUZZ=OFF -DTY_MIMALLOC=OFF >/dev/null &&
    cmake --build "$VG_BUILD" -j2 --target trainyard >/dev/null; }; then
    echo "FAIL: cannot build the plain daemon in $VG_BUILD" >&2
    exit 1
fi
TRAINYARD="$VG_BUILD/trainyard"
not() { ! "$@"; }
VGLOG="$WORK/valgrind.log"
TY_WRAP=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --num-callers=30
    --log-file="$VGLOG")
ty_start

# Success, with logs read in every format and searched.
ok=$(submit '{"name":"ok","command":["sh","-c","for i in 1 2 3; do echo \"rank $RANK step $i loss 0.$i\"; done; echo oops >&2"],"procs_per_node":2,"labels":{"team":"nlp"}}' | jq -r .id)
check "JSON job succeeds" wait_state "$ok" succeeded 60
check "its logs are complete" wait_logs_complete "$ok"
check "text logs" grep -q 'rank 1 step 3' <<<"$(api GET "/v1/jobs/$ok/logs")"
check "ndjson logs" grep -q '"stream":"stderr"' <<<"$(api GET "/v1/jobs/$ok/logs?format=ndjson&rank=0-1&tail=4")"
check "search" grep -q 'loss' <<<"$(api GET "/v1/jobs/$ok/logs/search?q=loss+%22step+2%22&context=1")"
check "download" grep -q oops <<<"$(api GET "/v1/jobs/$ok/logs/download")"
check "events" grep -q succeeded <<<"$(api GET "/v1/jobs/$ok/events")"
check "list by selector" grep -q "$ok" <<<"$(api GET '/v1/jobs?selector=team%3Dnlp&state=succeeded')"

# YAML, and a failure.
bad=$(api POST /v1/jobs -H 'Content-Type: application/yaml' --data-binary $'name: fails\ncommand: [sh, -c, "exit 3"]\n' | jq -r .id)
check "YAML job fails" wait_state "$bad" failed 60

# A follower while the job is cancelled.
long=$(submit '{"name":"long","command":["sh","-c","while :; do echo tick; sleep 0.2; done"]}' | jq -r .id)
check "long job runs" wait_state "$long" running 60
curl -s -N -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$long/logs?follow=true" >"$WORK/follow.out" &
follower=$!
sleep 2
check "cancel" grep -q cancell <<<"$(api POST "/v1/jobs/$long/cancel")"
check "cancelled" wait_state "$long" cancelled 60
for _ in $(seq 1 100); do kill -0 "$follower" 2>/dev/null || break; sleep 0.2; done
check "the follower ended with the job" not kill -0 "$follower"
kill "$follower" 2>/dev/null
check "the follower saw lines" grep -q tick "$WORK/follow.out"
check_eq "delete a finished job" 204 "$(status DELETE "/v1/jobs/$bad")"

# Requests that fail, each through its own error path.
check_eq "invalid spec" 422 "$(status POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":"Bad Name","nodes":0}')"
check_eq "bad JSON" 400 "$(status POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":')"
check_eq "bad YAML" 400 "$(status POST /v1/jobs -H 'Content-Type: application/yaml' --data-binary $'a: [\n')"
check_eq "unknown job" 404 "$(status GET /v1/jobs/nosuchjob)"
check_eq "bad query" 400 "$(status GET "/v1/jobs/$ok/logs?rank=0-99")"
check_eq "no token" 401 "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/jobs")"
tok=$(api POST /v1/tokens -H 'Content-Type: application/json' -d '{"name":"ci","scope":"read"}')
check "token created" test -n "$(echo "$tok" | jq -r '.token // empty')"
check_eq "token revoked" 204 "$(status DELETE "/v1/tokens/$(echo "$tok" | jq -r .id)")"
check "metrics" grep -q trainyard_jobs <<<"$(api GET /metrics)"

# An S3 trigger: a template, a MinIO delivery that starts a job, a duplicate, garbage.
make_template ingest
trig=$(make_trigger '{"name": "t-minio", "template": "ingest", "sender": "minio",
  "rule": {"bucket": "datasets"}, "auth": {"mode": "bearer"}}')
tid=$(jq -r .id <<<"$trig")
htok=$(jq -r '.secrets[0]' <<<"$trig")
check_eq "MinIO delivery accepted" "200 accepted" \
    "$(hook "$tid" "$FIX/minio-put.json" -H "Authorization: Bearer $htok" | cut -d' ' -f1) $(jq -r .outcome "$WORK/hook.out")"
check "it started a job" wait_jobs t-minio 1 60
check_eq "the duplicate starts none" 200 "$(hook "$tid" "$FIX/minio-put.json" -H "Authorization: Bearer $htok" | cut -d' ' -f1)"
check "garbage is answered" test -n "$(hook "$tid" "$TY_SRC/README.md" -H "Authorization: Bearer $htok")"
check "bad credentials are refused" has "$(hook "$tid" "$FIX/minio-put.json" -H 'Authorization: Bearer wrong')" '^40[13] '
check "the triggered job succeeds" wait_state "$(trigger_jobs t-minio | head -1)" succeeded 60

# SIGTERM with a job running: a clean stop frees everything (its ranks outlive the daemon).
still=$(submit '{"name":"still","command":["sleep","30"]}' | jq -r .id)
check "a job is running at shutdown" wait_state "$still" running 60
kill -TERM "$PID"
wait "$PID"
rc=$?
PID=""
check_eq "valgrind exit status (99: errors or leaks)" 0 "$rc"
# Reports are "==pid== ..." lines; "--pid-- WARNING" lines are valgrind's own (unknown syscalls).
check "valgrind reports nothing" not grep -qE '^==[0-9]+== ' "$VGLOG"
grep -E '^==[0-9]+== ' "$VGLOG" | head -80 >&2
ty_done

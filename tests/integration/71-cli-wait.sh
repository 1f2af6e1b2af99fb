#!/usr/bin/env bash
# The CLI in a CI step: submit --wait / wait exit with the job's result (0 succeeded, 1 failed,
# 3 cancelled, 6 timeout), print the diagnosis summary with the first failing rank, follow the
# log with --follow, and give scripts one JSON document with -o json.
source "$(dirname "$0")/lib.sh"
ty_start
export TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN XDG_CONFIG_HOME=$WORK/xdg HOME=$WORK
unset TRAINYARD_CONFIG TRAINYARD_OUTPUT TRAINYARD_CACERT TRAINYARD_RETRY_FOR
ty() { "$TRAINYARD" "$@"; }

# Success: exit 0 and a one-line result.
out=$(ty submit - --wait <<<'{"name":"ok","command":["sh","-c","echo done"],"procs_per_node":2}')
check_eq "succeeded: exit 0" 0 $?
check "prints the id then the result" grep -q "^job [a-z0-9]* (ok) succeeded" <<<"$out"

# Failure: rank 2 of 4 exits 3 first; exit 1 and the first failing rank in the output.
FAIL='{"name":"fail4","command":["sh","-c","if [ $RANK = 2 ]; then echo boom >&2; sleep 0.3; exit 3; fi; exec sleep 30"],"procs_per_node":4}'
out=$(ty submit - --wait 2>&1 <<<"$FAIL")
check_eq "failed: exit 1" 1 $?
check "result names the failure (reason from the diagnosis)" grep -q "failed.*Failed.*rank 2" <<<"$out"
check "first failing rank in the output" grep -q "first failure: rank 2 (exit code 3)" <<<"$out"
check "points at its log" grep -q "trainyard logs [a-z0-9]* --rank 2" <<<"$out"
# A job that fails after a while: its failure is in the past when the wait ends, and a plain
# exit code says nothing about whether a restart helps.
out=$(ty submit - --wait 2>&1 <<<'{"name":"late","command":["sh","-c","sleep 6; exit 5"]}')
check "the failure is in the past, not \"in 6s\"" grep -q "first failure: rank 0 (exit code 5) on node localhost, \(just now\|[0-9]*s ago\)" <<<"$out"
check "a plain exit 5 is not called hopeless" test -z "$(grep "will not help" <<<"$out")"
json=$(ty submit - --wait -o json <<<"$FAIL")
check_eq "failed, -o json: exit 1" 1 $?
check "json result: one document with job, diagnosis and status" jq -e '.result == "failed" and .exit_status == 1 and .job.state == "failed" and .job.first_failure.rank == 2 and .diagnosis.summary.rank == 2' <<<"$json"
id=$(jq -r .job.id <<<"$json")
ty wait "$id" >/dev/null 2>&1
check_eq "wait on a failed job: exit 1" 1 $?
check "diagnosis command names rank 2" grep -q "rank 2" <<<"$(ty diagnosis "$id")"

# --follow streams the merged log until the end, then --wait gives the result.
out=$(ty submit - --follow --wait <<<'{"name":"chatty","command":["sh","-c","for i in 1 2 3; do echo \"r$RANK i$i\"; sleep 0.1; done; exit $RANK"],"procs_per_node":2}')
check_eq "follow+wait of a failing job: exit 1" 1 $?
check_eq "every line of both ranks followed" 6 "$(grep -c '^\[rank [01]\] r[01] i[123]$' <<<"$out")"
check "log lines come before the result" test "$(grep -n 'failed' <<<"$out" | head -1 | cut -d: -f1)" -gt "$(grep -n 'i3' <<<"$out" | tail -1 | cut -d: -f1)"
out=$(ty submit - --follow -o json <<<'{"name":"chatty-json","command":["sh","-c","echo one; echo two"]}')
check "--follow -o json: NDJSON log lines" jq -e -s 'length == 2 and .[1].line == "two"' <<<"$out"

# Cancelled: `wait` in the background exits 3 when the job is cancelled with `cancel`.
id=$(ty submit - <<<'{"name":"long","command":["sleep","60"],"procs_per_node":2}')
wait_state "$id" running
ty wait "$id" >"$WORK/w.out" 2>&1 &
waiter=$!
check "cancel exits 0" ty cancel "$id"
wait $waiter
check_eq "cancelled: exit 3" 3 $?
check "wait says cancelled" grep -q "cancelled" "$WORK/w.out"
check "a cancel someone asked for gets no diagnosis block" test -z "$(grep -E "first failure|cause:|diagnosis:" "$WORK/w.out")"
check "cancel -o json of a cancelled job is a JSON problem (409)" jq -e '.status == 409' <<<"$(ty cancel "$id" -o json 2>/dev/null)"

# A queued job cancelled before it starts.
id=$(ty submit - <<<'{"name":"held","command":["true"],"suspend":true}')
check_eq "cancel a held job" "job $id: cancelled" "$(ty cancel "$id")"
ty wait "$id" -q >/dev/null
check_eq "its wait: exit 3" 3 $?

# Timeout: the job goes on, wait gives up with 6 after about the time given.
id=$(ty submit - <<<'{"name":"slow","command":["sleep","30"]}')
t0=$(date +%s%N)
ty wait "$id" --timeout 1s >/dev/null 2>"$WORK/e"
check_eq "wait --timeout: exit 6" 6 $?
ms=$((($(date +%s%N) - t0) / 1000000))
check "gave up after about a second ($ms ms)" test "$ms" -ge 900 -a "$ms" -lt 4000
check "says the job is still going" grep -q "still running" "$WORK/e"
ty submit - --wait --timeout 1s -o json >"$WORK/t.json" 2>/dev/null <<<'{"name":"slow2","command":["sleep","30"]}'
check_eq "submit --wait --timeout: exit 6" 6 $?
check "timeout in json mode is one document" jq -e '.exit_status == 6' "$WORK/t.json"
ty cancel "$id" >/dev/null

# Status and events for people.
id=$(jq -r .job.id <<<"$json")
ty status "$id" >"$WORK/s"
check "status shows state and reason" grep -q "^state: *failed (Failed)" "$WORK/s"
check "status shows the first failure" grep -q "^first failure: rank 2, exit code 3" "$WORK/s"
check "status has a rank table" grep -q "^RANK  *STATE  *EXIT" "$WORK/s"
check_eq "one row per rank" 4 "$(grep -cE '^[0-3]  +(failed|stopped)' "$WORK/s")"
check "events table" grep -q "rank_exited *2" <<<"$(ty events "$id")"
ty_done

#!/usr/bin/env bash
# Worker reports with the job's own token (TRAINYARD_TOKEN, given to its ranks): heartbeats
# store the metrics the worker queued and show in /health; the token reaches only its own
# job's worker routes; a failed preflight (the real trainyard-worker preflight) fails the rank
# at once, with its reason, even when the command goes on, and marks the node suspect; a
# passing one is recorded; trainyard-worker run sends heartbeats on its own.
source "$(dirname "$0")/lib.sh"
ty_start

W="$TY_BUILD/trainyard-worker"
# Each rank writes the token it was given, then waits.
a=$(job tokens 'echo "$TRAINYARD_TOKEN" > $TRAINYARD_CHECKPOINT_DIR/tok.$RANK; sleep 30' '"procs_per_node":2')
b=$(job other 'echo "$TRAINYARD_TOKEN" > $TRAINYARD_CHECKPOINT_DIR/tok; sleep 30')
for _ in $(seq 1 100); do
    [ -s "$(ckpt "$a")/tok.0" ] && [ -s "$(ckpt "$a")/tok.1" ] && [ -s "$(ckpt "$b")/tok" ] && break
    sleep 0.1
done
tok=$(cat "$(ckpt "$a")/tok.0")
check "ranks get a worker token" test -n "$tok"
check_eq "both ranks get the same job token" "$tok" "$(cat "$(ckpt "$a")/tok.1")"
as() { # as TOKEN METHOD PATH [curl args]: status only
    local t=$1 m=$2 p=$3
    shift 3
    curl -s -o /dev/null -w '%{http_code}' -X "$m" -H "Authorization: Bearer $t" -H 'Content-Type: application/json' "$@" "$URL$p"
}
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
HB="{\"time\":\"$now\",\"step\":5,\"metrics\":[{\"name\":\"gpu_mem_gb\",\"step\":5,\"value\":71.5,\"time\":\"$now\"},{\"name\":\"grad_norm_spike\",\"step\":5,\"value\":null}],\"dropped\":3}"
r=$(curl -s -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "$HB" "$URL/v1/jobs/$a/ranks/0/heartbeat")
check_eq "heartbeat accepted" 2 "$(echo "$r" | jq .accepted)"
check_eq "heartbeat metric stored" 71.5 "$(api GET "/v1/jobs/$a/metrics?name=gpu_mem_gb" | jq '.series[0].points[0].value')"
check_eq "null is NaN" nan "$(api GET "/v1/jobs/$a/metrics?name=grad_norm_spike" | jq -r '.series[0].points[0].value')"
check_eq "heartbeat retried: stored once" 2 "$(curl -s -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "$HB" "$URL/v1/jobs/$a/ranks/0/heartbeat" >/dev/null; api GET "/v1/jobs/$a/metrics?name=gpu_mem_gb" | jq '.series[0].count + 1')"
for _ in $(seq 1 30); do
    h=$(api GET "/v1/jobs/$a/health")
    [ "$(echo "$h" | jq '.ranks[0].heartbeat_step')" = 5 ] && break
    sleep 0.1
done
check_eq "health: heartbeat step" 5 "$(echo "$h" | jq '.ranks[0].heartbeat_step')"
check_eq "health: dropped metrics" 6 "$(echo "$h" | jq '.ranks[0].metrics_dropped')"
check "health: heartbeat time" test "$(echo "$h" | jq -r '.ranks[0].heartbeat_time')" != null
check_eq "health: alive" "true true" "$(echo "$h" | jq -r '[.ranks[].alive] | map(tostring) | join(" ")')"
check_eq "health: ok" ok "$(echo "$h" | jq -r .status)"

# Scopes: the worker token reaches only its own job's worker routes.
other=$(cat "$(ckpt "$b")/tok")
check_eq "other job's token: 403" 403 "$(as "$other" POST "/v1/jobs/$a/ranks/0/heartbeat" -d '{}')"
check_eq "worker token cannot read jobs" 403 "$(as "$tok" GET /v1/jobs)"
check_eq "worker token cannot read its own job" 403 "$(as "$tok" GET "/v1/jobs/$a")"
check_eq "worker token cannot cancel" 403 "$(as "$tok" POST "/v1/jobs/$a/cancel")"
check_eq "no token: 401" 401 "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' "$URL/v1/jobs/$a/ranks/0/heartbeat")"
reader=$(api POST /v1/tokens -H 'Content-Type: application/json' -d '{"name":"r","scope":"read"}' | jq -r .token)
check_eq "read token: 403" 403 "$(as "$reader" POST "/v1/jobs/$a/ranks/0/heartbeat" -d '{}')"
check_eq "submit token: 403" 403 "$(as "$(api POST /v1/tokens -H 'Content-Type: application/json' -d '{"name":"s","scope":"submit"}' | jq -r .token)" POST "/v1/jobs/$a/ranks/0/heartbeat" -d '{}')"
check_eq "admin may report" 200 "$(status POST "/v1/jobs/$a/ranks/1/heartbeat" -H 'Content-Type: application/json' -d '{"step":1}')"
check_eq "no such rank" 404 "$(as "$tok" POST "/v1/jobs/$a/ranks/2/heartbeat" -d '{}')"
check_eq "metrics must be an array" 422 "$(as "$tok" POST "/v1/jobs/$a/ranks/0/heartbeat" -d '{"metrics":{}}')"
p=$(curl -s -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d '{"metrics":[{"name":"ok","value":1},{"name":"bad name","value":1}]}' "$URL/v1/jobs/$a/ranks/0/heartbeat")
check_eq "bad metric named by pointer" /metrics/1 "$(echo "$p" | jq -r '.errors[0].pointer')"
check_eq "nothing stored from a bad heartbeat" 0 "$(api GET "/v1/jobs/$a/metrics?name=ok" | jq '.series | length')"
check_eq "bad JSON" 400 "$(as "$tok" POST "/v1/jobs/$a/ranks/0/heartbeat" -d '{')"
check_eq "bad preflight" 422 "$(as "$tok" POST "/v1/jobs/$a/ranks/0/preflight" -d '{"ok":"yes"}')"
api POST "/v1/jobs/$a/cancel" >/dev/null
api POST "/v1/jobs/$b/cancel" >/dev/null
wait_state "$a" cancelled
check_eq "token revoked when the job ends" 401 "$(as "$tok" POST "/v1/jobs/$a/ranks/0/heartbeat" -d '{}')"
check_eq "an ended job takes no reports" 409 "$(status POST "/v1/jobs/$a/ranks/0/heartbeat" -H 'Content-Type: application/json' -d '{}')"

if [ -x "$W" ]; then
    # A failed preflight fails the job at once, although the command would go on for 30 s.
    t0=$(date +%s)
    pf=$(job preflight "$W preflight --shm-min 1000Ti; sleep 30")
    check "preflight: job fails" wait_state "$pf" failed 20
    check "preflight: fast" test $(($(date +%s) - t0)) -lt 15
    j=$(api GET "/v1/jobs/$pf")
    check_eq "preflight: reason" PreflightFailed "$(echo "$j" | jq -r .reason)"
    check "preflight: message names the check" grep -q "container.shm" <<<"$(echo "$j" | jq -r .message)"
    check_eq "preflight: rank reason" PreflightFailed "$(echo "$j" | jq -r '.ranks[0].reason')"
    check_eq "preflight: rank failed" failed "$(echo "$j" | jq -r '.ranks[0].state')"
    check_eq "preflight: event" PreflightFailed "$(api GET "/v1/jobs/$pf/events" | jq -r '.items[] | select(.type=="preflight") | .reason')"
    check_eq "preflight: node marked" "suspect PreflightFailed preflight" "$(api GET /v1/nodes/localhost/mark | jq -r '"\(.state) \(.reason) \(.source)"')"
    check_eq "preflight: health" false "$(api GET "/v1/jobs/$pf/health" | jq '.ranks[0].preflight.ok')"
    check_eq "preflight: decision blames the node" node_failure "$(api GET "/v1/jobs/$pf/diagnosis" | jq -r .decision.category)"
    api DELETE /v1/nodes/localhost/mark >/dev/null

    ok=$(job preflightok "$W preflight --shm-min 1Ki --disk-min 1Ki" )
    check "preflight passes" wait_state "$ok" succeeded 20
    check_eq "passing preflight: event" PreflightPassed "$(api GET "/v1/jobs/$ok/events" | jq -r '.items[] | select(.type=="preflight") | .reason')"
    check_eq "passing preflight: no mark" 404 "$(status GET /v1/nodes/localhost/mark)"

    # trainyard-worker run: heartbeats on its own, with the final one after the command ended.
    run=$(job run "$W run --heartbeat 200ms -- sh -c 'for i in 1 2 3 4 5; do echo step=\$i loss=2.\$i; sleep 0.2; done'")
    check "run: succeeds" wait_state "$run" succeeded 20
    h=$(api GET "/v1/jobs/$run/health")
    check_eq "run: heartbeats reached the daemon" 5 "$(echo "$h" | jq '.ranks[0].heartbeat_step')"
    check_eq "run: loss from the log, not twice" 5 "$(api GET "/v1/jobs/$run/metrics?name=loss" | jq '.series[0].count')"
else
    ty_skip_part "no trainyard-worker in $TY_BUILD"
fi
ty_done

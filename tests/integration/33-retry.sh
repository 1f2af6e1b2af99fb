#!/usr/bin/env bash
# Restarts decided by the diagnosis: an NCCL timeout restarts under restart.on, a CUDA OOM
# (deterministic) does not under on_failure unless `on` asks for it, a preemption restarts on
# its own budget (and ends `preempted` when that is spent), an Xid that blames the node
# restarts avoiding it (on one machine: the decision, the event and the node's mark). A
# restarted rank gets TRAINYARD_RESTART_COUNT and TRAINYARD_CHECKPOINT_DIR.
source "$(dirname "$0")/lib.sh"
ty_start

# On the first attempt, print $1 and exit 1; later attempts report their environment.
first_fails() {
    printf '%s' "echo \"attempt=\$TRAINYARD_RESTART_COUNT ckpt=\$TRAINYARD_CHECKPOINT_DIR\"
if [ \"\$TRAINYARD_RESTART_COUNT\" = 0 ]; then echo '$1' >&2; ${2:-exit 1}; fi"
}
WD='[E501 12:10:01.123 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.'
OOM='torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.'
XID='[812345.678901] NVRM: Xid (PCI:0000:53:00): 79, pid=4242, name=python3, GPU has fallen off the bus.'
SPOT='node-agent: EC2 spot interruption notice received, instance terminates at 2024-05-01T12:02:00Z'

nccl=$(job nccl "$(first_fails "$WD")" "\"procs_per_node\":2,\"restart\":{\"on\":[\"nccl_timeout\"],\"max_restarts\":2},\"checkpoint\":{\"path\":\"$WORK/ckpt\"}")
oom=$(job oom "$(first_fails "$OOM")" '"restart":{"policy":"on_failure","max_restarts":3}')
oom_asked=$(job oomasked "$(first_fails "$OOM")" '"restart":{"on":["deterministic"],"max_restarts":1}')
xid=$(job xid "$(first_fails "$XID")" '"restart":{"policy":"on_failure","max_restarts":1}')
xid_stay=$(job xidstay "$(first_fails "$XID")" '"restart":{"policy":"on_failure","max_restarts":1,"avoid_failed_nodes":false}')
spot=$(job spot "$(first_fails "$SPOT" 'kill -TERM $$')" '"restart":{"policy":"on_failure"}')
spot_spent=$(job spotspent "$(first_fails "$SPOT" 'kill -TERM $$')" '"restart":{"policy":"on_failure","max_preemptions":0}')
listed=$(job listed 'exit 42' '"restart":{"policy":"exit_code","exit_codes":[42],"max_restarts":0}')
for id in $nccl $oom $oom_asked $xid $xid_stay $spot $spot_spent $listed; do
    check "job $id ended" wait_end "$id"
done

# NCCL timeout: restarted once, then succeeded, with the restart's environment.
j=$(api GET "/v1/jobs/$nccl")
check_eq "nccl: succeeded after a restart" "succeeded 1" "$(echo "$j" | jq -r '"\(.state) \(.restarts)"')"
check_eq "nccl: first failure kept" nccl_timeout "$(echo "$j" | jq -r .first_failure.kind)"
d=$(api GET "/v1/jobs/$nccl/diagnosis?attempt=0")
check_eq "nccl: decision" "true nccl" "$(echo "$d" | jq -r '"\(.decision.restart) \(.decision.category)"')"
check_eq "nccl: two attempts" 2 "$(api GET "/v1/jobs/$nccl/diagnosis" | jq '.attempts | length')"
check_eq "nccl: the last attempt is clean" null "$(api GET "/v1/jobs/$nccl/diagnosis" | jq .summary)"
wait_logs_complete "$nccl"
logs=$(api GET "/v1/jobs/$nccl/logs")
check "nccl: restart count in the environment" grep -q "attempt=1 ckpt=$WORK/ckpt" <<<"$logs"
check "nccl: decision in the timeline" grep -q "nccl: restart 1 of 2" <<<"$(api GET "/v1/jobs/$nccl/events" | jq -r '.items[] | select(.type=="restart_decision") | .message')"

# exit_code policy with its budget spent: 42 is in the list, only the restarts are used up.
check_eq "exit_code: says 42 is listed and the budget spent" "exit code 42 is in restart.exit_codes (restarts used up)" "$(api GET "/v1/jobs/$listed/diagnosis" | jq -r .decision.reason)"

# CUDA OOM: deterministic; on_failure does not restart it, `on` can.
j=$(api GET "/v1/jobs/$oom")
check_eq "oom: failed without restart" "failed 0" "$(echo "$j" | jq -r '"\(.state) \(.restarts)"')"
check_eq "oom: reason" CudaOutOfMemory "$(echo "$j" | jq -r .reason)"
check_eq "oom: decision" "false deterministic" "$(api GET "/v1/jobs/$oom/diagnosis" | jq -r '"\(.decision.restart) \(.decision.category)"')"
check "oom: why" grep -q "deterministic failures are not restarted" <<<"$(api GET "/v1/jobs/$oom/events" | jq -r '.items[] | select(.type=="restart_decision") | .message')"
check_eq "oom asked: restarted and succeeded" "succeeded 1" "$(api GET "/v1/jobs/$oom_asked" | jq -r '"\(.state) \(.restarts)"')"

# Xid 79: the node is to blame; the restart avoids it, the node is marked suspect.
j=$(api GET "/v1/jobs/$xid")
check_eq "xid: restarted and succeeded" "succeeded 1" "$(echo "$j" | jq -r '"\(.state) \(.restarts)"')"
d=$(api GET "/v1/jobs/$xid/diagnosis?attempt=0")
check_eq "xid: cause" xid "$(echo "$d" | jq -r .summary.cause)"
check_eq "xid: decision" "node_failure localhost" "$(echo "$d" | jq -r '"\(.decision.category) \(.decision.avoid_node)"')"
check_eq "xid: node_avoided event" localhost "$(api GET "/v1/jobs/$xid/events" | jq -r '.items[] | select(.type=="node_avoided") | .message')"
m=$(api GET /v1/nodes/localhost/mark)
check_eq "xid: node marked suspect" "suspect GPUXidError diagnosis" "$(echo "$m" | jq -r '"\(.state) \(.reason) \(.source)"')"
check "xid: mark names a job" test "$(echo "$m" | jq -r .job_id)" = "$xid" -o "$(echo "$m" | jq -r .job_id)" = "$xid_stay"
check_eq "xid: avoid_failed_nodes false keeps the node" null "$(api GET "/v1/jobs/$xid_stay/diagnosis?attempt=0" | jq .decision.avoid_node)"
check_eq "xid: health shows the mark" suspect "$(api GET "/v1/jobs/$xid/health" | jq -r .nodes.localhost.mark.state)"

# Preemption: its own budget.
check_eq "spot: restarted and succeeded" "succeeded 1" "$(api GET "/v1/jobs/$spot" | jq -r '"\(.state) \(.restarts)"')"
check_eq "spot: category" preemption "$(api GET "/v1/jobs/$spot/diagnosis?attempt=0" | jq -r .decision.category)"
j=$(api GET "/v1/jobs/$spot_spent")
check_eq "spot: budget spent ends preempted" "preempted 0" "$(echo "$j" | jq -r '"\(.state) \(.restarts)"')"

# Marks: admins set and remove them; others may only read them.
check_eq "mark: read scope cannot set" 403 "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $(api POST /v1/tokens -H 'Content-Type: application/json' -d '{"name":"reader","scope":"read"}' | jq -r .token)" -d '{"state":"bad","reason":"x"}' "$URL/v1/nodes/localhost/mark")"
check_eq "mark: bad state" 422 "$(status POST /v1/nodes/localhost/mark -H 'Content-Type: application/json' -d '{"state":"broken","reason":"x"}')"
check_eq "mark: admin sets bad" bad "$(api POST /v1/nodes/localhost/mark -H 'Content-Type: application/json' -d '{"state":"bad","reason":"Replace","message":"fan failure"}' | jq -r .state)"
check "mark: listed by GET /v1/nodes without a cluster" jq -e '.items==[.items[]|select(.name=="localhost" and .marked and .mark.state=="bad" and .mark.message=="fan failure")] and (.items|length==1)' <<<"$(api GET /v1/nodes)"
check_eq "mark: admin removes" 204 "$(status DELETE /v1/nodes/localhost/mark)"
check_eq "mark: the local machine is still listed, no longer marked" "localhost false" \
    "$(api GET /v1/nodes | jq -r '.items[] | "\(.name) \(.marked)"')"
check_eq "mark: gone" 404 "$(status GET /v1/nodes/localhost/mark)"
check "mark: audited" grep -q "node.unmark" <<<"$(api GET '/v1/audit?target=node/localhost' | jq -r '.items[].action')"
ty_done

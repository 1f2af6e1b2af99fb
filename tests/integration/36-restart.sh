#!/usr/bin/env bash
# Diagnosis across a daemon crash: findings and metrics are stored as they are found, so a
# kill -9 loses none of them; the restarted daemon adopts the running job, and when the job
# then fails its verdict still names the cause logged before the crash (the attempt's stored
# lines are replayed for the summary).
source "$(dirname "$0")/lib.sh"
ty_start

OOM='torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.'
WD='[E501 12:10:01.123 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.'
# Rank 1 steps, runs out of memory at once and lingers; rank 0 steps and waits for its files
# (go, in its checkpoint directory) before it times out in NCCL and exits: the crash happens in
# between.
SCRIPT="for i in 1 2 3; do echo \"step=\$i loss=2.\$i\"; done
if [ \$RANK = 1 ]; then echo '$OOM' >&2; sleep 60; fi
while [ ! -e \$TRAINYARD_CHECKPOINT_DIR/go ]; do sleep 0.1; done
echo '$WD' >&2; exit 1"
id=$(submit "{\"name\":\"crash\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$SCRIPT" '$s')],\"procs_per_node\":2}" | jq -r .id)
wait_state "$id" running
for _ in $(seq 1 50); do
    api GET "/v1/jobs/$id/diagnosis" | jq -e '[.findings[] | select(.kind=="cuda_oom")] | length == 1' >/dev/null && break
    sleep 0.1
done
check_eq "OOM finding stored while running" cuda_oom "$(api GET "/v1/jobs/$id/diagnosis" | jq -r '.findings[0].kind')"
check_eq "samples stored while running" 3 "$(api GET "/v1/jobs/$id/metrics?name=loss&rank=0" | jq '.series[0].count')"

ty_kill9
check_eq "ranks outlive the daemon" 2 "$(pgrep -f "trainyard shim --dir $WORK" | wc -l)"
ty_restart
check_eq "adopted" running "$(api GET "/v1/jobs/$id" | jq -r .state)"
check_eq "findings kept across the crash" cuda_oom "$(api GET "/v1/jobs/$id/diagnosis" | jq -r '.findings[0].kind')"
check_eq "samples kept across the crash" 3 "$(api GET "/v1/jobs/$id/metrics?name=loss&rank=1" | jq '.series[0].count')"
touch "$(ckpt "$id")/go"
check "the job fails" wait_state "$id" failed 30
j=$(api GET "/v1/jobs/$id")
check_eq "the verdict names the cause from before the crash" CudaOutOfMemory "$(echo "$j" | jq -r .reason)"
check_eq "rank 1" 1 "$(echo "$j" | jq .first_failure.rank)"
d=$(api GET "/v1/jobs/$id/diagnosis")
check_eq "the NCCL timeout after the restart is a consequence" consequence "$(echo "$d" | jq -r '[.findings[] | select(.kind=="nccl_timeout")][0].role')"
check_eq "no finding twice" 1 "$(echo "$d" | jq '[.findings[] | select(.kind=="cuda_oom")] | length')"
check_eq "no sample twice" 3 "$(api GET "/v1/jobs/$id/metrics?name=loss&rank=1" | jq '.series[0].count')"
ev=$(api GET "/v1/jobs/$id/events")
check_eq "adoption adds no second rank_started" "0 1" "$(echo "$ev" | jq -r '[.items[] | select(.type=="rank_started") | .rank] | map(tostring) | join(" ")')"
check_eq "event times never go back in seq order" true "$(echo "$ev" | jq '[.items[].time] | . == sort')"
check_eq "rank_started says which rank and process" "rank 0 started (pid" "$(echo "$ev" | jq -r '[.items[] | select(.type=="rank_started")][0].message[0:19]')"
check "the replay is counted" grep -q "^trainyard_diagnosis_replays_total 1" <<<"$(api GET /metrics)"
ty_done

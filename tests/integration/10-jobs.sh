#!/usr/bin/env bash
# Jobs end to end in the local executor: success, first failure, cancel, restart policy,
# deadline, suspend/resume, delete, listing.
source "$(dirname "$0")/lib.sh"
ty_start

# A 4-rank job that succeeds; each rank sees the launcher's environment.
ENVCHECK='echo "R=$RANK L=$LOCAL_RANK W=$WORLD_SIZE N=$NODE_RANK M=$MASTER_ADDR:$MASTER_PORT P=$PET_NNODES/$PET_NPROC_PER_NODE/$PET_NODE_RANK J=$TRAINYARD_JOB_ID C=$TRAINYARD_CHECKPOINT_DIR"'
job=$(submit "{\"name\":\"ok4\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$ENVCHECK" '$s')],\"nodes\":2,\"procs_per_node\":2,\"labels\":{\"team\":\"nlp\"}}")
id=$(echo "$job" | jq -r .id)
check_eq "submit answers queued" queued "$(echo "$job" | jq -r .state)"
check_eq "submit lists 4 pending ranks" 4 "$(echo "$job" | jq '[.ranks[] | select(.state=="pending")] | length')"
check "4-rank job succeeds" wait_state "$id" succeeded
j=$(api GET "/v1/jobs/$id")
check_eq "every rank exited 0" "0,0,0,0" "$(echo "$j" | jq -r '[.ranks[].exit_code] | map(tostring) | join(",")')"
check_eq "ranks succeeded" 4 "$(echo "$j" | jq '[.ranks[] | select(.state=="succeeded")] | length')"
check "ranks have pids" test "$(echo "$j" | jq '[.ranks[] | select(.pid > 0)] | length')" = 4
check "no first failure" test "$(echo "$j" | jq .first_failure)" = null
check "timestamps set" test "$(echo "$j" | jq '[.started_at,.finished_at] | map(select(. != null)) | length')" = 2
check "logs complete" wait_logs_complete "$id"
logs=$(api GET "/v1/jobs/$id/logs")
check "rank 3 environment" grep -q "\[rank 3\] R=3 L=1 W=4 N=1 M=127.0.0.1:[0-9]* P=2/2/1 J=$id" <<<"$logs"
check "rank 0 environment" grep -q "\[rank 0\] R=0 L=0 W=4 N=0" <<<"$logs"
check "a job without checkpoint.path gets its own checkpoint directory" grep -q "\[rank 0\] .* C=$DATA/jobs/$id/checkpoints\$" <<<"$logs"
ck=$(submit "{\"name\":\"ckpt\",\"command\":[\"sh\",\"-c\",\"echo C=\$TRAINYARD_CHECKPOINT_DIR\"],\"checkpoint\":{\"path\":\"/fsx/ckpt/run-7\"}}" | jq -r .id)
check "checkpoint job ends" wait_state "$ck" succeeded
check "checkpoint.path is the checkpoint directory when given" grep -q "^\[rank 0\] C=/fsx/ckpt/run-7\$" <<<"$(wait_logs_complete "$ck"; api GET "/v1/jobs/$ck/logs")"
port0=$(grep -o 'M=127.0.0.1:[0-9]*' <<<"$logs" | sort -u | wc -l)
check_eq "one MASTER_PORT for all ranks" 1 "$port0"
events=$(api GET "/v1/jobs/$id/events" | jq -r '[.items[].type] | join(",")')
check "timeline" grep -q '^accepted,starting,.*running.*succeeded$' <<<"$events"

# Rank 2 exits 3: the job fails, rank 2 is the first failure, the others are stopped at once.
job=$(submit '{"name":"fail","command":["sh","-c","if [ $RANK = 2 ]; then sleep 0.5; exit 3; fi; exec sleep 60"],"procs_per_node":4}')
id=$(echo "$job" | jq -r .id)
t0=$(date +%s)
check "failing job fails" wait_state "$id" failed
j=$(api GET "/v1/jobs/$id")
check_eq "first failure rank" 2 "$(echo "$j" | jq .first_failure.rank)"
check_eq "first failure exit code" 3 "$(echo "$j" | jq .first_failure.exit_code)"
check_eq "reason (from the diagnosis)" Failed "$(echo "$j" | jq -r .reason)"
check "message names the rank" grep -q "rank 2 failed (exit code 3)" <<<"$(echo "$j" | jq -r .message)"
for _ in $(seq 1 50); do
    left=$(api GET "/v1/jobs/$id" | jq '[.ranks[] | select(.state=="running")] | length')
    [ "$left" = 0 ] && break
    sleep 0.1
done
check_eq "other ranks stopped" 3 "$(api GET "/v1/jobs/$id" | jq '[.ranks[] | select(.state=="stopped")] | length')"
check "stopped well before their sleep ended" test $(($(date +%s) - t0)) -lt 15

# Cancel a running job.
id=$(submit '{"name":"cancelme","command":["sleep","60"],"procs_per_node":2}' | jq -r .id)
check "running before cancel" wait_state "$id" running
c=$(api POST "/v1/jobs/$id/cancel")
check "cancel answers cancelling" grep -q '"state":"cancell' <<<"$c"
check "cancelled" wait_state "$id" cancelled
check_eq "ranks stopped by cancel" 2 "$(api GET "/v1/jobs/$id" | jq '[.ranks[] | select(.state=="stopped")] | length')"
check_eq "cancel again is a conflict" 409 "$(status POST "/v1/jobs/$id/cancel")"

# Restart policy: the first attempt fails, the restart succeeds.
id=$(submit '{"name":"retry","command":["sh","-c","[ $TRAINYARD_RESTART_COUNT -ge 1 ] || exit 7"],"procs_per_node":2,"restart":{"policy":"on_failure","max_restarts":2}}' | jq -r .id)
check "restarted job succeeds" wait_state "$id" succeeded
j=$(api GET "/v1/jobs/$id")
check_eq "one restart" 1 "$(echo "$j" | jq .restarts)"
check_eq "first failure kept" 7 "$(echo "$j" | jq .first_failure.exit_code)"
check "restarting in timeline" grep -q restarting <<<"$(api GET "/v1/jobs/$id/events" | jq -r '.items[].type')"

# exit_code policy: 1 is not a retryable code, so no restart.
id=$(submit '{"name":"noretry","command":["sh","-c","exit 1"],"restart":{"policy":"exit_code","max_restarts":3}}' | jq -r .id)
check "non-retryable exit fails" wait_state "$id" failed
check_eq "no restart for exit 1" 0 "$(api GET "/v1/jobs/$id" | jq .restarts)"

# Deadline.
id=$(submit '{"name":"slow","command":["sleep","30"],"deadline_seconds":1}' | jq -r .id)
check "deadline fails the job" wait_state "$id" failed 20
check_eq "deadline reason" DeadlineExceeded "$(api GET "/v1/jobs/$id" | jq -r .reason)"

# Suspend and resume.
id=$(submit '{"name":"held","command":["true"],"suspend":true}' | jq -r .id)
sleep 0.5
check_eq "suspended job stays queued" queued "$(api GET "/v1/jobs/$id" | jq -r .state)"
r=$(api POST "/v1/jobs/$id/resume")
check_eq "resume answers the job, no longer suspended" "$id false" "$(echo "$r" | jq -r '"\(.id) \(.suspended)"')"
check "resume: the answer's reason is not Suspended any more" test "$(echo "$r" | jq -r .reason)" != Suspended
check "resumed job runs" wait_state "$id" succeeded
check_eq "resume twice is a conflict" 409 "$(status POST "/v1/jobs/$id/resume")"

# Capacity: jobs that do not fit wait in queued, by priority then age, and never half-start.
big=$(submit '{"name":"big","command":["sleep","2"],"procs_per_node":6}' | jq -r .id)
check "big runs" wait_state "$big" running
small=$(submit '{"name":"small","command":["true"],"procs_per_node":6}' | jq -r .id)
urgent=$(submit '{"name":"urgent","command":["sleep","0.5"],"procs_per_node":6,"priority":10}' | jq -r .id)
sleep 0.5
check_eq "small waits for slots" queued "$(api GET "/v1/jobs/$small" | jq -r .state)"
check_eq "no rank of a waiting job started" 0 "$(api GET "/v1/jobs/$small" | jq '[.ranks[] | select(.state!="pending")] | length')"
check "urgent runs" wait_state "$urgent" succeeded
t_urgent=$(api GET "/v1/jobs/$urgent" | jq -r .started_at)
check "small runs after" wait_state "$small" succeeded
t_small=$(api GET "/v1/jobs/$small" | jq -r .started_at)
check "higher priority started first, though submitted later" test "$t_urgent" \< "$t_small"

# Listing: filters and cursor pagination.
check_eq "filter by state" "$(api GET '/v1/jobs?state=cancelled' | jq '.items | length')" 1
check_eq "filter by selector" ok4 "$(api GET '/v1/jobs?selector=team%3Dnlp' | jq -r '.items[0].name')"
check_eq "filter by name" 1 "$(api GET '/v1/jobs?name=retry' | jq '.items | length')"
page1=$(api GET '/v1/jobs?limit=3')
cursor=$(echo "$page1" | jq -r .next_cursor)
page2=$(api GET "/v1/jobs?limit=3&cursor=$cursor")
check "pages do not overlap" test -z "$(comm -12 <(echo "$page1" | jq -r '.items[].id' | sort) <(echo "$page2" | jq -r '.items[].id' | sort))"
check_eq "newest first" urgent "$(echo "$page1" | jq -r '.items[0].name')"
check_eq "bad state filter" 400 "$(status GET '/v1/jobs?state=done')"
check_eq "bad selector" 400 "$(status GET '/v1/jobs?selector=a%20in%20b')"

# Delete: finished jobs only, with everything they own.
check_eq "delete finished job" 204 "$(status DELETE "/v1/jobs/$small")"
check_eq "deleted job is gone" 404 "$(status GET "/v1/jobs/$small")"
check "its files are gone" test ! -d "$DATA/jobs/$small"
long=$(submit '{"name":"long","command":["sleep","30"]}' | jq -r .id)
wait_state "$long" running
check_eq "delete a running job is a conflict" 409 "$(status DELETE "/v1/jobs/$long")"
api POST "/v1/jobs/$long/cancel" >/dev/null
ty_done

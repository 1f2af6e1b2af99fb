#!/usr/bin/env bash
# The ranks of a job find each other through the daemon with their job-bound tokens: keys (with
# waiting), barriers (with the missing ranks named on timeout), scoped to the job and attempt.
# Then the default demo job: the reference trainer on 4 ranks, averaging gradients over
# libfabric after a rendezvous through the daemon, ends with identical weights on every rank.
source "$(dirname "$0")/lib.sh"
ty_start

# Rank 0 publishes an address; rank 1 waits for it; both meet at a barrier.
SCRIPT='R="$TRAINYARD_URL/v1/jobs/$TRAINYARD_JOB_ID/rendezvous"; A="Authorization: Bearer $TRAINYARD_TOKEN"
if [ "$RANK" = 0 ]; then sleep 1; curl -sf -X PUT -H "$A" -H "Content-Type: application/json" -d "{\"value\":\"10.0.0.$RANK:29500\"}" "$R/master" >/dev/null; fi
echo "got $(curl -sf -H "$A" "$R/master?wait=20")"
curl -sf -X POST -H "$A" -H "Content-Type: application/json" -d "{\"rank\":$RANK,\"world_size\":2,\"timeout_seconds\":20}" "$R/barriers/ready"
echo'
id=$(submit "{\"name\":\"meet\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$SCRIPT" '$s')],\"procs_per_node\":2}" | jq -r .id)
check "ranks met" wait_state "$id" succeeded 40
wait_logs_complete "$id"
logs=$(api GET "/v1/jobs/$id/logs?format=ndjson" | jq -r .line)
check_eq "both ranks read the key" 2 "$(grep -c '"value":"10.0.0.0:29500"' <<<"$logs")"
check_eq "both passed the barrier" 2 "$(grep -c '"arrived":\[0,1\]' <<<"$logs")"

# A barrier with a rank that never comes: the others learn which one, within the timeout.
SCRIPT='R="$TRAINYARD_URL/v1/jobs/$TRAINYARD_JOB_ID/rendezvous"; A="Authorization: Bearer $TRAINYARD_TOKEN"
[ "$RANK" = 2 ] && exec sleep 30
curl -s -X POST -H "$A" -H "Content-Type: application/json" -d "{\"rank\":$RANK,\"world_size\":3,\"timeout_seconds\":1}" "$R/barriers/b"; echo'
id2=$(submit "{\"name\":\"stuck\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$SCRIPT" '$s')],\"procs_per_node\":3}" | jq -r .id)
wait_state "$id2" running
sleep 4
answers=$(api GET "/v1/jobs/$id2/logs?format=ndjson&stream=stdout" | jq -r .line)
check_eq "timeout names the missing rank" "[2]" "$(grep -m1 missing_ranks <<<"$answers" | jq -c .missing_ranks)"
check "timeout is a 504 problem" grep -q '"status":504' <<<"$answers"
api POST "/v1/jobs/$id2/cancel" >/dev/null

# A worker token reaches only its own job's rendezvous; keys are per attempt.
SCRIPT='echo "tok=$TRAINYARD_TOKEN"; sleep 30'
id3=$(submit "{\"name\":\"holder\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$SCRIPT" '$s')]}" | jq -r .id)
wait_state "$id3" running
sleep 0.5
wt=$(api GET "/v1/jobs/$id3/logs" | grep -o 'tok=[^ ]*' | cut -d= -f2)
put() { curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $1" -H 'Content-Type: application/json' -d '{"value":"v"}' "$URL/v1/jobs/$2/rendezvous/k"; }
check_eq "own job" 201 "$(put "$wt" "$id3")"
check_eq "another job is forbidden" 403 "$(put "$wt" "$id")"
check_eq "bad key name" 400 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $wt" "$URL/v1/jobs/$id3/rendezvous/a%20b")"
check_eq "unset key without wait is 404" 404 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $wt" "$URL/v1/jobs/$id3/rendezvous/nothing")"
api POST "/v1/jobs/$id3/cancel" >/dev/null

# The demo job (examples/reference-trainer.json), shortened: 4 ranks, identical weights.
spec=$(jq '.args = ["--steps","40","--checkpoint-every","20","--log-every","10","--seed","7"] | .checkpoint.path = "'"$WORK"'/ckpt"' "$TY_SRC/examples/reference-trainer.json")
id4=$(submit "$spec" | jq -r .id)
check "reference trainer succeeds on 4 ranks" wait_state "$id4" succeeded 120
wait_logs_complete "$id4"
sums=$(api GET "/v1/jobs/$id4/logs?q=weights+sha256&format=ndjson" | jq -r .line | grep -o 'sha256 [0-9a-f]*' | sort -u)
check_eq "4 ranks reported weights" 4 "$(api GET "/v1/jobs/$id4/logs?q=weights+sha256&format=ndjson" | jq -s length)"
check_eq "every rank holds the same weights" 1 "$(echo "$sums" | wc -l)"
check "loss is logged in the Trainer format" grep -q "'loss':" <<<"$(api GET "/v1/jobs/$id4/logs?rank=0&q=loss")"
check "checkpoints written where the spec said" test -n "$(ls "$WORK/ckpt" 2>/dev/null)"
ty_done

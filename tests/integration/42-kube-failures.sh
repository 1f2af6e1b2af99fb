#!/bin/bash
# 42-kube-failures: what users see when pods fail on Kubernetes. A 4-node PyTorchJob whose
# rank 2 is OOMKilled fails with a first failure naming the rank, the pod, the node and
# OOMKilled; a container restarted in place keeps the crashed run's last lines (previous=true)
# and its rank counts the restart; a lost node's pod is re-created elsewhere by the operator and
# the job runs again as a new attempt. On a real control plane (kubesim's 4 nodes of 8 GPUs):
# no pod outlives a failed job, whatever the manifest's cleanPodPolicy, so the next job gets the
# GPUs.
source "$(dirname "$0")/kubelib.sh"
cluster_start
ty_start --executor kubernetes --kubeconfig "$KC"

# ---- OOMKilled
id=$(submit_id '{"name":"oom","image":"pytorch/pytorch:2.7","nodes":4,
  "kubernetes":{"annotations":{"testserver.trainyard.io/oom-ranks":"2"}}}')
eventually "a job with an OOMKilled pod fails" 60 state_is "$id" failed
job=$(api GET "/v1/jobs/$id")
ff=$(jq -c .first_failure <<<"$job")
check_eq "the first failure names rank 2" "2" "$(jq -r .rank <<<"$ff")"
check_eq "and OOMKilled with exit code 137" "OOMKilled 137" "$(jq -r '"\(.reason) \(.exit_code)"' <<<"$ff")"
check_eq "and its pod" "ty-$id-worker-1" "$(jq -r .pod <<<"$ff")"
check_eq "and its node" "$(jq -r '.ranks[2].node' <<<"$job")" "$(jq -r .node <<<"$ff")"
check "a node is named" jq -e '.node|startswith("ip-10-0-")' <<<"$ff"
check_eq "the job's reason is the pod's" "OOMKilled" "$(jq -r .reason <<<"$job")"
check "its message has the operator's words and the pod's" jq -e '.message|contains("failed because 1 Worker replica(s) failed") and contains("pod ty-'"$id"'-worker-1 on node")' <<<"$job"
check_eq "the rank itself is failed" "failed OOMKilled" "$(jq -r '.ranks[2]|"\(.state) \(.reason)"' <<<"$job")"
check "the OOM kill is on the timeline" jq -e '[.items[]|select(.type=="rank_exited" and .reason=="OOMKilled" and .rank==2)]|length==1' <(api GET "/v1/jobs/$id/events")

# ---- no pod outlives a failed job: its GPUs go to the next one
running_pods() { k GET "/api/v1/namespaces/$KNS/pods?labelSelector=training.kubeflow.org%2Fjob-name%3D$1" | jq '[.items[]|select(.status.phase!="Succeeded" and .status.phase!="Failed")]|length'; }
none_running() { [ "$(running_pods "$1")" = 0 ]; }
gpu=$(submit_id '{"name":"all-gpus","image":"x","nodes":4,"resources":{"gpus":8},"restart":{"policy":"never"},
  "kubernetes":{"annotations":{"testserver.trainyard.io/oom-ranks":"2","testserver.trainyard.io/run-forever":"true"}}}')
eventually "a job holding every GPU fails when rank 2 is OOM-killed" 60 state_is "$gpu" failed
check_eq "as OOMKilled" "OOMKilled" "$(job_field "$gpu" .reason)"
eventually "every other pod of the failed job is deleted" 10 none_running "ty-$gpu"
next=$(submit_id '{"name":"next","image":"x","nodes":4,"resources":{"gpus":8},"kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "so the next job gets the GPUs and runs" 30 state_is "$next" running
api POST "/v1/jobs/$next/cancel" >/dev/null
eventually "a cancelled job" 30 state_is "$next" cancelled
eventually "leaves no pod behind either" 20 none_running "ty-$next"
cat >"$WORK/keep.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: keeps-pods
  annotations: {testserver.trainyard.io/oom-ranks: "1", testserver.trainyard.io/run-forever: "true"}
spec:
  runPolicy: {cleanPodPolicy: None}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template: {spec: {containers: [{name: pytorch, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]}}
    Worker:
      replicas: 3
      restartPolicy: Never
      template: {spec: {containers: [{name: pytorch, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]}}
EOF
mine=$(api POST /v1/jobs -H 'Content-Type: application/yaml' --data-binary @"$WORK/keep.yaml" | jq -r .id)
eventually "a manifest with cleanPodPolicy None fails too" 60 state_is "$mine" failed
eventually "and its running pods are deleted all the same" 10 none_running keeps-pods
check_eq "without changing the user's object" "None" "$(k GET "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/keeps-pods" | jq -r .spec.runPolicy.cleanPodPolicy)"

# ---- a container restarted in place: the crashed run's last lines are kept
id2=$(submit_id '{"name":"restarts","image":"pytorch/pytorch:2.7","nodes":2,
  "restart":{"policy":"on_failure","max_restarts":3},
  "kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "the job runs" 30 state_is "$id2" running
pod="ty-$id2-worker-0"
lines() { jq -nc --arg p "$1" --argjson n "$2" '[range($n)|"\($p) line \(.)"]'; }
ctl pods/print '{"pod":"'"$pod"'","lines":'"$(lines before 20)"'}' >/dev/null
ctl pods/restart '{"pod":"'"$pod"'"}' >/dev/null
eventually "the restart is seen" 20 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$id2 | jq -e '.ranks[1].restarts==1 and .ranks[1].state==\"running\"'"
ctl pods/print '{"pod":"'"$pod"'","lines":'"$(lines after 5)"'}' >/dev/null
expect() {
    { k GET "/api/v1/namespaces/$KNS/pods/$pod/log?container=pytorch&previous=true"
      k GET "/api/v1/namespaces/$KNS/pods/$pod/log?container=pytorch"; } | sed "s/^/$pod /" >"$WORK/expected"
    grep -q "after line 4" "$WORK/expected" && tail -1 "$WORK/expected" | grep -q "training finished"
}
eventually "the new run printed everything" 20 expect
eventually "trainyard has as many of the pod's lines" 20 bash -c "test \"\$(curl -s -H 'Authorization: Bearer $TOKEN' '$URL/v1/jobs/$id2/logs?limit=100000&format=ndjson' | grep -c '\"pod\":\"$pod\"')\" = $(wc -l <"$WORK/expected")"
job_lines "$id2" | grep "^$pod " >"$WORK/actual"
check "the crashed run's last line is kept" grep -q "before line 19" "$WORK/actual"
same_lines "both runs' lines, each once" "$WORK/expected" "$WORK/actual"
ev=$(api GET "/v1/jobs/$id2/events")
check "the crash is on the timeline (137)" jq -e '[.items[]|select(.type=="rank_exited" and .rank==1 and (.message|contains("137")))]|length==1' <<<"$ev"
check_eq "the job kept running (no new attempt for an in-place restart)" "running 0" "$(job_field "$id2" '"\(.state) \(.restarts)"')"

# ---- a lost node: the operator re-creates the pod elsewhere
node=$(job_field "$id2" '.ranks[0].node')
ctl nodes/lose '{"node":"'"$node"'"}' >/dev/null
eventually "rank 0 is lost with its node" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$id2/events | jq -e '[.items[]|select(.type==\"rank_exited\" and .reason==\"NodeLost\" and .rank==0)]|length>=1'"
eventually "and runs again on another node" 60 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$id2 | jq -e '.state==\"running\" and .ranks[0].node!=\"$node\" and .ranks[0].state==\"running\"'"
check "the re-created pod counts as a restart of its rank" jq -e '.ranks[0].restarts>=1' <(api GET "/v1/jobs/$id2")
check "the first failure stays the first one (the in-place crash)" jq -e '.first_failure.rank==1 and .first_failure.exit_code==137' <(api GET "/v1/jobs/$id2")
ctl nodes/recover '{"node":"'"$node"'"}' >/dev/null
api POST "/v1/jobs/$id2/cancel" >/dev/null
eventually "cancelled" 30 state_is "$id2" cancelled

# ---- the operator's restart (ExitCode policy, exit >= 128): a new attempt of the job
id3=$(submit_id '{"name":"retry","image":"pytorch/pytorch:2.7","nodes":2,
  "restart":{"policy":"exit_code","max_restarts":2},
  "kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "it runs" 30 state_is "$id3" running
old=$(job_field "$id3" '.ranks[1].pod')
ctl pods/exit '{"pod":"ty-'"$id3"'-worker-0","exitCode":137}' >/dev/null
eventually "the Restarting condition makes a new attempt" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$id3 | jq -e '.restarts==1'"
eventually "which runs once the pod is re-created" 30 state_is "$id3" running
ev=$(api GET "/v1/jobs/$id3/events")
check "the timeline has restarting then running" jq -e '[.items[]|select(.type=="restarting" or .type=="running")|.type]|.[-2:]==["restarting","running"]' <<<"$ev"
check "the exit is recorded for rank 1" jq -e '[.items[]|select(.type=="rank_exited" and .rank==1 and (.message|contains("137")))]|length==1' <<<"$ev"
check "the new pod counts as the rank's restart" jq -e '.ranks[1].restarts==1 and .ranks[1].state=="running"' <(api GET "/v1/jobs/$id3")
api POST "/v1/jobs/$id3/cancel" >/dev/null
eventually "cancelled" 30 state_is "$id3" cancelled
ty_done

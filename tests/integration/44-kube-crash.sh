#!/bin/bash
# 44-kube-crash: the daemon killed with SIGKILL, on a real control plane. Killed right after
# submissions (some objects made, some not, some half-made), a restarted daemon creates each
# job's object exactly once: none lost, none doubled. Killed (twice) while following the logs
# of a 4-pod job, it resumes every stream where the last commit left off: the job's log equals
# the pods' own logs (read through the API server from kubesim's kubelets), no line lost or
# doubled. (Killed while the API server refuses creates: 47-kube-faults.sh.)
source "$(dirname "$0")/kubelib.sh"
cluster_start
ty_start --executor kubernetes --kubeconfig "$KC"
objects_of() { k GET "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs?labelSelector=trainyard.io%2Fjob-id%3D$1" | jq '.items|length'; }

# ---- killed right after submissions: some objects exist, some not, some half-made
ids=()
for i in 1 2 3 4 5 6 7 8; do ids+=("$(submit_id '{"name":"d'"$i"'","image":"x","nodes":2}')"); done
ty_kill9
ty_restart
for id in "${ids[@]}"; do
    eventually "job $id succeeds after the restart" 60 state_is "$id" succeeded
    check_eq "job $id has exactly one object" "1" "$(objects_of "$id")"
    check_eq "and one token Secret" "200" "$(kstatus GET "/api/v1/namespaces/$KNS/secrets/ty-$id-token")"
done
check_eq "no object was made twice" "8" "$(k GET /apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs | jq '.items|length')"
check "the restarted daemon adopted or created, never both" bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/metrics | grep -q trainyard_kube_objects_total"

# ---- killed while following logs
id=$(submit_id '{"name":"logs","image":"x","nodes":4,
  "kubernetes":{"annotations":{"testserver.trainyard.io/steps":"40","testserver.trainyard.io/line-interval-ms":"60"}}}')
stored() { api GET "/v1/jobs/$id/logs?limit=100000&format=ndjson" | wc -l; }
eventually "lines are being stored" 30 bash -c "test \$(curl -s -H 'Authorization: Bearer $TOKEN' '$URL/v1/jobs/$id/logs?limit=100000&format=ndjson' | wc -l) -gt 30"
ty_kill9
sleep 0.7 # the pods go on printing
ty_restart
eventually "more lines are stored" 30 bash -c "test \$(curl -s -H 'Authorization: Bearer $TOKEN' '$URL/v1/jobs/$id/logs?limit=100000&format=ndjson' | wc -l) -gt 90"
ty_kill9
sleep 0.5
ty_restart
eventually "the job succeeds" 60 state_is "$id" succeeded
eventually "its log is complete" 30 wait_logs_complete "$id"
for p in master-0 worker-0 worker-1 worker-2; do pod_lines "$KNS" "ty-$id-$p"; done >"$WORK/expected"
job_lines "$id" >"$WORK/actual"
check_eq "4 pods x 42 lines" "168" "$(wc -l <"$WORK/expected")"
same_lines "no line lost or doubled across two kill -9" "$WORK/expected" "$WORK/actual"
check_eq "the ranks ended once each" "succeeded succeeded succeeded succeeded" "$(job_field "$id" '[.ranks[].state]|join(" ")')"
check_eq "and the timeline says so once per rank" "4" "$(api GET "/v1/jobs/$id/events" | jq '[.items[]|select(.type=="rank_exited")]|length')"
check_eq "Kubernetes events are not repeated after restarts" "4" "$(api GET "/v1/jobs/$id/events" | jq '[.items[]|select(.reason=="SuccessfulCreatePod")]|length')"
ty_done

#!/bin/bash
# 47-kube-faults: what only the in-process test API server (tests/kube/testserver) can do, and
# a real one cannot be made to do on demand: refuse chosen requests. A create answered 503 is
# retried (with the retries on the job's timeline and in /metrics) until the job runs, with one
# object made; a daemon killed while the API server refuses every create (the jobs "starting",
# nothing made) creates each job's object exactly once after its restart.
source "$(dirname "$0")/kubelib.sh"
kube_start
ty_start --executor kubernetes --kubeconfig "$KC"
objects_of() { k GET "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs?labelSelector=trainyard.io%2Fjob-id%3D$1" | jq '.items|length'; }

# ---- a 503 on create is retried
ctl faults '{"count":2,"code":503,"reason":"ServiceUnavailable","message":"etcd leader changed","verb":"create","resource":"pytorchjobs"}' >/dev/null
id=$(submit_id '{"name":"retried","image":"x","nodes":2}')
eventually "a 503 on create is retried until the job runs" 30 state_is "$id" succeeded
check "the retries are on the timeline" jq -e '[.items[]|select(.reason=="ServiceUnavailable")]|length==2' <(api GET "/v1/jobs/$id/events")
check_eq "and one object was made" "1" "$(objects_of "$id")"
check "the errors are counted in /metrics" bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/metrics | grep -q 'trainyard_kube_errors_total{verb=\"create\",resource=\"pytorchjobs\",code=\"503\"} 2'"

# ---- killed while the API server refuses creates (the jobs are "starting", nothing exists)
ctl faults '{"count":100000,"code":503,"reason":"ServiceUnavailable","message":"try later","verb":"create","resource":"pytorchjobs"}' >/dev/null
ids=()
for i in 1 2 3 4 5; do ids+=("$(submit_id '{"name":"c'"$i"'","image":"x","nodes":2}')"); done
eventually "the jobs are starting, their creation retried" 20 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/metrics | grep -q 'code=\"503\"} [5-9]'"
ty_kill9
ctl faults '{"count":0}' >/dev/null
check_eq "nothing more was created" "1" "$(k GET /apis/kubeflow.org/v1/namespaces/default/pytorchjobs | jq '.items|length')"
ty_restart
for id in "${ids[@]}"; do
    eventually "job $id succeeds after the restart" 60 state_is "$id" succeeded
    check_eq "job $id has exactly one object" "1" "$(objects_of "$id")"
done

ty_done

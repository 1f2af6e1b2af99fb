#!/bin/bash
# 49-kube-usage: usage on the Kubernetes executor, on the real control plane with kubesim's
# nodes (tests/kube/cluster): a 4-node PyTorchJob with 2 ranks per pod and 8 GPUs per pod counts
# each rank's run from its pod's container startedAt to finishedAt with half the pod's GPUs; each
# run carries its node's instance type and Karpenter capacity type (the simulated fleet has one
# spot node in four), so a price table prices spot and on-demand runs apart; grouped by instance
# and capacity type.
source "$(dirname "$0")/kubelib.sh"
cluster_start --nodes 4 --instance-type p4d.24xlarge
ty_start --executor kubernetes --kubeconfig "$KC"

id=$(submit_id '{"name":"usage","image":"pytorch/pytorch:2.7","command":["torchrun","train.py"],
  "nodes":4,"procs_per_node":2,"resources":{"gpus":8},"labels":{"team":"nlp"},
  "kubernetes":{"annotations":{"testserver.trainyard.io/steps":"8"}}}')
eventually "the 4-node PyTorchJob succeeds" 60 state_is "$id" succeeded
job=$(api GET "/v1/jobs/$id")
u=$(api GET "/v1/usage/jobs/$id")
check_eq "a run per rank: 4 pods x 2 ranks" 8 "$(jq '.rank_runs | length' <<<"$u")"
check_eq "each rank holds half its pod's 8 GPUs" '[4]' "$(jq -c '[.rank_runs[].gpus] | unique' <<<"$u")"
check_eq "each run's instance type is its node's" '["p4d.24xlarge"]' "$(jq -c '[.rank_runs[].instance_type] | unique' <<<"$u")"

# Each run is its pod's container, start to finish (the pod's times, not trainyard's).
SECS='def secs: sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601;'
same=0
for r in 0 1 2 3 4 5 6 7; do
    pod=$(jq -r ".ranks[$r].pod" <<<"$job")
    term=$(k GET "/api/v1/namespaces/$KNS/pods/$pod" | jq -c '.status.containerStatuses[0].state.terminated')
    run=$(jq -c ".rank_runs[] | select(.rank == $r)" <<<"$u")
    jq -e -n --argjson t "$term" --argjson run "$run" "$SECS"'
        ($t.startedAt | secs) == ($run.started_at | secs) and ($t.finishedAt | secs) == ($run.finished_at | secs)' >/dev/null &&
        same=$((same + 1))
done
check_eq "every run starts and ends with its pod's container" 8 "$same"
check "and its seconds are the container's" jq -e '[.rank_runs[] | .seconds > 0] | all' <<<"$u"

# The node's capacity type, from its Karpenter label: one node in four is spot.
nodes=$(api GET /v1/nodes)
check "each run's capacity type is its node's" jq -e --argjson n "$nodes" --argjson j "$job" '
    [.rank_runs[] | . as $r | ($n.items[] | select(.name == $j.ranks[$r.rank].node) | .capacity_type) == $r.capacity_type] | all' <<<"$u"
spot=$(jq '[.rank_runs[] | select(.capacity_type == "spot") | .seconds * .gpus] | add // 0' <<<"$u")
ondemand=$(jq '[.rank_runs[] | select(.capacity_type == "on-demand") | .seconds * .gpus] | add // 0' <<<"$u")
check "both capacity types ran" jq -n -e "$spot > 0 and $ondemand > 0"

# Priced by instance and capacity type: spot 1, on-demand 4 per GPU-hour.
api PUT /v1/usage/prices -H 'Content-Type: application/json' -d '{"prices":[
  {"instance_type":"p4d.24xlarge","capacity_type":"spot","gpu_hour":1},
  {"instance_type":"p4d.24xlarge","gpu_hour":4}]}' >/dev/null
cost=$(api GET "/v1/jobs/$id" | jq .usage.cost)
check "the job's cost prices spot and on-demand apart" jq -n -e "($cost - ($spot * 1 + $ondemand * 4) / 3600) | fabs < 0.0001"
g=$(api GET '/v1/usage?from=-1h&group_by=instance_type,capacity_type')
check_eq "grouped by instance and capacity type" "p4d.24xlarge/on-demand p4d.24xlarge/spot" \
    "$(jq -r '[.groups[] | "\(.instance_type)/\(.capacity_type)"] | sort | join(" ")' <<<"$g")"
check "the groups' GPU-seconds are the runs'" jq -e --argjson s "$spot" \
    '(.groups[] | select(.capacity_type == "spot") | .gpu_seconds) - $s | fabs < 0.01' <<<"$g"
check "/metrics counts the kubernetes runs by capacity type" \
    grep -q 'trainyard_usage_runs_total{executor="kubernetes",queue="default",instance_type="p4d.24xlarge",capacity_type="spot"}' <(api GET /metrics)
ty_done

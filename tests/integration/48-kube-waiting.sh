#!/bin/bash
# 48-kube-waiting: a Kubernetes job whose pods cannot start says why, on a real control plane
# (the real scheduler's words, kubesim's kubelet's): an image that cannot be pulled
# (ImagePullBackOff), an env value from a Secret that does not exist
# (CreateContainerConfigError), pods no node fits (Unschedulable, the scheduler's "0/4 nodes
# are available: 4 Insufficient nvidia.com/gpu") become the job's reason and message while it
# is starting, and its health is failing (it cannot start without a change) or degraded (it
# waits for capacity) instead of ok. Once the cause is gone the job runs and is healthy again.
source "$(dirname "$0")/kubelib.sh"
cluster_start
ty_start --executor kubernetes --kubeconfig "$KC"
health() { api GET "/v1/jobs/$1/health" | jq -r "$2"; }

# ---- an image that cannot be pulled
pull=$(submit_id '{"name":"pull","image":"registry.example/nope:1","nodes":2,
  "kubernetes":{"annotations":{"testserver.trainyard.io/image-pull-error":"true"}}}')
eventually "the job says its image cannot be pulled" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$pull | jq -e '.state==\"starting\" and .reason==\"ImagePullBackOff\"'"
check "in the kubelet's words, naming the rank and pod" jq -e '.message|contains("rank 0 (pod ty-'"$pull"'-master-0): Back-off pulling image \"registry.example/nope:1\"")' <(api GET "/v1/jobs/$pull")
check_eq "its health is failing" "failing" "$(health "$pull" .status)"
check "with the reason" jq -e '.reasons|map(select(startswith("ImagePullBackOff: rank 0")))|length==1' <(api GET "/v1/jobs/$pull/health")
api POST "/v1/jobs/$pull/cancel" >/dev/null
eventually "it can be cancelled" 30 state_is "$pull" cancelled

# ---- an env value from a Secret that does not exist, until it does
cfg=$(submit_id '{"name":"cfg","image":"x","nodes":2,"env":{"WANDB_API_KEY":{"secret":"wandb","key":"api-key"}},
  "kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "the job says its pods' configuration is missing" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$cfg | jq -e '.reason==\"CreateContainerConfigError\"'"
check "in the kubelet's words" jq -e '.message|contains("secret \"wandb\" not found")' <(api GET "/v1/jobs/$cfg")
check_eq "its health is failing" "failing" "$(health "$cfg" .status)"
kubectl_admin -n "$KNS" create secret generic wandb --from-literal=api-key=k >/dev/null
eventually "once the Secret exists the job runs" 30 state_is "$cfg" running
check_eq "and is healthy" "ok" "$(health "$cfg" .status)"
check "its reason is no longer the configuration's" jq -e '.reason!="CreateContainerConfigError"' <(api GET "/v1/jobs/$cfg")
api POST "/v1/jobs/$cfg/cancel" >/dev/null
eventually "cancelled" 30 state_is "$cfg" cancelled

# ---- pods no node fits
big=$(submit_id '{"name":"big","image":"x","nodes":2,"resources":{"gpus":16}}')
eventually "the job says its pods cannot be scheduled" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$big | jq -e '.state==\"starting\" and .reason==\"Unschedulable\"'"
check "in the scheduler's words" jq -e '.message|contains("cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu")' <(api GET "/v1/jobs/$big")
check_eq "its health is degraded (it waits for capacity)" "degraded" "$(health "$big" .status)"
api POST "/v1/jobs/$big/cancel" >/dev/null
eventually "cancelled" 30 state_is "$big" cancelled
check_eq "a job that starts normally keeps an ok health" "ok" "$(health "$(submit_id '{"name":"fine","image":"x","nodes":1}')" .status)"
ty_done

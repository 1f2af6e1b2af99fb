#!/bin/bash
# 48-kube-suspend: POST /v1/jobs/{id}/suspend and /resume on the Kubernetes executor, on a real
# control plane (kubesim's nodes, kubelets and operator; the daemon as deploy/'s ServiceAccount
# under RBAC). Suspending a running PyTorchJob deletes its object, whose pods end with their
# grace period and give their GPUs back to the cluster; the job waits queued and Suspended;
# resume creates the object again as a new attempt, whose ranks see TRAINYARD_ATTEMPT and the
# same checkpoint directory; a queued job is held before any object exists.
source "$(dirname "$0")/kubelib.sh"
cluster_start --nodes 2
ty_start --executor kubernetes --kubeconfig "$KC"

field() { api GET "/v1/jobs/$1" | jq -r ".$2"; }
gpus_used() { k GET "/api/v1/namespaces/$KNS/pods?labelSelector=trainyard.io%2Fjob-id%3D$1" |
    jq '[.items[]|select(.status.phase=="Pending" or .status.phase=="Running")|.spec.containers[0].resources.limits["nvidia.com/gpu"]//"0"|tonumber]|add//0'; }
obj_attempt() { k GET "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/ty-$1" |
    jq -r '.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env[]|select(.name=="TRAINYARD_ATTEMPT")|.value'; }

id=$(submit_id '{"name":"long","image":"pytorch/pytorch:2.7","command":["torchrun","train.py"],
  "nodes":2,"resources":{"gpus":8},"checkpoint":{"path":"/ckpt"},
  "kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "the PyTorchJob runs" 60 state_is "$id" running
check_eq "on 16 GPUs" 16 "$(gpus_used "$id")"
check_eq "attempt 0" 0 "$(obj_attempt "$id")"
check_eq "suspend a running job: 202" 202 "$(status POST "/v1/jobs/$id/suspend")"
check_eq "it is being suspended" true "$(field "$id" suspended)"
eventually "it waits queued once its pods are gone" 60 state_is "$id" queued
check_eq "its reason" Suspended "$(field "$id" reason)"
check_eq "its ranks stopped" "stopped stopped" "$(api GET "/v1/jobs/$id" | jq -r '[.ranks[].state]|join(" ")')"
check_eq "no pod of it holds a GPU" 0 "$(gpus_used "$id")"
# Resumed at once, while the old object may still be on its way out (its pods ending): the new
# attempt must not adopt it, but create its own once it is gone.
check_eq "resume: 200" 200 "$(status POST "/v1/jobs/$id/resume")"
eventually "it runs again" 60 state_is "$id" running
check_eq "as its second attempt" 1 "$(field "$id" restarts)"
check_eq "its new object says attempt 1" 1 "$(obj_attempt "$id")"
check_eq "with the same checkpoint directory" /ckpt "$(k GET "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/ty-$id" |
    jq -r '.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env[]|select(.name=="TRAINYARD_CHECKPOINT_DIR")|.value')"
check_eq "on 16 GPUs again" 16 "$(gpus_used "$id")"
sleep 3
check_eq "and it keeps running" "running" "$(field "$id" state)"
check_eq "the ranks run" "running running" "$(api GET "/v1/jobs/$id" | jq -r '[.ranks[].state]|join(" ")')"

# A job that cannot start (3 nodes of 8 GPUs, the cluster busy) is suspended before it runs: its
# object goes and no new one is made while it is held.
big=$(submit_id '{"name":"big","image":"x","nodes":3,"resources":{"gpus":8},"kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
check_eq "suspend a waiting job: 202" 202 "$(status POST "/v1/jobs/$big/suspend")"
eventually "it is held queued and Suspended" 20 bash -c "[ \"\$(curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$big | jq -r '.state+\" \"+.reason')\" = 'queued Suspended' ]"
check_eq "cancel the running one" 202 "$(status POST "/v1/jobs/$id/cancel")"
eventually "cancelled" 60 state_is "$id" cancelled
sleep 2
check_eq "the held one stays queued" queued "$(field "$big" state)"
eventually "its object is deleted and none made again" 30 test "$(curl -s -o /dev/null -w '%{http_code}' "${KCURL[@]}" "$KURL/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/ty-$big")" = 404
check_eq "cancel it" 202 "$(status POST "/v1/jobs/$big/cancel")"
ty_done

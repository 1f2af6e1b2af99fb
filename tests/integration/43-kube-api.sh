#!/bin/bash
# 43-kube-api: the job API in front of a real Kubernetes API server. A dry run returns the exact
# object (with the GPU/EFA limits, /dev/shm, checkpoint volume, placement, Kueue labels,
# Karpenter annotation, trainyard env and worker-token Secret reference), which the server
# accepts (schema, RBAC, the PyTorchJob webhook) and creates nothing; the server's refusals
# (the webhook's denial, RBAC's Forbidden, the CRD schema's Invalid) reach the user as
# problem+json with the Kubernetes reason, at submission for dry runs and manifests, as the
# job's reason otherwise; a Kueue-suspended job shows as queued with the reason and runs when
# admitted; a cancelled queued job's object is deleted. (5xx answers being retried needs a
# server that refuses on demand: 47-kube-faults.sh.)
source "$(dirname "$0")/kubelib.sh"
cluster_start
ty_start --executor kubernetes --kubeconfig "$KC" --public-url http://trainyard.example:8080
obj_count() { k GET "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs" | jq '.items|length'; }

# ---- dry run
spec='{"name":"dry","image":"ghcr.io/acme/train:1","command":["torchrun","train.py"],"args":["--bs","8"],
  "nodes":3,"procs_per_node":8,"resources":{"gpus":8,"efa":4,"cpu":"90","memory":"1000Gi","shm":"64Gi"},
  "placement":{"instance_type":"p5.48xlarge","zone":"us-east-1a","capacity_type":"on-demand","avoid_nodes":["ip-10-0-1-10.ec2.internal"]},
  "restart":{"policy":"on_failure","max_restarts":3},"deadline_seconds":3600,"queue":"team-a",
  "checkpoint":{"volume_claim":"ckpt","path":"/ckpt"},"env":{"WANDB_API_KEY":{"secret":"wandb","key":"api-key"},"FOO":"bar"},
  "kubernetes":{"priority_class":"high","service_account":"trainer","node_selector":{"acme.io/pool":"a"}}}'
res=$(api POST '/v1/jobs?dry_run=true' -H 'Content-Type: application/json' -d "$spec")
o=$(jq -c .object <<<"$res")
m=$(jq -c '.spec.pytorchReplicaSpecs.Master' <<<"$o")
c=$(jq -c '.template.spec.containers[0]' <<<"$m")
check_eq "a PyTorchJob kubeflow.org/v1" "kubeflow.org/v1 PyTorchJob" "$(jq -r '"\(.apiVersion) \(.kind)"' <<<"$o")"
check_eq "Master 1 and Worker nodes-1, OnFailure" "1 2 OnFailure" "$(jq -r '.spec.pytorchReplicaSpecs|"\(.Master.replicas) \(.Worker.replicas) \(.Worker.restartPolicy)"' <<<"$o")"
check_eq "nprocPerNode, backoffLimit, activeDeadlineSeconds, not suspended" "8 3 3600 false" "$(jq -r '"\(.spec.nprocPerNode) \(.spec.runPolicy.backoffLimit) \(.spec.runPolicy.activeDeadlineSeconds) \(.spec.runPolicy.suspend)"' <<<"$o")"
check_eq "the container pytorch with image, command, args" "pytorch ghcr.io/acme/train:1 torchrun train.py --bs 8" "$(jq -r '"\(.name) \(.image) \(.command|join(" ")) \(.args|join(" "))"' <<<"$c")"
check_eq "GPU and EFA limits" "8 4" "$(jq -r '.resources.limits|"\(.["nvidia.com/gpu"]) \(.["vpc.amazonaws.com/efa"])"' <<<"$c")"
check_eq "cpu and memory requests" "90 1000Gi" "$(jq -r '.resources.requests|"\(.cpu) \(.memory)"' <<<"$c")"
check_eq "a memory-backed /dev/shm of 64Gi" "Memory 64Gi /dev/shm" "$(jq -r '"\(.template.spec.volumes[]|select(.name=="dshm")|.emptyDir|"\(.medium) \(.sizeLimit)") \(.template.spec.containers[0].volumeMounts[]|select(.name=="dshm")|.mountPath)"' <<<"$m")"
check_eq "the checkpoint claim at its path" "ckpt /ckpt" "$(jq -r '"\(.template.spec.volumes[]|select(.name=="checkpoint")|.persistentVolumeClaim.claimName) \(.template.spec.containers[0].volumeMounts[]|select(.name=="checkpoint")|.mountPath)"' <<<"$m")"
check_eq "node selector: instance type, zone, capacity type, the user's" "p5.48xlarge us-east-1a on-demand a" "$(jq -r '.template.spec.nodeSelector|"\(.["node.kubernetes.io/instance-type"]) \(.["topology.kubernetes.io/zone"]) \(.["karpenter.sh/capacity-type"]) \(.["acme.io/pool"])"' <<<"$m")"
check_eq "nodes to avoid: NotIn hostname" "kubernetes.io/hostname NotIn ip-10-0-1-10.ec2.internal" "$(jq -r '.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]|"\(.key) \(.operator) \(.values|join(","))"' <<<"$m")"
check_eq "Kueue queue and priority labels" "team-a high" "$(jq -r '.metadata.labels|"\(.["kueue.x-k8s.io/queue-name"]) \(.["kueue.x-k8s.io/priority-class"])"' <<<"$o")"
check_eq "trainyard labels on object and pods" "dry dry" "$(jq -r '"\(.metadata.labels["trainyard.io/job-name"]) \(.spec.pytorchReplicaSpecs.Worker.template.metadata.labels["trainyard.io/job-name"])"' <<<"$o")"
check_eq "Karpenter may not disrupt the pods" "true" "$(jq -r '.template.metadata.annotations["karpenter.sh/do-not-disrupt"]' <<<"$m")"
check_eq "the service account" "trainer" "$(jq -r .template.spec.serviceAccountName <<<"$m")"
env=$(jq -c '.env|map({(.name): (.value // .valueFrom.secretKeyRef)})|add' <<<"$c")
check_eq "TRAINYARD_URL is the public URL" "http://trainyard.example:8080" "$(jq -r .TRAINYARD_URL <<<"$env")"
check_eq "TRAINYARD_JOB_ID, ATTEMPT, RESTART_COUNT, CHECKPOINT_DIR" "dry-run 0 0 /ckpt" "$(jq -r '"\(.TRAINYARD_JOB_ID) \(.TRAINYARD_ATTEMPT) \(.TRAINYARD_RESTART_COUNT) \(.TRAINYARD_CHECKPOINT_DIR)"' <<<"$env")"
check_eq "TRAINYARD_TOKEN from the job's Secret" "ty-dry-run-token token" "$(jq -r '.TRAINYARD_TOKEN|"\(.name) \(.key)"' <<<"$env")"
check_eq "the user's env, secret references included" "bar wandb api-key" "$(jq -r '"\(.FOO) \(.WANDB_API_KEY.name) \(.WANDB_API_KEY.key)"' <<<"$env")"
check_eq "a dry run creates nothing" "0" "$(obj_count)"
check_eq "and records no job" "0" "$(api GET /v1/jobs | jq '.items|length')"
el=$(api POST '/v1/jobs?dry_run=true' -H 'Content-Type: application/json' -d '{"name":"el","image":"x","nodes":4,"kubernetes":{"elastic":{"min_nodes":2,"max_nodes":4,"max_restarts":5}}}' | jq -c .object.spec)
check_eq "elastic: Workers only, with an elasticPolicy" "null 4 2 4 c10d 5" "$(jq -r '"\(.pytorchReplicaSpecs.Master) \(.pytorchReplicaSpecs.Worker.replicas) \(.elasticPolicy|"\(.minReplicas) \(.maxReplicas) \(.rdzvBackend) \(.maxRestarts)")"' <<<"$el")"
tj=$(api POST '/v1/jobs?dry_run=true' -H 'Content-Type: application/json' -d "$(jq -c '.kubernetes.kind="TrainJob" | .kubernetes.runtime="torch-distributed"' <<<"$spec")" | jq -c .object)
check_eq "TrainJob: runtimeRef and trainer" "ClusterTrainingRuntime torch-distributed 3 8 8" "$(jq -r '.spec|"\(.runtimeRef.kind) \(.runtimeRef.name) \(.trainer.numNodes) \(.trainer.numProcPerNode) \(.trainer.resourcesPerNode.limits["nvidia.com/gpu"])"' <<<"$tj")"
p=$(jq -c '.spec.runtimePatches[0]' <<<"$tj")
check_eq "pod settings as a runtime patch of the node job (Trainer v2.2+)" "trainyard.io/trainyard node" "$(jq -r '"\(.manager) \(.trainingRuntimeSpec.template.spec.replicatedJobs[0].name)"' <<<"$p")"
pp=$(jq -c '.trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template' <<<"$p")
check "with the shm volume, mounts, selector, affinity, annotations" jq -e '(.spec.volumes|map(.name)|index("dshm")) and (.spec.containers[0].volumeMounts|length==2) and .spec.nodeSelector["node.kubernetes.io/instance-type"]=="p5.48xlarge" and .spec.affinity!=null and .metadata.annotations["karpenter.sh/do-not-disrupt"]=="true"' <<<"$pp"
check "and the trainyard env in trainer.env" jq -e '.spec.trainer.env|map(.name)|index("TRAINYARD_TOKEN")' <<<"$tj"

# ---- restart settings the Training Operator cannot honour are refused, not ignored
for bad in '"restart":{"policy":"exit_code","exit_codes":[1,42]}|/restart/exit_codes|ExitCode policy' \
    '"restart":{"policy":"on_failure","on":["nccl_timeout"]}|/restart/on|not by the kind of failure' \
    '"health":{"on_stall":"restart"}|/health/on_stall|not trainyard'; do
    IFS='|' read -r member ptr words <<<"$bad"
    p=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":"r","image":"x",'"$member"'}')
    check_eq "$ptr on Kubernetes is a 422" "422 $ptr" "$(jq -r '"\(.status) \(.errors[0].pointer)"' <<<"$p")"
    check "saying why ($ptr)" jq -e --arg w "$words" '.errors[0].detail // .errors[0].message | contains($w)' <<<"$p"
done
check_eq "what the operator does honour is accepted" "201" "$(status POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":"ok","image":"x","restart":{"policy":"exit_code","max_restarts":2},"health":{"on_stall":"cancel"}}')"

# ---- the API server's refusals, for real
check_eq "the API server accepted the dry run (schema, RBAC, webhook)" "null" "$(jq -r .status <<<"$res")"
side='{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"sidecar"},"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch","image":"x"},{"name":"logger"}]}}}}}}'
p=$(api POST '/v1/jobs?dry_run=true' -H 'Content-Type: application/json' -d "$side")
check_eq "a dry run gets the operator webhook's denial as a 403" "403 Forbidden" "$(jq -r '"\(.status) \(.reason)"' <<<"$p")"
check "with the webhook's message" jq -e '.detail|contains("admission webhook \"validator.pytorchjob.training-operator.kubeflow.org\" denied the request: spec.pytorchReplicaSpecs[Master].template.spec.containers[1].image")' <<<"$p"
mf='{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"mine","namespace":"default"},"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch","image":"x"}]}}}}}}'
hdr=$(api POST /v1/jobs -H 'Content-Type: application/json' -d "$mf" -D - -o "$WORK/p.json")
check "a manifest for a namespace deploy/'s Role does not cover is refused at submission (problem+json)" grep -qi 'content-type: application/problem+json' <<<"$hdr"
check_eq "with the Kubernetes reason" "403 Forbidden" "$(jq -r '"\(.status) \(.reason)"' "$WORK/p.json")"
check "naming the RBAC problem" jq -e '.detail|contains("system:serviceaccount:trainyard:trainyard") and contains("cannot create resource \"pytorchjobs\"")' "$WORK/p.json"
check_eq "and nothing recorded" "0" "$(api GET /v1/jobs | jq '[.items[]|select(.name=="mine")]|length')"
tjm='{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"negative"},"spec":{"runtimeRef":{"name":"torch-distributed"},"trainer":{"image":"x","numNodes":-1}}}'
p=$(api POST /v1/jobs -H 'Content-Type: application/json' -d "$tjm")
check_eq "a manifest the CRD's schema refuses is a 422 Invalid" "422 Invalid" "$(jq -r '"\(.status) \(.reason)"' <<<"$p")"
check "naming the field" jq -e '.detail|contains("spec.trainer.numNodes")' <<<"$p"
id=$(submit_id '{"name":"elsewhere","image":"x","kubernetes":{"namespace":"default"}}')
eventually "a job the API server refuses fails" 20 state_is "$id" failed
check_eq "with the Status reason" "Forbidden" "$(job_field "$id" .reason)"
check "and its message" jq -e '.message|contains("cannot create resource")' <(api GET "/v1/jobs/$id")
check "the refusal is on the timeline" jq -e '[.items[]|select(.type=="failed" and .reason=="Forbidden")]|length==1' <(api GET "/v1/jobs/$id/events")

# ---- Kueue: a suspended job is queued, with the reason
id=$(submit_id '{"name":"kq","image":"x","nodes":2,"queue":"team-a","kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "it runs" 30 state_is "$id" running
suspend() { k PATCH "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/ty-$id" -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"runPolicy":{"suspend":'"$1"'}}}' >/dev/null; }
suspend true
eventually "suspended by Kueue shows as queued" 20 state_is "$id" queued
check_eq "with the reason" "Suspended" "$(job_field "$id" .reason)"
check "and what it waits for" jq -e '.message|contains("suspended") and contains("Kueue")' <(api GET "/v1/jobs/$id")
eventually "its ranks were stopped (not failed)" 20 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$id | jq -e '[.ranks[]|.state]==[\"stopped\",\"stopped\"] and .first_failure==null'"
sleep 2 # the controller's queue passes over it a few times: it must not start it again
check_eq "trainyard does not start a job Kueue holds" "1" "$(api GET "/v1/jobs/$id/events" | jq '[.items[]|select(.type=="starting")]|length')"
suspend false
eventually "admitted, it runs again" 30 state_is "$id" running
check "resumed on the timeline" jq -e '[.items[]|select(.reason=="Resumed")]|length==1' <(api GET "/v1/jobs/$id/events")
suspend true
eventually "queued again" 20 state_is "$id" queued
api POST "/v1/jobs/$id/cancel" >/dev/null
eventually "a cancelled queued job" 10 state_is "$id" cancelled
eventually "has its object deleted" 20 kgone "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/ty-$id"
cat >"$WORK/suspended.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: held-at-birth, labels: {kueue.x-k8s.io/queue-name: team-b}}
spec:
  runPolicy: {suspend: true}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: x}]}}
EOF
id=$(api POST /v1/jobs -H 'Content-Type: application/yaml' --data-binary @"$WORK/suspended.yaml" | jq -r .id)
eventually "a job created suspended is queued" 20 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$id | jq -e '.state==\"queued\" and .reason==\"Suspended\"'"
k PATCH /apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/held-at-birth -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"runPolicy":{"suspend":false}}}' >/dev/null
eventually "and runs to the end once admitted" 30 state_is "$id" succeeded
ty_done

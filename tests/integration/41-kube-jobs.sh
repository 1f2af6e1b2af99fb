#!/bin/bash
# 41-kube-jobs: jobs on the Kubernetes executor end to end, on a real control plane (kubesim's
# nodes, kubelets and operators; the daemon as deploy/'s ServiceAccount under RBAC):
# a 4-node PyTorchJob that succeeds, with every line of every pod in the job's merged log
# exactly once; the objects it made (labels, worker-token Secret owned by the job); a TrainJob;
# a user's own PyTorchJob manifest in YAML run as is; GET /v1/nodes with the ranks on each node.
source "$(dirname "$0")/kubelib.sh"
cluster_start
ty_start --executor kubernetes --kubeconfig "$KC"

# ---- a 4-node PyTorchJob
id=$(submit_id '{"name":"four","image":"pytorch/pytorch:2.7","command":["torchrun","train.py"],
  "nodes":4,"resources":{"gpus":8,"efa":4,"shm":"8Gi"},"labels":{"team":"nlp"},
  "kubernetes":{"annotations":{"testserver.trainyard.io/steps":"8"}}}')
obj="ty-$id"
eventually "the 4-node PyTorchJob succeeds" 60 state_is "$id" succeeded
job=$(api GET "/v1/jobs/$id")
check_eq "every rank succeeded" "succeeded succeeded succeeded succeeded" "$(jq -r '[.ranks[].state]|join(" ")' <<<"$job")"
check_eq "ranks name their pods" "$obj-master-0 $obj-worker-0 $obj-worker-1 $obj-worker-2" "$(jq -r '[.ranks[].pod]|join(" ")' <<<"$job")"
check "every rank has a node" jq -e '[.ranks[].node|select(startswith("ip-10-0-"))]|length==4' <<<"$job"
check_eq "exit codes" "0 0 0 0" "$(jq -r '[.ranks[].exit_code]|join(" ")' <<<"$job")"
ptj=$(k GET "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/$obj")
check_eq "the object carries the job id" "$id" "$(jq -r '.metadata.labels["trainyard.io/job-id"]' <<<"$ptj")"
check_eq "and the spec's labels" "nlp" "$(jq -r '.metadata.labels.team' <<<"$ptj")"
check_eq "Master + 3 Workers" "1 3" "$(jq -r '.spec.pytorchReplicaSpecs|"\(.Master.replicas) \(.Worker.replicas)"' <<<"$ptj")"
check_eq "the pods carry the job id" "4" "$(k GET "/api/v1/namespaces/$KNS/pods?labelSelector=trainyard.io%2Fjob-id%3D$id" | jq '.items|length')"
sec=$(k GET "/api/v1/namespaces/$KNS/secrets/$obj-token")
check_eq "the worker token is a Secret owned by the job" "PyTorchJob/$obj" "$(jq -r '.metadata.ownerReferences[0]|"\(.kind)/\(.name)"' <<<"$sec")"
check "ranks get the token from the Secret, not inline" jq -e '[.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env[]|select(.name=="TRAINYARD_TOKEN")|.valueFrom.secretKeyRef.name]==["'"$obj"'-token"]' <<<"$ptj"
eventually "the job's log is complete" 30 wait_logs_complete "$id"
for p in master-0 worker-0 worker-1 worker-2; do pod_lines "$KNS" "$obj-$p"; done >"$WORK/expected"
job_lines "$id" >"$WORK/actual"
check_eq "4 pods x 10 lines" "40" "$(wc -l <"$WORK/expected")"
same_lines "the merged log holds every pod's lines exactly once" "$WORK/expected" "$WORK/actual"
check "the merged log interleaves the pods in time" test "$(job_lines "$id" | awk '{print $1}' | uniq | wc -l)" -gt 4
ev=$(api GET "/v1/jobs/$id/events")
check "Kubernetes events join the timeline" jq -e '[.items[]|select(.source=="kubernetes" and .reason=="SuccessfulCreatePod")]|length==4' <<<"$ev"
check "a pod's events name its rank" jq -e '[.items[]|select(.reason=="Scheduled")|.rank]|sort==[0,1,2,3]' <<<"$ev"
check "the creation is on the timeline" jq -e '[.items[]|select(.reason=="Created" and .source=="trainyard")]|length==1' <<<"$ev"

# ---- a TrainJob (Trainer v2): pods found through their JobSet
id2=$(submit_id '{"name":"tj","image":"pytorch/pytorch:2.7","nodes":2,"procs_per_node":2,
  "kubernetes":{"kind":"TrainJob"}}')
eventually "the TrainJob succeeds" 60 state_is "$id2" succeeded
tj=$(k GET "/apis/trainer.kubeflow.org/v1alpha1/namespaces/$KNS/trainjobs/ty-$id2")
check_eq "TrainJob numNodes and numProcPerNode" "2 2" "$(jq -r '.spec.trainer|"\(.numNodes) \(.numProcPerNode)"' <<<"$tj")"
check_eq "its 4 ranks (2 per pod) succeeded" "4" "$(job_field "$id2" '[.ranks[]|select(.state=="succeeded")]|length')"
check "ranks 0,1 share a pod, 2,3 the other" jq -e '.ranks[0].pod==.ranks[1].pod and .ranks[2].pod==.ranks[3].pod and .ranks[0].pod!=.ranks[2].pod' <(api GET "/v1/jobs/$id2")
eventually "the TrainJob's log is complete" 30 wait_logs_complete "$id2"
for p in $(job_field "$id2" '[.ranks[].pod]|unique|.[]'); do pod_lines "$KNS" "$p" node; done >"$WORK/expected2"
job_lines "$id2" >"$WORK/actual2"
same_lines "the TrainJob's log holds every pod's lines once" "$WORK/expected2" "$WORK/actual2"

# ---- a user's own manifest, in YAML, run as is
cat >"$WORK/mine.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: my-own-job
  labels: {owner: alice}
  annotations: {testserver.trainyard.io/steps: "3"}
spec:
  runPolicy: {cleanPodPolicy: None}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: pytorch, image: "pytorch/pytorch:2.7", command: [python, mine.py]}
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: pytorch, image: "pytorch/pytorch:2.7", command: [python, mine.py]}
EOF
res=$(api POST /v1/jobs -H 'Content-Type: application/yaml' --data-binary @"$WORK/mine.yaml")
id3=$(jq -r .id <<<"$res")
check_eq "the manifest becomes a 3-node job" "3 kubernetes my-own-job" "$(jq -r '"\(.nranks) \(.executor) \(.name)"' <<<"$res")"
eventually "the manifest's job succeeds" 60 state_is "$id3" succeeded
mine=$(k GET /apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/my-own-job)
check_eq "run under its own name, labelled for trainyard" "$id3 alice" "$(jq -r '.metadata.labels|"\(.["trainyard.io/job-id"]) \(.owner)"' <<<"$mine")"
check_eq "its command is the user's" "python mine.py" "$(jq -r '.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command|join(" ")' <<<"$mine")"
check_eq "no trainyard env is added to a manifest" "0" "$(jq '[.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env // [] | .[] | select(.name|startswith("TRAINYARD_"))]|length' <<<"$mine")"
eventually "the manifest job's log is complete" 30 wait_logs_complete "$id3"
check_eq "its log has every pod's lines (3 pods x 5)" "15" "$(job_lines "$id3" | wc -l)"
bad=$(api POST /v1/jobs -H 'Content-Type: application/json' -d '{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"Bad_Name"},"spec":{"pytorchReplicaSpecs":{"Chief":{"replicas":1}}}}')
check_eq "a bad manifest is a 422" "422" "$(jq -r .status <<<"$bad")"
check "naming the name and the replica type" jq -e '[.errors[].pointer]|index("/metadata/name") and index("/spec/pytorchReplicaSpecs/Chief")' <<<"$bad"
check_eq "an unknown kind is refused" "422" "$(status POST /v1/jobs -H 'Content-Type: application/json' -d '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"},"spec":{}}')"

# ---- nodes
long=$(submit_id '{"name":"long","image":"busybox","nodes":2,"resources":{"gpus":8},"kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "a long job runs" 30 state_is "$long" running
nodes=$(api GET /v1/nodes)
check_eq "GET /v1/nodes lists the cluster's 4 nodes" "4" "$(jq '.items|length' <<<"$nodes")"
check "with instance type, zone, GPU and EFA capacity" jq -e '.items[0]|.instance_type=="p4d.24xlarge" and (.zone|startswith("us-east-1")) and .capacity["nvidia.com/gpu"]==8 and .capacity["vpc.amazonaws.com/efa"]==4' <<<"$nodes"
check "with conditions, the EKS ones included" jq -e '.items[0].conditions|map(.type)|index("Ready") and index("AcceleratedHardwareReady")' <<<"$nodes"
check "with a spot node among them" jq -e '[.items[]|select(.capacity_type=="spot")]|length>=1' <<<"$nodes"
eventually "and which job's ranks run where" 10 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/nodes | jq -e '[.items[].jobs[]|select(.id==\"$long\")|.ranks[]]|sort==[0,1]'"
tok=$(k GET "/api/v1/namespaces/$KNS/secrets/ty-$long-token" | jq -r .data.token | base64 -d)
rv() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "$URL/v1/jobs/$1/rendezvous/probe"; }
check "the Secret's token works for its job's rendezvous" test "$(rv "$long")" != 401
check_eq "and for no other job" "403" "$(rv "$id")"
node0=$(job_field "$long" '.ranks[0].node')
ctl nodes/condition '{"node":"'"$node0"'","condition":{"type":"AcceleratedHardwareReady","status":"False","reason":"NvidiaXID79Error"}}' >/dev/null
eventually "a node's bad GPU condition shows" 10 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/nodes | jq -e '.items[]|select(.name==\"$node0\")|.healthy==false and (.conditions[]|select(.type==\"AcceleratedHardwareReady\").reason==\"NvidiaXID79Error\")'"
# HyperPod's own health signal: its node-health-status label is node health too
hp=$(jq -r --arg n "$node0" '[.items[].name|select(. != $n)][0]' <<<"$nodes")
kubectl_admin label node "$hp" sagemaker.amazonaws.com/node-health-status=UnschedulablePendingReplacement >/dev/null
eventually "a node HyperPod marks UnschedulablePendingReplacement is not healthy" 10 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/nodes | jq -e '.items[]|select(.name==\"$hp\")|.healthy==false and (.conditions[]|select(.type==\"sagemaker.amazonaws.com/node-health-status\")|.status==\"False\" and .reason==\"UnschedulablePendingReplacement\")'"
kubectl_admin label node "$hp" sagemaker.amazonaws.com/node-health-status=Schedulable --overwrite >/dev/null
eventually "and healthy again once Schedulable" 10 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/nodes | jq -e '.items[]|select(.name==\"$hp\")|.healthy==true'"
cli=$(TRAINYARD_URL=$URL TRAINYARD_TOKEN=$TOKEN "$TRAINYARD" nodes 2>&1)
check "trainyard nodes shows each node's GPUs" bash -c "awk 'NR>1 && \$1 ~ /^ip-10-0-/ {print \$5}' <<<'$cli' | sort -u | grep -qx 8"
# marks (POST /v1/nodes/{name}/mark) in the list, and in where new pods may go
bad=$(jq -r '.items[1].name' <<<"$nodes") sus=$(jq -r '.items[2].name' <<<"$nodes")
mark() { api POST "/v1/nodes/$1/mark" -H 'Content-Type: application/json' -d "{\"state\":\"$2\",\"reason\":\"$3\"}" >/dev/null; }
mark "$bad" bad FanFailure
mark "$sus" suspect GPUXidError
nodes=$(api GET /v1/nodes)
check_eq "marked nodes stay the cluster's 4" "4" "$(jq '.items|length' <<<"$nodes")"
check "a node's mark shows in the list" jq -e --arg b "$bad" --arg s "$sus" '(.items[]|select(.name==$b)|.marked and .mark.state=="bad" and .mark.reason=="FanFailure" and .mark.source=="admin") and (.items[]|select(.name==$s)|.mark.state=="suspect") and ([.items[]|select(.marked)]|length==2)' <<<"$nodes"
aff=$(api POST '/v1/jobs?dry_run=true' -H 'Content-Type: application/json' -d '{"name":"placed","image":"x","nodes":2}' | jq '.object.spec.pytorchReplicaSpecs.Master.template.spec.affinity.nodeAffinity')
check "new pods never go to the bad node" jq -e --arg b "$bad" '.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]|.operator=="NotIn" and .values==[$b]' <<<"$aff"
check "and to the suspect one only when no other fits" jq -e --arg s "$sus" '.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values==[$s]' <<<"$aff"
api DELETE "/v1/nodes/$bad/mark" >/dev/null
api DELETE "/v1/nodes/$sus/mark" >/dev/null
check_eq "unmarked: no marks listed" "0" "$(api GET /v1/nodes | jq '[.items[]|select(.marked or .mark != null)]|length')"
api POST "/v1/jobs/$long/cancel" >/dev/null
eventually "the long job is cancelled" 30 state_is "$long" cancelled
eventually "its object is deleted" 20 kgone "/apis/kubeflow.org/v1/namespaces/$KNS/pytorchjobs/ty-$long"
check_eq "its ranks were stopped" "stopped stopped" "$(job_field "$long" '[.ranks[].state]|join(" ")')"
check_eq "its worker token is revoked" "401" "$(rv "$long")"
ty_done

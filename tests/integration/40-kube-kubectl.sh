#!/bin/bash
# 40-kube-kubectl: the real kubectl against the real control plane (tests/kube/cluster) with
# kubesim's nodes, kubelets and Kubeflow operators acting through it: discovery of the CRDs,
# get/describe/label/patch/delete, create -f of a PyTorchJob and a TrainJob, label and field
# selectors, watch (kubectl get -w), logs through the API server from kubesim's kubelet
# endpoint (-f, --previous, --timestamps, --tail, --limit-bytes, sinceTime), the operators'
# conditions, events, restart and clean-up policies, the real scheduler's FailedScheduling,
# image-pull failures, node loss, OOMKilled pods, the operator's webhook, and speed. What this
# test once checked of the in-process test API server's own imitation of kube-apiserver (Status
# shapes, pagination, bookmarks, 410, injected faults, short-lived tokens) is now the real
# server's business; the test server is used only where faults must be injected (45, 47).
# Env: TY_BUILD (build directory), TY_SRC (source tree). Needs kubectl, curl, jq, openssl.
source "$(dirname "$0")/kubelib.sh"
BUILD=$TY_BUILD
TMP=$WORK
PASSED=0
FAILED=0

ok() { PASSED=$((PASSED + 1)); echo "ok   $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && echo "     $2" | head -c 2000 && echo; }
# check NAME COMMAND...: passes when the command succeeds
check() { local name=$1; shift; if out=$("$@" 2>&1); then ok "$name"; else fail "$name" "$out"; fi; }
# contains NAME NEEDLE TEXT
contains() { if [[ $3 == *"$2"* ]]; then ok "$1"; else fail "$1" "expected '$2' in: $3"; fi; }
# eventually NAME SECONDS COMMAND...: retries every 0.1 s
eventually() {
    local name=$1 secs=$2
    shift 2
    local end=$((SECONDS + secs))
    while ((SECONDS <= end)); do
        if out=$("$@" 2>&1); then ok "$name"; return 0; fi
        sleep 0.1
    done
    fail "$name" "$out"
}

cluster_start
export KUBECONFIG=$KADMIN
K=(kubectl --cache-dir "$TMP/kcache" --request-timeout=20s)

out=$("${K[@]}" version 2>&1)
contains "kubectl version reads /version" "Server Version: v1.20.2" "$out"
out=$("${K[@]}" api-resources 2>&1)
grep -Eq '^pytorchjobs +kubeflow.org/v1 +true +PyTorchJob$' <<<"$out" && ok "api-resources lists pytorchjobs" || fail "api-resources pytorchjobs" "$out"
grep -Eq '^trainjobs +trainer.kubeflow.org/v1alpha1 +true +TrainJob$' <<<"$out" && ok "api-resources lists trainjobs" || fail "api-resources trainjobs" "$out"

out=$("${K[@]}" get nodes 2>&1)
[ "$(grep -c ' Ready ' <<<"$out")" = 4 ] && ok "get nodes: 4 Ready nodes" || fail "get nodes" "$out"
out=$("${K[@]}" get nodes -l 'node.kubernetes.io/instance-type=p4d.24xlarge,topology.kubernetes.io/zone in (us-east-1a)' -o name 2>&1)
[ "$(wc -l <<<"$out")" = 2 ] && ok "get nodes with a set-based label selector" || fail "node selector" "$out"
out=$("${K[@]}" get node ip-10-0-1-10.ec2.internal -o jsonpath='{.status.allocatable.nvidia\.com/gpu} {.status.capacity.vpc\.amazonaws\.com/efa} {.metadata.labels.karpenter\.sh/capacity-type}' 2>&1)
[ "$out" = "8 4 on-demand" ] && ok "nodes carry GPU/EFA capacity and Karpenter labels" || fail "node capacity" "$out"

cat >"$TMP/mnist.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
  annotations:
    testserver.trainyard.io/steps: "8"
    testserver.trainyard.io/line-interval-ms: "300"
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime
            resources: {limits: {nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4}}
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime
            resources: {limits: {nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4}}
EOF
timeout 8 "${K[@]}" get pods -l training.kubeflow.org/job-name=mnist -w >"$TMP/watch.out" 2>&1 &
WATCH=$!
sleep 0.5
out=$("${K[@]}" create -f "$TMP/mnist.yaml" 2>&1)
contains "create -f a PyTorchJob" "pytorchjob.kubeflow.org/mnist created" "$out"
out=$("${K[@]}" create -f "$TMP/mnist.yaml" 2>&1)
contains "creating it twice is AlreadyExists" 'Error from server (AlreadyExists): error when creating "'"$TMP"'/mnist.yaml": pytorchjobs.kubeflow.org "mnist" already exists' "$out"

eventually "the operator creates master and worker pods" 5 \
    bash -c "[ \$(${K[*]} get pods -l 'training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type in (master,worker)' -o name | wc -l) = 3 ]"
check "pods wait Ready" "${K[@]}" wait --for=condition=Ready pod/mnist-master-0 pod/mnist-worker-1 --timeout=10s
out=$("${K[@]}" get pods -l 'training.kubeflow.org/job-name=mnist,!training.kubeflow.org/job-role' -o name 2>&1)
[ "$out" = $'pod/mnist-worker-0\npod/mnist-worker-1' ] && ok "label selector with !key" || fail "!key selector" "$out"
out=$("${K[@]}" get pod mnist-worker-1 -o jsonpath='{range .spec.containers[0].env[*]}{.name}={.value} {end}' 2>&1)
contains "operator injects torchrun env" "MASTER_ADDR=mnist-master-0 PET_MASTER_ADDR=mnist-master-0 WORLD_SIZE=3 RANK=2 PET_NODE_RANK=2" "$out"

out=$(timeout 10 "${K[@]}" logs -f mnist-worker-1 2>&1)
rc=$?
[ $rc = 0 ] && [[ $out == *"step 8/8"* && $out == *"training finished: 8 steps"* ]] &&
    ok "logs -f streams until the container exits" || fail "logs -f (rc $rc)" "$out"
out=$("${K[@]}" logs mnist-master-0 --timestamps --tail=2 2>&1)
[[ $(wc -l <<<"$out") = 2 && $out =~ ^20[0-9-]+T[0-9:.]+Z\ \[rank\ 0\]\ step\ 8/8 ]] &&
    ok "logs --timestamps --tail=2" || fail "logs --timestamps --tail" "$out"
out=$("${K[@]}" logs mnist-master-0 --limit-bytes=10 2>&1)
[ "$out" = "[rank 0] p" ] && ok "logs --limit-bytes" || fail "logs --limit-bytes" "$out"

eventually "the PyTorchJob Succeeds" 10 bash -c "${K[*]} get pytorchjob mnist | grep -q Succeeded"
wait $WATCH 2>/dev/null
w=$(cat "$TMP/watch.out")
if grep -q "mnist-master-0 .*ContainerCreating" <<<"$w" && grep -q "mnist-master-0 .*1/1 *Running" <<<"$w" &&
    grep -q "mnist-master-0 .*Completed" <<<"$w"; then
    ok "get pods -w prints Pending -> ContainerCreating -> Running -> Completed"
else
    fail "get pods -w transitions" "$w"
fi
# The job succeeds with its master (the operator's success policy); its replicaStatuses are
# those of that moment, so the workers' count depends on which pod ended first.
out=$("${K[@]}" get pytorchjob mnist -o jsonpath='{range .status.conditions[*]}{.type}={.status} {end}{.status.replicaStatuses.Master.succeeded}' 2>&1)
[ "$out" = "Created=True Running=False Succeeded=True 1" ] && ok "job conditions and replicaStatuses" || fail "job conditions" "$out"

node=$("${K[@]}" get pod mnist-worker-0 -o jsonpath='{.spec.nodeName}')
out=$("${K[@]}" get pods --field-selector "spec.nodeName=$node,status.phase=Succeeded" -o name 2>&1)
contains "field selector spec.nodeName + status.phase" "pod/mnist-worker-0" "$out"
out=$("${K[@]}" get pods --field-selector "spec.foo=bar" 2>&1)
contains "unknown field selector is BadRequest" "field label not supported: spec.foo" "$out"

out=$("${K[@]}" describe pod mnist-worker-0 2>&1)
if [[ $out == *"Controlled By:  PyTorchJob/mnist"* && $out == *"Successfully assigned default/mnist-worker-0 to $node"* &&
    $out == *"Started container pytorch"* && $out == *"Exit Code:    0"* ]]; then
    ok "describe pod: owner, state, events"
else
    fail "describe pod" "$out"
fi
out=$("${K[@]}" get events --field-selector involvedObject.kind=PyTorchJob,involvedObject.name=mnist 2>&1)
contains "job events with involvedObject field selector" "SuccessfulCreatePod" "$out"
contains "job events include the terminal reason" "PyTorchJobSucceeded" "$out"

out=$(k GET "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name=mnist-worker-0,reason=Started")
[ "$(jq -c '[.kind, .apiVersion, .items[0].note, .items[0].reportingController, .items[0].regarding.kind]' <<<"$out")" = \
    '["EventList","events.k8s.io/v1","Started container pytorch","kubelet","Pod"]' ] &&
    ok "events.k8s.io/v1 view with a regarding.name field selector" || fail "events.k8s.io/v1" "$out"

out=$("${K[@]}" get pod nope 2>&1)
contains "404 is NotFound" 'Error from server (NotFound): pods "nope" not found' "$out"
out=$("${K[@]}" get pytorchjob nope 2>&1)
contains "404 on a CRD names the group" 'Error from server (NotFound): pytorchjobs.kubeflow.org "nope" not found' "$out"
out=$("${K[@]}" logs nope 2>&1)
contains "logs of a missing pod is NotFound" 'pods "nope" not found' "$out"
out=$("${K[@]}" logs mnist-master-0 --previous 2>&1)
contains "logs --previous without a restart" 'previous terminated container "pytorch" in pod "mnist-master-0" not found' "$out"

sed -e 's/name: mnist/name: bad/' -e 's/replicas: 1/replicas: 2/' "$TMP/mnist.yaml" >"$TMP/bad.yaml"
out=$("${K[@]}" create -f "$TMP/bad.yaml" 2>&1)
contains "webhook denial is Forbidden" 'admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied the request: spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1' "$out"

# pods that never start: too many GPUs, an image that cannot be pulled
cat >"$TMP/pending.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: big}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: i:1, resources: {limits: {nvidia.com/gpu: 16}}}]}}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pull, annotations: {testserver.trainyard.io/image-pull-error: "true"}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: does-not-exist:1}]}}
EOF
check "create jobs that cannot start" "${K[@]}" create -f "$TMP/pending.yaml"
eventually "FailedScheduling names the missing resource" 3 \
    bash -c "${K[*]} get events --field-selector involvedObject.name=big-worker-0,reason=FailedScheduling -o jsonpath='{.items[0].message}' | grep -q '0/4 nodes are available: 4 Insufficient nvidia.com/gpu'"
out=$("${K[@]}" get pod big-worker-0 -o jsonpath='{.status.phase} {.status.conditions[0].type}={.status.conditions[0].status}/{.status.conditions[0].reason}')
[ "$out" = "Pending PodScheduled=False/Unschedulable" ] && ok "unschedulable pod condition" || fail "unschedulable" "$out"
eventually "an unpullable image shows ImagePullBackOff" 3 bash -c "${K[*]} get pod pull-worker-0 | grep -q ImagePullBackOff"
out=$("${K[@]}" logs pull-worker-0 2>&1)
contains "logs of an unpulled container (kubelet wording)" 'container "pytorch" in pod "pull-worker-0" is waiting to start: trying and failing to pull image' "$out"
check "delete them" "${K[@]}" delete -f "$TMP/pending.yaml" --timeout=10s

# restarts, previous logs, printed lines
cat >"$TMP/forever.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: forever
  annotations:
    testserver.trainyard.io/run-forever: "true"
    testserver.trainyard.io/steps: "2"
spec:
  runPolicy: {backoffLimit: 5}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: pytorch, image: pytorch/pytorch:2.7.1}
EOF
check "create a run-forever job" "${K[@]}" create -f "$TMP/forever.yaml"
check "its pods get Ready" "${K[@]}" wait --for=condition=Ready pod/forever-worker-0 pod/forever-worker-1 --timeout=10s
eventually "get pytorchjobs shows the State column" 3 \
    bash -c "${K[*]} get pytorchjobs | grep -Eq '^forever +Running +[0-9]+s$'"
sleep 0.4
out=$(ctl pods/print '{"job":"forever","rank":1,"lines":["epoch 1 checkpoint saved"]}')
eventually "lines printed through the control API reach the log" 3 \
    bash -c "${K[*]} logs forever-worker-1 | grep -q 'epoch 1 checkpoint saved'"
out=$(ctl pods/restart '{"pod":"forever-worker-0","exitCode":1}')
contains "control API restarts a container" '"ok"' "$out"
eventually "restartCount grows" 3 bash -c "${K[*]} get pod forever-worker-0 | grep -Eq '1/1 +Running +1( |$)'"
out=$("${K[@]}" logs forever-worker-0 --previous 2>&1)
contains "logs --previous shows the crashed run" "[rank 0] training finished: 2 steps" "$out"
out=$("${K[@]}" get pod forever-worker-0 -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode} {.status.containerStatuses[0].lastState.terminated.reason}')
[ "$out" = "1 Error" ] && ok "lastState.terminated exit code and reason" || fail "lastState" "$out"

out=$("${K[@]}" patch pytorchjob forever --type=merge -p '{"spec":{"runPolicy":{"suspend":true}}}' 2>&1)
contains "merge-patch a PyTorchJob (suspend)" "pytorchjob.kubeflow.org/forever patched" "$out"
eventually "suspend deletes the pods" 5 bash -c "[ -z \"\$(${K[*]} get pods -l training.kubeflow.org/job-name=forever -o name)\" ]"
out=$("${K[@]}" get pytorchjob forever 2>&1)
contains "suspended job shows Suspended" "Suspended" "$out"
check "label a node (strategic merge patch)" "${K[@]}" label node "$node" team=ml
out=$("${K[@]}" get nodes -l team=ml -o name 2>&1)
[ "$out" = "node/$node" ] && ok "the new label selects the node" || fail "node label" "$out"
check "delete the job" "${K[@]}" delete pytorchjob forever --timeout=10s
out=$("${K[@]}" get pytorchjob forever 2>&1)
contains "deleted job is gone" "NotFound" "$out"

# OOMKilled rank with ExitCode policy: the operator recreates the pod, then the job succeeds
cat >"$TMP/oom.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: oom
  annotations:
    testserver.trainyard.io/oom-ranks: "2"
    testserver.trainyard.io/fail-attempts: "1"
    testserver.trainyard.io/steps: "3"
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: ExitCode
      template:
        spec:
          containers: [{name: pytorch, image: pytorch/pytorch:2.7.1}]
    Worker:
      replicas: 3
      restartPolicy: ExitCode
      template:
        spec:
          containers: [{name: pytorch, image: pytorch/pytorch:2.7.1}]
EOF
check "create a 4-node job whose rank 2 is OOM-killed once" "${K[@]}" create -f "$TMP/oom.yaml"
eventually "the OOM-killed job restarts and succeeds" 10 bash -c "${K[*]} get pytorchjob oom | grep -q Succeeded"
out=$("${K[@]}" get events --field-selector reason=OOMKilling -o jsonpath='{.items[0].involvedObject.kind}')
[ "$out" = "Node" ] && ok "OOMKilling event on the node" || fail "OOMKilling event" "$out"
out=$("${K[@]}" get events --field-selector involvedObject.name=oom,reason=ExitedWithCode -o jsonpath='{.items[0].message}')
[ "$out" = "Pod: default.oom-worker-1 exited with code 137" ] && ok "ExitedWithCode 137 on the job" || fail "ExitedWithCode" "$out"
out=$("${K[@]}" get events --field-selector involvedObject.name=oom,reason=PyTorchJobRestarting -o name)
[ -n "$out" ] && ok "the job went through Restarting" || fail "Restarting event" "$out"

# the whole job fails: backoff limit, active deadline
cat >"$TMP/limits.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: crashy, annotations: {testserver.trainyard.io/exit-code: "1", testserver.trainyard.io/steps: "1"}}
spec:
  runPolicy: {backoffLimit: 1}
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: pytorch/pytorch:2.7.1}]}}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: slow, annotations: {testserver.trainyard.io/run-forever: "true"}}
spec:
  runPolicy: {activeDeadlineSeconds: 1}
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: pytorch/pytorch:2.7.1}]}}
EOF
check "create jobs that crash-loop and overrun their deadline" "${K[@]}" create -f "$TMP/limits.yaml"
eventually "backoffLimit fails the crash-looping job" 8 bash -c \
    "${K[*]} get pytorchjob crashy -o jsonpath='{.status.conditions[-1].type}: {.status.conditions[-1].message}' | grep -qx 'Failed: PyTorchJob crashy has failed because it has reached the specified backoff limit'"
eventually "activeDeadlineSeconds fails the slow job" 8 bash -c \
    "${K[*]} get pytorchjob slow -o jsonpath='{.status.conditions[-1].type}: {.status.conditions[-1].message}' | grep -qx 'Failed: PyTorchJob slow has failed because it was active longer than specified deadline'"

# OOMKilled under OnFailure: restart in place with CrashLoopBackOff
cat >"$TMP/oom2.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: oom2, annotations: {testserver.trainyard.io/run-forever: "true"}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: pytorch/pytorch:2.7.1}]}}
EOF
"${K[@]}" create -f "$TMP/oom2.yaml" >/dev/null
"${K[@]}" wait --for=condition=Ready pod/oom2-worker-0 --timeout=10s >/dev/null
ctl pods/oomkill '{"pod":"oom2-worker-0"}' >/dev/null
eventually "an OOM kill shows OOMKilled, then CrashLoopBackOff" 3 \
    bash -c "${K[*]} get pod oom2-worker-0 -o jsonpath='{.status.containerStatuses[0].lastState.terminated.reason}/{.status.containerStatuses[0].lastState.terminated.exitCode}' | grep -qx OOMKilled/137"

# node loss: pods are evicted and recreated elsewhere
lost=$("${K[@]}" get pod oom2-worker-0 -o jsonpath='{.spec.nodeName}')
ctl nodes/lose "{\"node\":\"$lost\"}" >/dev/null
eventually "a lost node turns NotReady" 3 bash -c "${K[*]} get node $lost | grep -q NotReady"
eventually "its pod is recreated on another node" 5 \
    bash -c "n=\$(${K[*]} get pod oom2-worker-0 -o jsonpath='{.spec.nodeName}') && [ -n \"\$n\" ] && [ \"\$n\" != $lost ]"

# TrainJob
cat >"$TMP/tj.yaml" <<'EOF'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 3
    image: ghcr.io/example/train:1
    resourcesPerNode: {limits: {nvidia.com/gpu: 8}}
EOF
check "create -f a TrainJob" "${K[@]}" create -f "$TMP/tj.yaml"
eventually "TrainJob pods carry the JobSet labels" 5 \
    bash -c "[ \$(${K[*]} get pods -l jobset.sigs.k8s.io/jobset-name=tj,jobset.sigs.k8s.io/replicatedjob-name=node -o name | wc -l) = 3 ]"
eventually "the TrainJob Completes" 10 bash -c "${K[*]} get trainjob tj | grep -q Complete"
out=$("${K[@]}" logs -l jobset.sigs.k8s.io/jobset-name=tj,batch.kubernetes.io/job-completion-index=2 2>&1)
contains "TrainJob rank from the completion index" "[rank 2] training finished" "$out"

# TrainJob on a namespaced TrainingRuntime (backoffLimit 0): one failing rank fails it;
# suspend deletes the pods, resume brings them back
cat >"$TMP/tj2.yaml" <<'EOF'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: strict}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            backoffLimit: 0
            template:
              spec:
                containers: [{name: node, image: pytorch/pytorch:2.7.1}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tjfail, annotations: {testserver.trainyard.io/rank-exit-codes: "1=3", testserver.trainyard.io/steps: "1"}}
spec:
  runtimeRef: {name: strict, kind: TrainingRuntime}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tjsusp, annotations: {testserver.trainyard.io/run-forever: "true"}}
spec:
  runtimeRef: {name: strict, kind: TrainingRuntime}
EOF
check "create a TrainingRuntime and two TrainJobs" "${K[@]}" create -f "$TMP/tj2.yaml"
eventually "a failing rank fails the TrainJob (FailedJobs)" 8 bash -c \
    "${K[*]} get trainjob tjfail -o jsonpath='{.status.conditions[-1].type}/{.status.conditions[-1].reason}/{.status.jobsStatus[0].failed}' | grep -qx Failed/FailedJobs/1"
eventually "the TrainJob's pods run" 5 \
    bash -c "[ \$(${K[*]} get pods -l jobset.sigs.k8s.io/jobset-name=tjsusp --field-selector status.phase=Running -o name | wc -l) = 2 ]"
check "suspend the TrainJob" "${K[@]}" patch trainjob tjsusp --type=merge -p '{"spec":{"suspend":true}}'
eventually "suspending deletes its pods" 5 bash -c "[ -z \"\$(${K[*]} get pods -l jobset.sigs.k8s.io/jobset-name=tjsusp -o name)\" ]"
out=$("${K[@]}" get trainjob tjsusp -o jsonpath='{.status.conditions[0].type}={.status.conditions[0].status}/{.status.conditions[0].reason}')
[ "$out" = "Suspended=True/Suspended" ] && ok "TrainJob condition Suspended" || fail "TrainJob suspended" "$out"
check "resume it" "${K[@]}" patch trainjob tjsusp --type=merge -p '{"spec":{"suspend":false}}'
eventually "resuming recreates its pods" 5 \
    bash -c "[ \$(${K[*]} get pods -l jobset.sigs.k8s.io/jobset-name=tjsusp -o name | wc -l) = 2 ]"
out=$("${K[@]}" get trainjob tjsusp -o jsonpath='{.status.conditions[0].status}/{.status.conditions[0].reason}')
[ "$out" = "False/Resumed" ] && ok "TrainJob condition Resumed" || fail "TrainJob resumed" "$out"

# sinceTime counts in whole seconds, as through a real API server: resuming from a line's
# timestamp repeats the earlier lines of that second
all=$(k GET "/api/v1/namespaces/default/pods/mnist-master-0/log?timestamps=true")
ts=$(sed -n 4p <<<"$all" | cut -d' ' -f1)
expected=$(awk -v s="${ts:0:19}" 'substr($1, 1, 19) >= s' <<<"$all")
out=$(k GET "/api/v1/namespaces/default/pods/mnist-master-0/log?timestamps=true&sinceTime=$ts")
[ "$out" = "$expected" ] && [[ $out == *"$(sed -n 4p <<<"$all")"* ]] &&
    ok "logs sinceTime (whole seconds)" || fail "sinceTime ($ts)" "$out"
cp "$TMP/mnist.yaml" "$TMP/applied.yaml"
sed -i 's/name: mnist/name: applied/; s/"8"/"1"/' "$TMP/applied.yaml"
check "apply -f creates" "${K[@]}" apply -f "$TMP/applied.yaml"
sed -i 's/2.7.1-cuda12.8/2.8.0-cuda12.8/' "$TMP/applied.yaml"
out=$("${K[@]}" apply -f "$TMP/applied.yaml" 2>&1)
contains "apply -f again configures" "pytorchjob.kubeflow.org/applied configured" "$out"
out=$("${K[@]}" get pytorchjob applied -o jsonpath='{.metadata.generation} {.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image}')
[ "$out" = "2 pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime" ] && ok "a spec change bumps metadata.generation" || fail "generation" "$out"

# time speed: 50 lines 100 ms apart take 5 simulated seconds, 0.5 s at speed 10
ctl speed '{"speed":10}' >/dev/null
sed -e 's/name: mnist/name: fast/' -e 's/"8"/"50"/' -e 's/"300"/"100"/' "$TMP/mnist.yaml" >"$TMP/fast.yaml"
start_ms=$(date +%s%3N)
"${K[@]}" create -f "$TMP/fast.yaml" >/dev/null
out=$("${K[@]}" wait --for=condition=Succeeded pytorchjob/fast --timeout=10s 2>&1)
took=$(($(date +%s%3N) - start_ms))
[[ $out == *"condition met"* && $took -lt 4000 ]] && ok "speed 10 runs a 5 s job in ${took} ms" || fail "speed ($took ms)" "$out"
ctl speed '{"speed":1}' >/dev/null

# kubesim stops cleanly on SIGTERM, without sanitizer reports (leaks fail the test build), and
# takes its nodes with it.
kill -TERM "$SIMPID"
wait "$SIMPID"
rc=$?
SIMPID=""
if [ $rc = 0 ] && ! grep -q "Sanitizer" "$WORK/kubesim.err"; then
    ok "kubesim exits cleanly"
else
    fail "kubesim exit (rc $rc)" "$(head -c 3000 "$WORK/kubesim.err")"
fi
out=$("${K[@]}" get nodes -o name 2>&1)
[ -z "$out" ] && ok "and removes its nodes" || fail "nodes left" "$out"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]

#!/usr/bin/env bash
# deploy/examples: the PyTorchJob wraps torchrun in `trainyard-worker run --preflight --` in the
# container the operator expects, on both replica types; /dev/shm is a Memory emptyDir at least
# as large as the preflight demands and inside the memory limit; GPU and EFA requests equal
# their limits and the counts the preflight expects (and torchrun's processes per node); the
# worker's grace period ends before the kubelet's; every TRAINYARD_* variable the examples set
# is one docs/worker.md documents; the preflight Job runs the preflight; what the examples
# fill in for the daemon (labels, the token's Secret and key, TRAINYARD_URL) is what the
# daemon really renders (its dry run) and what deploy/ sets. Then the job goes through kubectl
# to a real control plane (tests/kube/cluster) whose simulated training operator (kubesim)
# makes the pods, and each pod's environment, given to the worker, makes the preflight the
# node's.
source "$(dirname "$0")/kubelib.sh"
D="$TY_SRC/deploy/examples"
W="$TY_BUILD/trainyard-worker"
tmp=$WORK
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
is() { # name jq-expression file
    jq -e "$2" "$3" > /dev/null && ok || ko "$1"
}
bytes() { numfmt --from=iec-i --suffix= "${1%B}" 2> /dev/null || echo 0; } # 64Gi -> bytes

yq . "$D/pytorchjob.yaml" > "$tmp/job.json" && ok || ko "pytorchjob.yaml does not parse"
yq . "$D/preflight-job.yaml" > "$tmp/pf.json" && ok || ko "preflight-job.yaml does not parse"
is "PyTorchJob" '.apiVersion == "kubeflow.org/v1" and .kind == "PyTorchJob"' "$tmp/job.json"
is "Master and Worker" '.spec.pytorchReplicaSpecs | keys == ["Master", "Worker"]' "$tmp/job.json"

for rt in Master Worker; do
    jq ".spec.pytorchReplicaSpecs.$rt.template.spec" "$tmp/job.json" > "$tmp/pod.json"
    jq '.containers[] | select(.name == "pytorch")' "$tmp/pod.json" > "$tmp/c.json"
    [ -s "$tmp/c.json" ] && ok || ko "$rt: no container named pytorch"
    var() { jq -r --arg n "$1" '.env[] | select(.name == $n) | .value' "$tmp/c.json"; }
    is "$rt: wrapper" '.command[0:5] == ["trainyard-worker", "run", "--preflight", "--", "torchrun"]' \
        "$tmp/c.json"
    # /dev/shm: a Memory emptyDir, at least TRAINYARD_SHM_MIN, inside the memory limit.
    vol=$(jq -r '.volumeMounts[] | select(.mountPath == "/dev/shm") | .name' "$tmp/c.json")
    is "$rt: /dev/shm is a Memory emptyDir" \
        "[.volumes[] | select(.name == \"$vol\") | .emptyDir.medium] == [\"Memory\"]" "$tmp/pod.json"
    shm=$(jq -r ".volumes[] | select(.name == \"$vol\") | .emptyDir.sizeLimit" "$tmp/pod.json")
    [ "$(bytes "$shm")" -ge "$(bytes "$(var TRAINYARD_SHM_MIN)")" ] && ok ||
        ko "$rt: /dev/shm of $shm is below TRAINYARD_SHM_MIN"
    [ "$(bytes "$(jq -r '.resources.limits.memory' "$tmp/c.json")")" -gt "$(bytes "$shm")" ] && ok ||
        ko "$rt: the memory limit does not hold /dev/shm"
    # Devices: requests == limits == what the preflight expects == torchrun's processes.
    is "$rt: requests == limits" '.resources.requests == .resources.limits' "$tmp/c.json"
    gpus=$(jq -r '.resources.limits["nvidia.com/gpu"]' "$tmp/c.json")
    [ "$gpus" = "$(var TRAINYARD_GPUS)" ] && [ "$gpus" = "$(jq -r .spec.nprocPerNode "$tmp/job.json")" ] &&
        jq -e --arg n "--nproc-per-node=$gpus" '.command | index($n)' "$tmp/c.json" > /dev/null &&
        ok || ko "$rt: GPUs, TRAINYARD_GPUS, nprocPerNode and --nproc-per-node differ"
    [ "$(jq -r '.resources.limits["vpc.amazonaws.com/efa"]' "$tmp/c.json")" = "$(var TRAINYARD_EFA)" ] &&
        ok || ko "$rt: EFA devices and TRAINYARD_EFA differ"
    [ "$(var TRAINYARD_INSTANCE_TYPE)" = "$(jq -r '.nodeSelector["node.kubernetes.io/instance-type"]' "$tmp/pod.json")" ] &&
        ok || ko "$rt: TRAINYARD_INSTANCE_TYPE is not the node's"
    # The daemon's variables, the token from a Secret, the grace periods in order.
    for v in TRAINYARD_URL TRAINYARD_JOB_ID TRAINYARD_ATTEMPT TRAINYARD_CHECKPOINT_DIR; do
        [ -n "$(var $v)" ] && ok || ko "$rt: $v not set"
    done
    is "$rt: token from a Secret" '.env[] | select(.name == "TRAINYARD_TOKEN") | .valueFrom.secretKeyRef.key' \
        "$tmp/c.json"
    grace=$(var TRAINYARD_GRACE_PERIOD)
    [ "${grace%s}" -lt "$(jq -r .terminationGracePeriodSeconds "$tmp/pod.json")" ] && ok ||
        ko "$rt: TRAINYARD_GRACE_PERIOD $grace is not below terminationGracePeriodSeconds"
    ckpt=$(var TRAINYARD_CHECKPOINT_DIR)
    jq -e --arg d "$ckpt" '[.volumeMounts[] | select(.mountPath as $m | $d | startswith($m + "/"))] | length == 1' \
        "$tmp/c.json" > /dev/null && ok || ko "$rt: $ckpt is not on a mounted volume"
done

is "preflight Job" '.kind == "Job" and .spec.template.spec.containers[0].command == ["trainyard-worker", "preflight"]' \
    "$tmp/pf.json"
is "preflight Job /dev/shm" '.spec.template.spec.volumes[] | select(.emptyDir.medium == "Memory")' "$tmp/pf.json"

# Every TRAINYARD_* the examples set is documented.
for v in $(cat "$tmp/job.json" "$tmp/pf.json" | jq -r '.. | objects | .name? // empty' | grep '^TRAINYARD_' | sort -u); do
    grep -q "\`$v\`" "$TY_SRC/docs/worker.md" && ok || ko "$v is not in docs/worker.md"
done

# What the daemon renders for the same job: the examples' "daemon" values have its shapes.
cluster_start --nodes 2 --instance-type p5.48xlarge
dep=$(yq -c . "$TY_SRC/deploy/deployment.yaml")
ty_start --executor kubernetes --kubeconfig "$KC" \
    --public-url "$(jq -r '.spec.template.spec.containers[0].env[]|select(.name=="TRAINYARD_PUBLIC_URL")|.value' <<<"$dep")"
api POST '/v1/jobs?dry_run=true' -H 'Content-Type: application/json' \
    -d '{"name":"llm-pretrain","image":"x","nodes":2,"procs_per_node":8}' | jq .object > "$tmp/rendered.json"
rc=$(jq -c '.spec.pytorchReplicaSpecs.Master.template.spec.containers[0]' "$tmp/rendered.json")
jq -e --slurpfile r "$tmp/rendered.json" '(.metadata.labels|keys) - ($r[0].metadata.labels|keys) == [] and
    (.metadata.labels|keys|length) > 0' "$tmp/job.json" > /dev/null && ok ||
    ko "the example's labels are not the daemon's: $(jq -c '.metadata.labels|keys' "$tmp/rendered.json")"
want=$(jq -r '.env[]|select(.name=="TRAINYARD_TOKEN")|.valueFrom.secretKeyRef|"\(.name|sub("^ty-dry-run";"NAME")) \(.key)"' <<<"$rc")
have=$(jq -r '.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env[]|select(.name=="TRAINYARD_TOKEN")|.valueFrom.secretKeyRef|"\(.name|sub("^llm-pretrain";"NAME")) \(.key)"' "$tmp/job.json")
[ "$want" = "$have" ] && ok || ko "the example's token Secret ($have) is not the daemon's ($want)"
want=$(jq -r '.env[]|select(.name=="TRAINYARD_URL")|.value' <<<"$rc")
have=$(jq -r '.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env[]|select(.name=="TRAINYARD_URL")|.value' "$tmp/job.json")
[ "$want" = "$have" ] && ok || ko "the example's TRAINYARD_URL ($have) is not deploy/'s public URL ($want)"
for v in $(jq -r '.env[].name' <<<"$rc" | grep '^TRAINYARD_'); do
    grep -q "\`$v\`" "$TY_SRC/docs/worker.md" || continue # injected for the training code only
    jq -e --arg v "$v" '.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env|map(.name)|index($v)' \
        "$tmp/job.json" > /dev/null && ok || ko "the daemon injects $v, the example lacks it"
done

# The operator (v1.9, simulated) sets WORLD_SIZE=16 (processes), RANK and PET_NODE_RANK (pod
# index), PET_NNODES=2; the two pods' preflights must meet as node 0 and 1 of 2. Devices, the
# master's address and the rendezvous are this machine's (no GPU, tcp, a shared directory).
{
    K=(kubectl --kubeconfig "$KADMIN" --cache-dir "$tmp/cache" --request-timeout=20s)
    "${K[@]}" create -f "$D/pytorchjob.yaml" > /dev/null 2>&1 && ok || ko "kubectl create -f pytorchjob.yaml"
    port=$((20000 + RANDOM % 20000))
    pids=""
    for pod in llm-pretrain-master-0 llm-pretrain-worker-0; do
        for _ in $(seq 100); do
            "${K[@]}" get pod $pod -o json > "$tmp/$pod.json" 2> /dev/null && break
            sleep 0.1
        done
        mapfile -t penv < <(jq -r '.spec.containers[] | select(.name == "pytorch") | .env[] |
                                   select(.value != null) | "\(.name)=\(.value)"' "$tmp/$pod.json")
        env -i PATH="$PATH" "${penv[@]}" TRAINYARD_URL= TRAINYARD_GPUS=0 TRAINYARD_EFA=0 \
            TRAINYARD_SHM_MIN=1Mi TRAINYARD_DISK_MIN=1Mi TRAINYARD_CHECKPOINT_DIR="$tmp/ckpt" \
            TRAINYARD_PREFLIGHT_TIMEOUT=60s TRAINYARD_RENDEZVOUS="dir:$tmp/rdzv" FI_PROVIDER=tcp \
            FI_TCP_IFACE=lo MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            "$W" run --preflight -- sh -c 'echo "command: node $PET_NODE_RANK, WORLD_SIZE $WORLD_SIZE"' \
            > "$tmp/$pod.out" 2> "$tmp/$pod.err" &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" && ok || ko "run --preflight in pod $p's environment failed"; done
    grep -q '^pass  fabric.p2p.rank1 ' "$tmp/llm-pretrain-master-0.out" && ok ||
        ko "node 0 did not test the fabric with node 1: $(cat "$tmp/llm-pretrain-master-0.out")"
    grep -q '^command: node 1, WORLD_SIZE 16$' "$tmp/llm-pretrain-worker-0.out" && ok ||
        ko "the command lost the operator's variables: $(tail -2 "$tmp/llm-pretrain-worker-0.out")"
}

PASSED=$pass FAILED=$fail
ty_done

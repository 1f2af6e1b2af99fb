#!/usr/bin/env bash
# A hostile submitter on the cluster (issue 17): with a *submit* token, what reached the
# Kubernetes API server before there was a cluster policy. Each check fails on a daemon without
# one: it accepted (dry runs and real submissions alike) a manifest with a privileged container,
# hostNetwork and a hostPath / volume, a job in the daemon's own namespace running as its own
# service account, a job mounting the daemon's database claim, and deploy/ labelled no namespace
# for Pod Security. Then the policy an admin sets per token: what it grants is allowed, nothing
# else, and only admins may set it. Dry runs need no cluster; the real submissions go to the
# test API server (tests/kube/testserver).
source "$(dirname "$0")/kubelib.sh"
kube_start
for n in trainyard team-a team-b; do
    k POST /api/v1/namespaces -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$n\"}}" >/dev/null
done
# The daemon's own namespace, as a pod would learn it (here it runs outside the cluster); set
# in the environment so that a daemon that has no such setting still starts (and fails below).
export TRAINYARD_KUBE_DAEMON_NAMESPACE=trainyard
ty_start --executor kubernetes --kubeconfig "$KC"
JSON='Content-Type: application/json'
token() { api POST /v1/tokens -H "$JSON" -d "{\"name\":\"$1\",\"scope\":\"$2\"}"; }
ci_json=$(token ci submit)
ci=$(jq -r .token <<<"$ci_json")
ci_id=$(jq -r .id <<<"$ci_json")
other=$(token other submit | jq -r .token)

# send TOKEN BODY [CONTENT-TYPE] [QUERY]: POST /v1/jobs; the status is printed, the body and
# headers kept in $WORK/out and $WORK/hdr.
send() {
    curl -s -o "$WORK/out" -D "$WORK/hdr" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
        -H "Content-Type: ${3:-application/json}" --data-binary "$2" "$URL/v1/jobs${4-?dry_run=true}"
}
names() { jq -e --arg p "$1" '.errors|map(.pointer)|index($p)' "$WORK/out"; }
# refused WHAT TOKEN BODY CONTENT-TYPE QUERY POINTER...: a 403 problem+json naming each pointer.
refused() {
    local what=$1 tok=$2 body=$3 ctype=$4 query=$5
    shift 5
    check_eq "$what: 403" 403 "$(send "$tok" "$body" "$ctype" "$query")"
    check "$what: problem+json" grep -qi '^content-type: application/problem+json' "$WORK/hdr"
    for p in "$@"; do
        check "$what: names $p" names "$p"
    done
}
accepted() { # accepted WHAT TOKEN BODY: a dry run answers 200 with the object
    check_eq "$1: 200" 200 "$(send "$2" "$3")"
}

hostile_yaml='apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: hostile}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          hostNetwork: true
          containers:
          - name: pytorch
            image: busybox
            command: [sh, -c, "cat /host/etc/shadow"]
            securityContext: {privileged: true}
            volumeMounts: [{name: root, mountPath: /host}]
          volumes:
          - name: root
            hostPath: {path: /}'
W=/spec/pytorchReplicaSpecs/Worker/template/spec
for q in '?dry_run=true' ''; do
    refused "the manifest (YAML${q:+, dry run})" "$ci" "$hostile_yaml" application/yaml "$q" \
        $W/containers/0/securityContext/privileged $W/hostNetwork $W/volumes/0/hostPath
done
check_eq "no PyTorchJob reached the API server" 0 \
    "$(k GET /apis/kubeflow.org/v1/namespaces/default/pytorchjobs | jq '.items|length')"
check_eq "no job was stored" 0 "$(api GET /v1/jobs | jq '.items|length')"
# The same manifest inside a native spec: the pointers are into what was sent.
wrapped=$(yq -c '{name: "wrapped", executor: "kubernetes", kubernetes: {manifest: .}}' <<<"$hostile_yaml")
refused "the manifest as kubernetes.manifest" "$ci" "$wrapped" "" '?dry_run=true' \
    /kubernetes/manifest$W/containers/0/securityContext/privileged /kubernetes/manifest$W/hostNetwork

# The daemon's own identity, namespace and database volume.
own='{"name":"own","image":"busybox","executor":"kubernetes","kubernetes":{"namespace":"trainyard","service_account":"trainyard"}}'
for q in '?dry_run=true' ''; do
    refused "the daemon's namespace and service account${q:+ (dry run)}" "$ci" "$own" "" "$q" \
        /kubernetes/namespace /kubernetes/service_account
done
refused "the daemon's database claim" "$ci" \
    '{"name":"db","image":"busybox","executor":"kubernetes","checkpoint":{"volume_claim":"trainyard-data","path":"/data"}}' \
    "" '?dry_run=true' /checkpoint/volume_claim
refused "a manifest in the daemon's namespace mounting its claim" "$ci" \
    '{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"m","namespace":"trainyard"},"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch","image":"busybox"}],"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"trainyard-data"}}]}}}}}}' \
    "" '?dry_run=true' /metadata/namespace $W/volumes/0/persistentVolumeClaim/claimName
# What else a pod could use to leave its sandbox, in every container of every pod template.
caps='{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"t"},"spec":{"runtimeRef":{"name":"torch-distributed"},"runtimePatches":[{"manager":"x","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{"spec":{"hostPID":true,"initContainers":[{"name":"i","image":"busybox","securityContext":{"capabilities":{"add":["IPC_LOCK","SYS_ADMIN"]}}}]}}}}}]}}}}]}}'
R=/spec/runtimePatches/0/trainingRuntimeSpec/template/spec/replicatedJobs/0/template/spec/template/spec
refused "a TrainJob's runtime patch" "$ci" "$caps" "" '?dry_run=true' \
    $R/hostPID $R/initContainers/0/securityContext/capabilities/add/1
accepted "IPC_LOCK (EFA pins memory) is allowed" "$ci" \
    '{"name":"efa","image":"busybox","executor":"kubernetes","kubernetes":{"manifest":{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"efa"},"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch","image":"busybox","securityContext":{"capabilities":{"add":["IPC_LOCK"]}}}]}}}}}}}}'
# Templates: an admin's template, a submitter's overrides.
api POST /v1/templates -H "$JSON" -d '{"name":"train","spec":{"name":"t","image":"busybox","executor":"kubernetes"}}' >/dev/null
check_eq "a template with the daemon's identity in overrides: 403" 403 "$(curl -s -o "$WORK/out" -w '%{http_code}' \
    -X POST -H "Authorization: Bearer $ci" -H "$JSON" \
    -d '{"overrides":{"kubernetes":{"service_account":"trainyard"}}}' "$URL/v1/templates/train/jobs?dry_run=true")"
check "and names the field" names /kubernetes/service_account
# An admin is not held to it.
check_eq "an admin token may" 200 "$(send "$TOKEN" "$own")"

# ---- the policy an admin sets per token
code=$(curl -s -o "$WORK/out" -w "%{http_code}" -X PUT -H "Authorization: Bearer $ci" -H "$JSON" -d "{}" "$URL/v1/policies/mine")
check_eq "a submit token cannot set policies" 403 "$code"
team='{"description":"team a","tokens":["'$ci_id'"],"namespaces":["team-a"],"service_accounts":["trainer"],
  "volume_claims":["team-a-*"],"image_registries":["registry.example.com/team-a"],
  "node_selectors":{"node.kubernetes.io/instance-type":["p5.48xlarge"]}}'
check_eq "an admin creates one" 201 "$(status PUT /v1/policies/team-a -H "$JSON" -d "$team")"
check_eq "and replaces it" 200 "$(status PUT /v1/policies/team-a -H "$JSON" -d "$team")"
check_eq "it governs the token" "$ci_id" "$(api GET /v1/policies/team-a | jq -r '.tokens[0]')"
check "it is audited" bash -c "curl -s -H 'Authorization: Bearer $TOKEN' '$URL/v1/audit?target=policy/team-a' | jq -e '.items|map(.action)|index(\"policy.create\") and index(\"policy.update\")'"
ok='{"name":"ok","image":"registry.example.com/team-a/train:1","executor":"kubernetes","placement":{"instance_type":"p5.48xlarge"},
  "kubernetes":{"namespace":"team-a","service_account":"trainer"},"checkpoint":{"volume_claim":"team-a-ckpt","path":"/ckpt"}}'
accepted "what it grants" "$ci" "$ok"
check_eq "and submitted for real" 201 "$(send "$ci" "$ok" "" "")"
eventually "the PyTorchJob is created in team-a" 20 bash -c "curl -sk '$KURL/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs' | jq -e '.items|length==1'"
bad() { jq -c "$1" <<<"$ok"; }
refused "a namespace it does not grant" "$ci" "$(bad '.kubernetes.namespace="team-b"')" "" '?dry_run=true' /kubernetes/namespace
refused "a service account it does not grant" "$ci" "$(bad '.kubernetes.service_account="admin"')" "" '?dry_run=true' /kubernetes/service_account
refused "a claim it does not grant" "$ci" "$(bad '.checkpoint.volume_claim="team-b-ckpt"')" "" '?dry_run=true' /checkpoint/volume_claim
refused "a registry it does not grant" "$ci" "$(bad '.image="registry.example.com/team-a-evil/x:1"')" "" '?dry_run=true' /image
refused "a node selector it does not grant" "$ci" "$(bad '.placement.instance_type="g5.xlarge"|.kubernetes.node_selector={"karpenter.sh/nodepool":"reserved"}')" "" '?dry_run=true' \
    /placement/instance_type /kubernetes/node_selector/karpenter.sh~1nodepool
check "the refusal says what the policy grants" jq -e '.errors[0].detail|contains("policy")' "$WORK/out"
refused "another token is not governed by it" "$other" "$ok" "" '?dry_run=true' /kubernetes/namespace /kubernetes/service_account /checkpoint/volume_claim
check_eq "a token is governed by one policy" 409 "$(status PUT /v1/policies/team-b -H "$JSON" -d '{"tokens":["'$ci_id'"]}')"
check_eq "an unknown token is refused" 422 "$(status PUT /v1/policies/team-b -H "$JSON" -d '{"tokens":["tok_nope"]}')"
check "naming it" bash -c "curl -s -X PUT -H 'Authorization: Bearer $TOKEN' -H '$JSON' -d '{\"tokens\":[\"tok_nope\"]}' '$URL/v1/policies/team-b' | jq -e '.errors[0].pointer==\"/tokens/0\"'"
check_eq "a bad grant is refused" 422 "$(status PUT /v1/policies/team-b -H "$JSON" -d '{"namespaces":["Team B"]}')"
# The default policy governs every other non-admin token; grants never reach the daemon's own.
check_eq "the built-in default is listed" "true default" "$(api GET /v1/policies/default | jq -r '"\(.builtin) \(.namespaces[0])"')"
check_eq "an admin sets the default" 201 "$(status PUT /v1/policies/default -H "$JSON" \
    -d '{"namespaces":["*"],"service_accounts":["*"],"volume_claims":["*"],"image_registries":["*"]}')"
accepted "the default grants the other token team-b" "$other" "$(bad '.kubernetes.namespace="team-b"|del(.placement)')"
refused "but never the daemon's own" "$other" "$own" "" '?dry_run=true' /kubernetes/namespace /kubernetes/service_account
check "trainyard policies lists them" bash -c "TRAINYARD_URL='$URL' TRAINYARD_TOKEN='$TOKEN' '$TRAINYARD' policies | grep -E '^team-a +$ci_id +team-a +trainer +team-a-\\* +registry.example.com/team-a '"
check_eq "deleting a policy" 204 "$(status DELETE /v1/policies/team-a)"
refused "puts its tokens under the default" "$ci" "$ok" "" '?dry_run=true' /placement/instance_type

# ---- deploy/: the jobs' namespace is not the daemon's, and Pod Security admission is on
ns=$(yq -c 'select(.kind=="Namespace")' "$TY_SRC/deploy/namespace.yaml" | jq -sc .)
jobs_ns=$(yq -r 'select(.kind=="Deployment")|.spec.template.spec.containers[0].env[]|select(.name=="TRAINYARD_NAMESPACE")|.value' "$TY_SRC/deploy/deployment.yaml")
check "deploy/ runs jobs outside the daemon's namespace" bash -c "[ -n '$jobs_ns' ] && [ '$jobs_ns' != trainyard ]"
label() { jq -r --arg n "$1" --arg l "pod-security.kubernetes.io/$2" '.[]|select(.metadata.name==$n)|.metadata.labels[$l]' <<<"$ns"; }
check_eq "the jobs' namespace enforces Pod Security baseline" baseline "$(label "$jobs_ns" enforce)"
check_eq "and warns about restricted" restricted "$(label "$jobs_ns" warn)"
check_eq "the daemon's namespace enforces restricted" restricted "$(label trainyard enforce)"
ty_done

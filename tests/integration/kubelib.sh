# Helpers for the tests of the Kubernetes executor (tests/integration/4N-kube-*.sh, 67-*).
#
# Most tests run against a real control plane (tests/kube/cluster/up.sh: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler) with the simulated nodes, kubelets and Kubeflow
# operators of tests/kube/sim (kubesim) acting through it; the daemon runs as deploy/'s
# ServiceAccount under the real RBAC authorizer:
#
#   source "$(dirname "$0")/kubelib.sh"
#   cluster_start [kubesim flags]       # sets KURL, KC (the daemon's), KADMIN, KSIM, KNS
#   ty_start --executor kubernetes --kubeconfig "$KC"
#   k GET /api/v1/namespaces/$KNS/pods  # the API server as admin, body on stdout
#   kubectl_admin get pods              # the real kubectl, as admin
#   ctl pods/oomkill '{"job":"ty-x","rank":2}'   # kubesim's control API (/_test/)
#
# A missing control plane build fails the test (tests/kube/cluster/build.sh builds it; `make
# test` does that first): never a silent skip.
#
# Only what a real API server cannot do is still asked of the in-process test API server
# (tests/kube/testserver, docs/kube-testserver.md): refusing chosen requests (5xx, 429),
# forgetting its watch history on demand (410), and tokens that expire within seconds:
#
#   kube_start [testserver flags]       # sets KURL, KC (its kubeconfig), KNS=default
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KSERVER="$TY_BUILD/tests/kube/testserver"
KUBESIM="$TY_BUILD/tests/kube/kubesim"
KPID=""
SIMPID=""
KURL=""
KSIM=""
KNS=default
KC="$WORK/kubeconfig"
KCURL=()
KCLUSTER=""

kube_cleanup() {
    [ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
    [ -n "$SIMPID" ] && kill "$SIMPID" 2>/dev/null && wait "$SIMPID" 2>/dev/null
    [ -n "$KCLUSTER" ] && "$TY_SRC/tests/kube/cluster/down.sh" "$KCLUSTER"
    cleanup
}
trap kube_cleanup EXIT

# cluster_start [kubesim flags]: the real control plane in $WORK/cluster, kubesim in front of
# it, and the namespace the daemon's ServiceAccount may run jobs in (trainyard-jobs, deploy/).
cluster_start() {
    KCLUSTER=$WORK/cluster
    if ! "$TY_SRC/tests/kube/cluster/up.sh" "$KCLUSTER" 2>"$WORK/cluster-up.err"; then
        cat "$WORK/cluster-up.err" >&2
        echo "FAIL: the Kubernetes control plane did not start" >&2
        exit 1
    fi
    # shellcheck disable=SC1091
    source "$KCLUSTER/env"
    KURL=$KUBE_SERVER
    KC=$KUBE_DAEMON
    KADMIN=$KUBE_ADMIN
    KNS=trainyard-jobs
    KCURL=(--cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer $KUBE_ADMIN_TOKEN")
    sim_start "$@"
}

# sim_start [kubesim flags]: (re)starts kubesim against the running control plane.
sim_start() {
    [ -n "$SIMPID" ] && kill "$SIMPID" 2>/dev/null && wait "$SIMPID" 2>/dev/null
    : >"$WORK/ksim"
    "$KUBESIM" --kubeconfig "$KUBE_SIM" --pki "$KUBE_PKI" "$@" >"$WORK/ksim" 2>>"$WORK/kubesim.err" &
    SIMPID=$!
    for _ in $(seq 1 600); do
        [ -s "$WORK/ksim" ] && break
        kill -0 "$SIMPID" 2>/dev/null || break
        sleep 0.1
    done
    KSIM=$(head -1 "$WORK/ksim")
    [ -n "$KSIM" ] || { echo "FAIL: kubesim did not start" >&2; cat "$WORK/kubesim.err" >&2; exit 1; }
}

kubectl_admin() {
    kubectl --kubeconfig "$KADMIN" --cache-dir "$WORK/kubectl-cache" "$@" 2> >(grep -v '^Warning: version difference' >&2)
}

kube_start() {
    : >"$WORK/kurl"
    "$KSERVER" --port "${KPORT:-0}" --kubeconfig "$KC" "$@" >"$WORK/kurl" 2>>"$WORK/testserver.err" &
    KPID=$!
    for _ in $(seq 1 100); do
        [ -s "$WORK/kurl" ] && break
        sleep 0.05
    done
    KURL=$(head -1 "$WORK/kurl")
    KSIM=$KURL
    KNS=default
    KCURL=()
    [ -n "$KURL" ] || { echo "the test API server did not start" >&2; cat "$WORK/testserver.err" >&2; exit 1; }
}

kube_stop() {
    [ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
    KPID=""
}

k() {
    local method=$1 path=$2
    shift 2
    curl -sk "${KCURL[@]}" -X "$method" "$@" "$KURL$path"
}

kstatus() {
    local method=$1 path=$2
    shift 2
    curl -sk "${KCURL[@]}" -o /dev/null -w '%{http_code}' -X "$method" "$@" "$KURL$path"
}

# kgone PATH: the API server answers 404 for it (for eventually: evaluated on each try).
kgone() {
    [ "$(kstatus GET "$1")" = 404 ]
}

ctl() {
    curl -sk -X POST "$KSIM/_test/$1" -d "${2:-{\}}"
}

# job_field ID JQ: one field of a job.
job_field() {
    api GET "/v1/jobs/$1" | jq -r "$2"
}

# state_is ID STATE
state_is() {
    [ "$(job_field "$1" .state)" = "$2" ]
}

# pod_lines NS POD [CONTAINER]: "POD LINE" for each line the pod printed (through the API
# server, from the kubelet: its current container instance).
pod_lines() {
    k GET "/api/v1/namespaces/$1/pods/$2/log?container=${3:-pytorch}" | sed "s/^/$2 /"
}

# job_lines ID: "POD LINE" for each line trainyard stored for the job, in its order.
job_lines() {
    api GET "/v1/jobs/$1/logs?limit=100000&format=ndjson" | jq -r '"\(.pod) \(.line)"'
}

# same_lines WHAT EXPECTED_FILE ACTUAL_FILE: equal as multisets (sorted), each line once.
same_lines() {
    if diff <(sort "$2") <(sort "$3") >"$WORK/diff" 2>&1; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        echo "FAIL: $1:" >&2
        head -20 "$WORK/diff" >&2
    fi
}

# submit_kube JSON: submits and prints the new job's id.
submit_id() {
    submit "$1" | jq -r .id
}

# pods_of OBJ: the names of a job object's pods that exist now (any phase).
pods_of() {
    k GET "/api/v1/namespaces/$KNS/pods?labelSelector=training.kubeflow.org%2Fjob-name%3D$1" |
        jq -r '.items[].metadata.name'
}

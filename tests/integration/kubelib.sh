# Helpers for the tests of the Kubernetes executor (tests/integration/4N-kube-*.sh): each test
# starts the test Kubernetes API server (tests/kube/testserver, docs/kube-testserver.md) on a
# free port and a trainyard daemon with --executor kubernetes pointed at it.
#
#   source "$(dirname "$0")/kubelib.sh"
#   kube_start [testserver flags]      # sets KURL, KC (its kubeconfig)
#   ty_start --executor kubernetes --kubeconfig "$KC"
#   k GET /api/v1/namespaces/default/pods          # the API server, body on stdout
#   kstatus GET /apis/...                           # its HTTP status only
#   ctl pods/oomkill '{"job":"ty-x","rank":2}'      # the control API (/_test/)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KSERVER="$TY_BUILD/tests/kube/testserver"
KPID=""
KURL=""
KC="$WORK/kubeconfig"

kube_cleanup() {
    [ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
    cleanup
}
trap kube_cleanup EXIT

kube_start() {
    : >"$WORK/kurl"
    "$KSERVER" --port "${KPORT:-0}" --kubeconfig "$KC" "$@" >"$WORK/kurl" 2>>"$WORK/testserver.err" &
    KPID=$!
    for _ in $(seq 1 100); do
        [ -s "$WORK/kurl" ] && break
        sleep 0.05
    done
    KURL=$(head -1 "$WORK/kurl")
    [ -n "$KURL" ] || { echo "the test API server did not start" >&2; cat "$WORK/testserver.err" >&2; exit 1; }
}

kube_stop() {
    [ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
    KPID=""
}

k() {
    local method=$1 path=$2
    shift 2
    curl -sk -X "$method" "$@" "$KURL$path"
}

kstatus() {
    local method=$1 path=$2
    shift 2
    curl -sk -o /dev/null -w '%{http_code}' -X "$method" "$@" "$KURL$path"
}

# kgone PATH: the API server answers 404 for it (for eventually: evaluated on each try).
kgone() {
    [ "$(kstatus GET "$1")" = 404 ]
}

ctl() {
    curl -sk -X POST "$KURL/_test/$1" -d "${2:-{\}}"
}


# job_field ID JQ: one field of a job.
job_field() {
    api GET "/v1/jobs/$1" | jq -r "$2"
}

# state_is ID STATE
state_is() {
    [ "$(job_field "$1" .state)" = "$2" ]
}

# pod_lines NS POD [CONTAINER]: "POD LINE" for each line the pod printed (the API server's own
# log of its current container instance).
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

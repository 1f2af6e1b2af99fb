#!/bin/bash
# Starts a real Kubernetes control plane on loopback: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler (built once per machine by build.sh), with our
# CRDs and deploy/ applied for real.
#
#   tests/kube/cluster/up.sh DIR        # then: source DIR/env
#   tests/kube/cluster/down.sh DIR
#
# DIR/env sets KUBE_SERVER (https://127.0.0.1:PORT), KUBE_ADMIN (an admin kubeconfig, group
# system:masters; KUBE_ADMIN_TOKEN its token), KUBE_DAEMON (a kubeconfig with the token of
# deploy/'s ServiceAccount trainyard/trainyard: the daemon runs under the real RBAC authorizer
# with exactly what deploy/rbac.yaml grants), KUBE_SIM (kubesim's: a cluster-admin
# ServiceAccount, queued by priority and fairness like the daemon), KUBE_PKI (the CA, and the
# serving certificate a simulated kubelet or webhook presents: subjectAltName IP:127.0.0.1),
# KUBE_BIN and KUBE_DIR.
#
# No container runtime runs here: nodes, kubelets and the Kubeflow operators are simulated by
# tests/kube/sim (kubesim), an API client like kwok. Logs of each process: DIR/logs/.
# Exit 1 (with the failing process's log) when anything does not come up.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
DIR=${1:?usage: up.sh DIR}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

say() { echo "kube-up: $*" >&2; }
die() {
    say "FAILED: $*"
    for f in "$DIR"/logs/*.log; do
        [ -s "$f" ] && { echo "---- $f (last lines)" >&2; tail -15 "$f" >&2; }
    done
    "$HERE/down.sh" "$DIR" --keep >/dev/null 2>&1 || true
    exit 1
}

[ -e "$DIR/pids" ] && "$HERE/down.sh" "$DIR" --keep >/dev/null 2>&1 || true
BIN=$("$HERE/build.sh") || die "the control plane is not built (tests/kube/cluster/build.sh)"
command -v etcd >/dev/null || die "etcd is missing (Debian package etcd-server)"
command -v kubectl >/dev/null || die "kubectl is missing"
rm -rf "$DIR/etcd" "$DIR/logs" "$DIR/pki" "$DIR/pv"
mkdir -p "$DIR/logs" "$DIR/pki" "$DIR/pv"
: >"$DIR/pids"

# A free loopback port: bind-tested, and not one handed out earlier in this run.
USED=" "
free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$((12000 + RANDOM % 20000)) # below the ephemeral range (32768-)
        case "$USED" in *" $p "*) continue ;; esac
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            USED="$USED$p "
            echo "$p"
            return 0
        fi
    done
    return 1
}

# ---- certificates: one CA for the API server's serving certificate, its client certificate
# to the kubelets, and the serving certificate of the simulated kubelets and webhooks.
PKI=$DIR/pki
ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 30 \
    -subj "/CN=trainyard-test-ca" || die "openssl: CA"
cert() { # name subject san
    ossl req -newkey rsa:2048 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" -subj "$2" || return 1
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$PKI/$1.ext"
    ossl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
        -out "$PKI/$1.crt" -days 30 -extfile "$PKI/$1.ext"
}
cert apiserver "/CN=kube-apiserver" \
    "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" ||
    die "openssl: API server certificate"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "DNS:kube-apiserver" ||
    die "openssl: kubelet client certificate"
cert serving "/CN=kubesim" "IP:127.0.0.1,DNS:localhost" || die "openssl: kubelet serving certificate"
ossl genrsa -out "$PKI/sa.key" 2048 && ossl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" ||
    die "openssl: service account keys"
ADMIN_TOKEN=$(openssl rand -hex 24)
echo "$ADMIN_TOKEN,admin,admin-uid,system:masters" >"$PKI/tokens.csv"
chmod 600 "$PKI"/*.key "$PKI/tokens.csv"

start() { # name command...
    local name=$1
    shift
    setsid "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
    echo "$name $!" >>"$DIR/pids"
}
alive() { # name
    local pid
    pid=$(awk -v n="$1" '$1 == n {print $2}' "$DIR/pids")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}
wait_for() { # what seconds process command...
    local what=$1 secs=$2 proc=$3
    shift 3
    local end=$((SECONDS + secs))
    while ((SECONDS < end)); do
        "$@" >/dev/null 2>&1 && return 0
        alive "$proc" || die "$proc exited while waiting for $what"
        sleep 0.2
    done
    die "$what (after ${secs}s)"
}

T0=$SECONDS
# ---- etcd
ETCD_PORT=$(free_port) && ETCD_PEER=$(free_port) || die "no free port"
start etcd etcd --name trainyard --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "trainyard=http://127.0.0.1:$ETCD_PEER" --quota-backend-bytes 4294967296
wait_for "etcd to answer" 30 etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"

# ---- kube-apiserver
API_PORT=$(free_port) || die "no free port"
SERVER=https://127.0.0.1:$API_PORT
# --endpoint-reconciler-type=none: the `kubernetes` Service's endpoint would be a loopback
# address, which the API server refuses (and logs) every few seconds; nothing reaches it here.
start apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --token-auth-file "$PKI/tokens.csv" \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --authorization-mode Node,RBAC --service-cluster-ip-range 10.96.0.0/16 \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --endpoint-reconciler-type none --allow-privileged=true --cert-dir "$DIR/pki/apiserver-generated"
kadm() { kubectl --kubeconfig "$DIR/admin.kubeconfig" "$@"; }
kubeconfig() { # file user token namespace
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainyard-test
  cluster:
    server: $SERVER
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2@trainyard-test
  context: {cluster: trainyard-test, user: $2, namespace: $4}
current-context: $2@trainyard-test
preferences: {}
EOF
    chmod 600 "$1"
}
kubeconfig "$DIR/admin.kubeconfig" admin "$ADMIN_TOKEN" default
wait_for "kube-apiserver to be ready" 120 apiserver \
    curl -sf --cacert "$PKI/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER/readyz"
say "kube-apiserver v1.20.2 ready at $SERVER after $((SECONDS - T0)) s"

# ---- kube-controller-manager (service account tokens, garbage collection, namespaces, node
# lifecycle, PersistentVolume binding, Deployments) and kube-scheduler
start controller-manager "$BIN/kube-controller-manager" --kubeconfig "$DIR/admin.kubeconfig" \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --leader-elect=false --port 0 --secure-port 0 --use-service-account-credentials=false \
    --controllers '*,-csrsigning,-csrapproving,-csrcleaner,-bootstrapsigner,-tokencleaner'
start scheduler "$BIN/kube-scheduler" --kubeconfig "$DIR/admin.kubeconfig" \
    --leader-elect=false --port 0 --secure-port 0

# ---- CRDs: written from the upstream API reference, their pod templates from this server's
# own OpenAPI document, so that unknown fields are pruned as on a cluster.
kadm get --raw /openapi/v2 >"$DIR/openapi-v2.json" || die "GET /openapi/v2"
for crd in "$HERE"/crds/*.yaml; do
    yq . "$crd" | jq --slurpfile api "$DIR/openapi-v2.json" -f "$HERE/crd-schema.jq" \
        >"$DIR/$(basename "$crd" .yaml).json" || die "expanding $(basename "$crd")"
done
# create, not apply: apply's last-applied annotation would double each CRD's size.
kadm create -f "$DIR/pytorchjobs.json" -f "$DIR/trainjobs.json" -f "$DIR/trainingruntimes.json" \
    -f "$DIR/clustertrainingruntimes.json" >/dev/null 2>>"$DIR/logs/kubectl.log" || die "installing the CRDs"
kadm wait --for condition=Established --timeout 60s crd/pytorchjobs.kubeflow.org \
    crd/trainjobs.trainer.kubeflow.org crd/trainingruntimes.trainer.kubeflow.org \
    crd/clustertrainingruntimes.trainer.kubeflow.org >/dev/null 2>>"$DIR/logs/kubectl.log" ||
    die "the CRDs are not established"
kadm apply -f "$HERE/crds/torch-distributed.yaml" >/dev/null 2>>"$DIR/logs/kubectl.log" ||
    die "the torch-distributed ClusterTrainingRuntime"
kadm create namespace kubeflow >/dev/null 2>&1 || true

# ---- deploy/, for real. Its PersistentVolumeClaim binds to a hostPath volume here (no
# provisioner runs); its Deployment's pod waits for a node until a simulator brings nodes.
kadm apply -f - >/dev/null 2>>"$DIR/logs/kubectl.log" <<EOF || die "the data volume"
apiVersion: v1
kind: PersistentVolume
metadata: {name: trainyard-data-test}
spec:
  capacity: {storage: 50Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: $DIR/pv}
EOF
kadm apply -f "$SRC/deploy/namespace.yaml" >/dev/null 2>>"$DIR/logs/kubectl.log" || die "deploy/namespace.yaml"
kadm apply -f "$SRC/deploy/" >/dev/null 2>>"$DIR/logs/kubectl.log" || die "kubectl apply -f deploy/"

# ---- the daemon's kubeconfig: its ServiceAccount's token (made by the token controller)
sa_token() {
    local secret
    secret=$(kadm -n trainyard get serviceaccount trainyard -o jsonpath='{.secrets[0].name}') &&
        [ -n "$secret" ] &&
        kadm -n trainyard get secret "$secret" -o jsonpath='{.data.token}' | base64 -d >"$DIR/sa.token" &&
        [ -s "$DIR/sa.token" ]
}
wait_for "the trainyard ServiceAccount's token" 60 controller-manager sa_token
kubeconfig "$DIR/trainyard.kubeconfig" trainyard "$(cat "$DIR/sa.token")" trainyard-jobs
# kubesim's identity: a ServiceAccount bound to cluster-admin, not system:masters, whose
# requests the API server's priority and fairness would not queue: like the kubelets and
# operators it stands for, its burst of writes must share the server with the daemon's.
kadm -n kube-system create serviceaccount kubesim >/dev/null 2>>"$DIR/logs/kubectl.log" &&
    kadm create clusterrolebinding kubesim --clusterrole cluster-admin \
        --serviceaccount kube-system:kubesim >/dev/null 2>>"$DIR/logs/kubectl.log" ||
    die "the kubesim ServiceAccount"
sim_token() {
    local secret
    secret=$(kadm -n kube-system get serviceaccount kubesim -o jsonpath='{.secrets[0].name}') &&
        [ -n "$secret" ] &&
        kadm -n kube-system get secret "$secret" -o jsonpath='{.data.token}' | base64 -d >"$DIR/sa.token" &&
        [ -s "$DIR/sa.token" ]
}
wait_for "the kubesim ServiceAccount's token" 60 controller-manager sim_token
kubeconfig "$DIR/kubesim.kubeconfig" kubesim "$(cat "$DIR/sa.token")" default
rm -f "$DIR/sa.token"
alive scheduler || die "kube-scheduler exited"
alive controller-manager || die "kube-controller-manager exited"

cat >"$DIR/env" <<EOF
KUBE_DIR=$DIR
KUBE_BIN=$BIN
KUBE_SERVER=$SERVER
KUBE_ADMIN=$DIR/admin.kubeconfig
KUBE_ADMIN_TOKEN=$ADMIN_TOKEN
KUBE_DAEMON=$DIR/trainyard.kubeconfig
KUBE_SIM=$DIR/kubesim.kubeconfig
KUBE_PKI=$PKI
KUBE_ETCD=http://127.0.0.1:$ETCD_PORT
EOF
say "control plane up in $((SECONDS - T0)) s: source $DIR/env"

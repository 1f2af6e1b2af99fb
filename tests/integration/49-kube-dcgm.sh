#!/bin/bash
# 49-kube-dcgm: GPU health of Kubernetes jobs from a DCGM exporter, through the real
# Prometheus, on a real control plane: kubesim serves dcgm-exporter's series for its nodes,
# Prometheus scrapes them, and the daemon (--prometheus-url) polls them for the nodes its jobs'
# pods run on: the job's health shows each node's GPUs, an Xid 79 on one becomes a suspect mark.
# Jobs adopted after a daemon restart (graceful, then kill -9) are polled again.
source "$(dirname "$0")/kubelib.sh"
command -v prometheus >/dev/null || { echo "FAIL: prometheus is not installed (make test-deps)"; exit 1; }
cluster_start
PROM_PORT=$((12000 + RANDOM % 20000))
cat >"$WORK/prometheus.yml" <<EOF2
global: { scrape_interval: 1s, scrape_timeout: 1s }
scrape_configs:
  - job_name: dcgm
    scheme: https
    tls_config: { ca_file: $KUBE_PKI/ca.crt }
    static_configs: [{ targets: ["${KSIM#https://}"] }]
EOF2
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
PROMPID=$!
trap 'kill $PROMPID 2>/dev/null; wait $PROMPID 2>/dev/null; kube_cleanup' EXIT
PROM="http://127.0.0.1:$PROM_PORT"
eventually "prometheus scrapes kubesim's DCGM exporter" 60 bash -c "curl -s '$PROM/api/v1/query' --data-urlencode 'query=count(DCGM_FI_DEV_GPU_UTIL)' | jq -e '.data.result[0].value[1]==\"32\"'"
FLAGS=(--executor kubernetes --kubeconfig "$KC" --prometheus-url "$PROM" --prometheus-interval 1s)
ty_start "${FLAGS[@]}"
polls() { api GET /metrics | awk '/^trainyard_dcgm_polls_total/ {print $2}'; }
has_gpus() { [ "$(api GET "/v1/jobs/$1/health" | jq '[.nodes[].gpus|length]|add // 0')" = "$2" ]; }

id=$(submit_id '{"name":"gpus","image":"x","nodes":2,"resources":{"gpus":8},"kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "a 2-node GPU job runs" 30 state_is "$id" running
eventually "its nodes' GPUs are polled" 30 bash -c "test \"\$(curl -s -H 'Authorization: Bearer $TOKEN' $URL/metrics | awk '/^trainyard_dcgm_polls_total/ {print \$2}')\" -gt 0"
eventually "and its health shows 16 GPUs, busy" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$id/health | jq -e '[.nodes[].gpus[]|select(.utilization==97)]|length==16'"
node=$(job_field "$id" '.ranks[0].node')
ctl gpus '{"node":"'"$node"'","gpu":3,"xid":79}' >/dev/null
eventually "an Xid 79 on a GPU marks its node suspect" 30 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/nodes | jq -e '.items[]|select(.name==\"$node\")|.mark.state==\"suspect\"'"
ctl gpus '{"node":"'"$node"'","gpu":3,"xid":0}' >/dev/null

ty_graceful_restart "${FLAGS[@]}"
eventually "after a restart the adopted job is polled again" 30 bash -c "test \"\$(curl -s -H 'Authorization: Bearer $TOKEN' $URL/metrics | awk '/^trainyard_dcgm_polls_total/ {print \$2}')\" -gt 0"
eventually "and its health shows its GPUs again" 30 has_gpus "$id" 16
ty_kill9
ty_restart "${FLAGS[@]}"
eventually "after a kill -9 too" 30 bash -c "test \"\$(curl -s -H 'Authorization: Bearer $TOKEN' $URL/metrics | awk '/^trainyard_dcgm_polls_total/ {print \$2}')\" -gt 0"
eventually "with its GPUs" 30 has_gpus "$id" 16
api POST "/v1/jobs/$id/cancel" >/dev/null
eventually "cancelled" 30 state_is "$id" cancelled
ty_done

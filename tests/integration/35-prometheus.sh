#!/usr/bin/env bash
# The real Prometheus (Debian's) against the daemon, both ways:
#  - it scrapes GET /metrics every second with a bearer token from a credentials file, and the
#    service's own metrics come back through its query API: jobs by state, submissions, log
#    lines, request latency histograms, reconcile lag, a running job's step and loss; a scrape
#    without the token is refused;
#  - it scrapes a DCGM exporter (a recorded series served by socat), and the daemon
#    (--prometheus-url) reads the GPUs of its job's node back: utilisation, temperature,
#    power, throttle reasons, and an Xid 79 that becomes a finding and marks the node.
source "$(dirname "$0")/lib.sh"
for tool in prometheus socat; do
    if ! command -v $tool >/dev/null; then
        ty_skip "$tool is not installed (make test-deps)"
    fi
done

# free_port: a loopback port nothing listens on.
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 40000))
        (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
    done
}
PROM_PORT=$(free_port)
EXP_PORT=$(free_port)
PIDS=()
stop_helpers() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    cleanup
}
trap stop_helpers EXIT

# The DCGM exporter: two H100s on "localhost"; GPU 1 reports Xid 79 and thermal slowdown.
GPU0='gpu="0",UUID="GPU-8f6a2c1e-0000-4d6e-9a51-000000000000",pci_bus_id="00000000:53:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="localhost"'
GPU1='gpu="1",UUID="GPU-8f6a2c1e-0001-4d6e-9a51-000000000001",pci_bus_id="00000000:64:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="localhost"'
cat >"$WORK/dcgm.prom" <<EOF
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{$GPU0} 97
DCGM_FI_DEV_GPU_UTIL{$GPU1} 12
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{$GPU0} 64
DCGM_FI_DEV_GPU_TEMP{$GPU1} 91
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{$GPU0} 612.5
DCGM_FI_DEV_POWER_USAGE{$GPU1} 188.25
# HELP DCGM_FI_DEV_CLOCK_THROTTLE_REASONS Throttling reasons bitmask.
# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{$GPU0} 0
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{$GPU1} 72
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{$GPU0} 0
DCGM_FI_DEV_XID_ERRORS{$GPU1} 79
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{$GPU0} 0
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{$GPU1} 0
EOF
cat >"$WORK/exporter.sh" <<EOF
while IFS= read -r line && [ "\${line%\$'\r'}" != "" ]; do :; done
printf 'HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' \$(wc -c <"$WORK/dcgm.prom")
cat "$WORK/dcgm.prom"
EOF
socat TCP-LISTEN:$EXP_PORT,bind=127.0.0.1,reuseaddr,fork SYSTEM:"bash $WORK/exporter.sh" &
PIDS+=($!)

ty_start --prometheus-url "http://127.0.0.1:$PROM_PORT" --prometheus-interval 1s
printf '%s\n' "$TOKEN" >"$WORK/token"
cat >"$WORK/prometheus.yml" <<EOF
global: { scrape_interval: 1s, scrape_timeout: 1s }
scrape_configs:
  - job_name: trainyard
    authorization: { credentials_file: $WORK/token }
    static_configs: [{ targets: ["${URL#http://}"] }]
  - job_name: trainyard-noauth
    static_configs: [{ targets: ["${URL#http://}"] }]
  - job_name: dcgm
    static_configs: [{ targets: ["127.0.0.1:$EXP_PORT"] }]
EOF
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
PROM="http://127.0.0.1:$PROM_PORT"
# Up to 60 s: ready in ~1 s here, but a CI run at 15:35 on 2026-11-22, with the machine's CPU
# taken by other tenants, saw Prometheus not ready after 10 s, and every check after it failed.
for _ in $(seq 1 600); do curl -sf "$PROM/-/ready" >/dev/null && break; sleep 0.1; done
check "prometheus is ready" curl -sf "$PROM/-/ready"

# A 2-rank job that steps for a while on "localhost".
STEPS='for i in $(seq 1 60); do echo "step=$i loss=3.$((99 - i)) tokens_per_sec=12000"; sleep 0.2; done'
id=$(submit "{\"name\":\"prom\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$STEPS" '$s')],\"procs_per_node\":2}" | jq -r .id)
wait_state "$id" running

# pq QUERY: the first sample's value of an instant query ("" when none).
pq() { curl -s "$PROM/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'; }
# until_pq QUERY: waits (15 s at most) until the query has a sample.
until_pq() {
    for _ in $(seq 1 150); do
        [ -n "$(pq "$1")" ] && return 0
        sleep 0.1
    done
    return 1
}
check "scraped with the token" until_pq 'up{job="trainyard"} == 1'
check "refused without it" until_pq 'up{job="trainyard-noauth"} == 0'
check "running job's step" until_pq "trainyard_job_step{job_id=\"$id\",job_name=\"prom\"} > 0"
check "running job's loss" until_pq "trainyard_job_loss{job_id=\"$id\"} > 3"
check "throughput in tokens/s" until_pq "trainyard_job_throughput{job_id=\"$id\",unit=\"tokens/s\"} == 12000"
check "jobs by state" until_pq 'trainyard_jobs{state="running"} >= 1'
check "submissions" until_pq 'trainyard_job_submissions_total >= 1'
check "log lines ingested" until_pq 'trainyard_log_lines_ingested_total > 0'
check "request latency histogram" until_pq 'trainyard_http_request_duration_seconds_count{operation="jobs_create",code="2xx"} >= 1'
check "latency quantile computes" until_pq 'histogram_quantile(0.99, sum by (le) (rate(trainyard_http_request_duration_seconds_bucket{operation="system_metrics"}[10s]))) < 1'
check "reconcile lag" until_pq 'trainyard_reconcile_lag_seconds < 5'
check "followers gauge" until_pq 'trainyard_log_followers >= 0'

# DCGM through Prometheus into the job's health.
for _ in $(seq 1 100); do
    h=$(api GET "/v1/jobs/$id/health")
    [ "$(echo "$h" | jq '.nodes.localhost.gpus | length')" = 2 ] && break
    sleep 0.1
done
g=$(echo "$h" | jq '.nodes.localhost.gpus')
check_eq "dcgm: two GPUs" 2 "$(echo "$g" | jq length)"
check_eq "dcgm: utilisation" "97 12" "$(echo "$g" | jq -r '[.[].utilization] | map(tostring) | join(" ")')"
check_eq "dcgm: temperature and power" "91 188.25" "$(echo "$g" | jq -r '.[1] | "\(.temperature) \(.power_watts)"')"
check_eq "dcgm: throttle reasons" "hw_slowdown,hw_thermal" "$(echo "$g" | jq -r '.[1].throttle_reasons | join(",")')"
check_eq "dcgm: model" "NVIDIA H100 80GB HBM3" "$(echo "$g" | jq -r '.[0].model')"
check_eq "dcgm: conditions" "GPUThrottled GPUXidError" "$(echo "$h" | jq -r '.nodes.localhost.conditions | sort | join(" ")')"
check_eq "dcgm: health failing on the Xid" failing "$(echo "$h" | jq -r .status)"
for _ in $(seq 1 50); do
    x=$(api GET "/v1/jobs/$id/diagnosis" | jq -c '[.findings[] | select(.kind=="xid")][0] // empty')
    [ -n "$x" ] && break
    sleep 0.1
done
check "dcgm: Xid 79 is a finding" grep -q "GPU error Xid 79 (GPU has fallen off the bus)" <<<"$(echo "$x" | jq -r .summary)"
check_eq "dcgm: node marked" "suspect GPUXidError dcgm" "$(api GET /v1/nodes/localhost/mark | jq -r '"\(.state) \(.reason) \(.source)"')"
check "dcgm: polls counted" until_pq 'trainyard_dcgm_polls_total > 0'
check_eq "dcgm: no failed polls" 0 "$(api GET /metrics | awk '$1 == "trainyard_dcgm_errors_total" {print $2}')"
api POST "/v1/jobs/$id/cancel" >/dev/null
ty_done

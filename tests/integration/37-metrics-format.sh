#!/usr/bin/env bash
# GET /metrics as a scraper parses it: the real daemon, with every source of families present
# (the local and the Kubernetes executor against the test API server, a running job with
# progress, the DCGM poller, triggers and webhooks), checked by Debian's promtool (`promtool
# check metrics`: the format, HELP text, counter names) and by this script: every family has
# exactly one HELP and one TYPE line, and every sample belongs to a family that has them.
source "$(dirname "$0")/kubelib.sh"
if ! command -v promtool >/dev/null; then
    echo "SKIP: promtool is not installed (make test-deps: Debian's prometheus package)"
    exit 77
fi

kube_start
# DCGM: a Prometheus that is not there (its poll counters and failures are families too).
ty_start --kubeconfig "$KC" --prometheus-url http://127.0.0.1:1 --prometheus-interval 1s

# metrics_has REGEX: a line of /metrics matches (for eventually: evaluated on each try).
metrics_has() { api GET /metrics | grep -q "$1"; }

STEPS='for i in $(seq 1 50); do echo "step=$i loss=2.$i tokens_per_sec=1000"; sleep 0.2; done'
id=$(submit "{\"name\":\"fmt\",\"command\":[\"sh\",\"-c\",$(jq -Rn --arg s "$STEPS" '$s')]}" |
    jq -r .id)
kid=$(submit '{"name":"kfmt","executor":"kubernetes","image":"busybox","command":["true"]}' |
    jq -r .id)
eventually "the local job reports a step" 20 metrics_has "^trainyard_job_step{job_id=\"$id\""
eventually "the Kubernetes job is created" 20 \
    metrics_has '^trainyard_kube_objects_total{outcome="created"} [1-9]'
eventually "a DCGM poll was made" 10 metrics_has '^trainyard_dcgm_polls_total [1-9]'
api GET /metrics >"$WORK/metrics"
check_eq "served as the text format" "text/plain; version=0.0.4; charset=utf-8" \
    "$(api GET /metrics -o /dev/null -w '%{content_type}')"

promtool check metrics <"$WORK/metrics" >"$WORK/promtool" 2>&1
rc=$?
check_eq "promtool finds nothing to say" "0 0" "$rc $(wc -l <"$WORK/promtool")"
[ "$rc" = 0 ] || sed 's/^/  promtool: /' "$WORK/promtool" >&2

# Every family once, with HELP and TYPE; every sample in a declared family (a histogram's
# _bucket/_sum/_count and a summary's _sum/_count belong to theirs).
awk '
    $1 == "#" && $2 == "HELP" { help[$3]++ }
    $1 == "#" && $2 == "TYPE" { type[$3] = $4; ntype[$3]++ }
    $1 != "#" && NF {
        name = $1; sub(/\{.*/, "", name)
        base = name
        if (!(base in type)) sub(/_(bucket|sum|count)$/, "", base)
        if (!(base in type)) print "sample without TYPE: " name
        else if (!(base in help)) print "sample without HELP: " name
        else if (base != name && type[base] != "histogram" && type[base] != "summary")
            print "suffix on a " type[base] ": " name
    }
    END {
        for (f in ntype) if (ntype[f] != 1 || help[f] != 1) print "family declared more than once: " f
        for (f in help) if (!(f in type)) print "HELP without TYPE: " f
    }' "$WORK/metrics" >"$WORK/problems"
check_eq "every sample in a family with HELP and TYPE, each family once" "" "$(cat "$WORK/problems")"
[ -s "$WORK/problems" ] && sed 's/^/  /' "$WORK/problems" >&2

# One family from each file that writes some, so a source that stopped writing is noticed.
for f in trainyard_jobs trainyard_http_request_duration_seconds trainyard_job_starts_total \
    trainyard_log_lines_ingested_total trainyard_job_step trainyard_dcgm_polls_total \
    trainyard_kube_requests_total trainyard_kube_log_duplicates_total trainyard_local_slots \
    trainyard_webhook_messages_total trainyard_trigger_jobs_total; do
    check "family $f is there" grep -q "^# TYPE $f " "$WORK/metrics"
done
check "a running job's labels" grep -q \
    "^trainyard_job_throughput{job_id=\"$id\",job_name=\"fmt\",unit=\"tokens/s\"} 1000$" "$WORK/metrics"
check "histogram buckets keep their le labels" grep -q \
    '^trainyard_http_request_duration_seconds_bucket{operation="jobs_create",code="2xx",le="0.0025"} ' \
    "$WORK/metrics"
api POST "/v1/jobs/$id/cancel" >/dev/null
api POST "/v1/jobs/$kid/cancel" >/dev/null
ty_done

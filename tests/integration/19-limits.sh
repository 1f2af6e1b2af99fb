#!/usr/bin/env bash
# Limits that protect the daemon from one client: idle and slow connections are closed after
# --timeout, connections per client address are bounded, large ranges are refused.
source "$(dirname "$0")/lib.sh"
ty_start --timeout 1 --per-ip-limit 8 --max-log-lines 500 --max-list 20 --max-ranks 6 --max-env 3 --max-labels 2

hostport=${URL#http://}
host=${hostport%:*}
port=${hostport##*:}

# A client that sends half a request and then nothing is disconnected.
exec 7<>/dev/tcp/$host/$port
printf 'GET /v1/jobs HTTP/1.1\r\nHost: x\r\n' >&7
t0=$(date +%s%N)
timeout 10 cat <&7 >/dev/null
t1=$(date +%s%N)
exec 7>&-
check "a stalled request is dropped after the timeout ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -lt 5000

# At most --per-ip-limit connections from one address; the next is refused.
for i in $(seq 1 8); do eval "exec $((10 + i))<>/dev/tcp/$host/$port"; done
code=$(curl -s -o /dev/null -w '%{http_code}' -m 2 "$URL/healthz" || true)
check "connections over the per-address limit are refused" test "$code" != 200
for i in $(seq 1 8); do eval "exec $((10 + i))>&-"; done
sleep 0.3
check_eq "connections are accepted again once others close" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$URL/healthz")"

# Ranges and sizes.
check_eq "list page over --max-list" 400 "$(status GET '/v1/jobs?limit=21')"
id=$(submit '{"name":"x","command":["true"]}' | jq -r .id)
check_eq "log page over --max-log-lines" 400 "$(status GET "/v1/jobs/$id/logs?limit=501")"
check_eq "tail over --max-log-lines" 400 "$(status GET "/v1/jobs/$id/logs?tail=501")"
check_eq "ranks over --max-ranks" 422 "$(status POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":"x","command":["true"],"nodes":2,"procs_per_node":4}')"
check_eq "env over --max-env" 422 "$(status POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":"x","command":["true"],"env":{"A":"1","B":"2","C":"3","D":"4"}}')"
check_eq "labels over --max-labels" 422 "$(status POST /v1/jobs -H 'Content-Type: application/json' -d '{"name":"x","command":["true"],"labels":{"a":"1","b":"2","c":"3"}}')"
ty_done

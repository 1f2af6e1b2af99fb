#!/usr/bin/env bash
# Disk full: the data directory on a small tmpfs, filled while a job writes numbered lines and
# another job ends. Writes must fail cleanly (503 problem+json with Retry-After), reads keep
# working, /readyz says not ready; when space returns everything recovers: new jobs are
# accepted, the job that ended during the outage is recorded, and every log line is stored
# exactly once and in order (the ranks hold lines while they cannot write them; the collector
# reads again from its last committed position).
source "$(dirname "$0")/lib.sh"
DATA=$WORK/data
mkdir -p "$DATA"
if ! mount -t tmpfs -o size=48m tmpfs "$DATA" 2>/dev/null; then
    ty_skip "cannot mount a tmpfs on the data directory (needs root or CAP_SYS_ADMIN);" \
        "disk-full behaviour is not tested here"
fi
unmount() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    PID=""
    pkill -f "trainyard shim --dir $WORK" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do umount "$DATA" 2>/dev/null && break; sleep 0.2; done
    mountpoint -q "$DATA" && umount -l "$DATA"
    cleanup
}
trap unmount EXIT
not_grep() { ! grep -q "$@"; }
ty_start

N=900
counter=$(submit '{"name":"counter","command":["sh","-c","i=0; while [ $i -lt '$N' ]; do i=$((i+1)); echo \"line $i\"; sleep 0.02; done"]}' | jq -r .id)
short=$(submit '{"name":"short","command":["sh","-c","sleep 4; echo short done"]}' | jq -r .id)
check "counter runs" wait_state "$counter" running
check "short job runs" wait_state "$short" running
sleep 1
before=$(api GET "/v1/jobs/$counter/logs?format=ndjson&tail=1" | jq .seq)
check "lines were stored before the disk filled" test "${before:-0}" -gt 0

# Fill the disk to the last byte.
dd if=/dev/zero of="$DATA/filler" bs=1M >/dev/null 2>&1
dd if=/dev/zero of="$DATA/filler2" bs=4k >/dev/null 2>&1
check_eq "the data disk is full" 0 "$(df --output=avail -B1 "$DATA" | tail -1 | tr -d ' ')"
full_at=$(date +%s)

ready=""
for _ in $(seq 1 50); do
    ready=$(curl -s -o "$WORK/ready" -w '%{http_code}' "$URL/readyz")
    [ "$ready" = 503 ] && break
    sleep 0.1
done
check_eq "/readyz is 503 while the disk is full" 503 "$ready"
check "/readyz says why" grep -q 'disk full' "$WORK/ready"
post() { curl -s -D "$WORK/hdr" -o "$WORK/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" "$@"; }
check_eq "submit is a 503" 503 "$(post -H 'Content-Type: application/json' -d '{"name":"nope","command":["true"]}' "$URL/v1/jobs")"
check "as problem+json" grep -qi '^Content-Type: application/problem+json' "$WORK/hdr"
check "with Retry-After" grep -qiE '^Retry-After: [0-9]+' "$WORK/hdr"
check "saying the disk is full" grep -q 'disk full' <<<"$(jq -r .detail "$WORK/body")"
check_eq "token creation is a 503" 503 "$(post -H 'Content-Type: application/json' -d '{"name":"t","scope":"read"}' "$URL/v1/tokens")"
check_eq "job list works" 200 "$(status GET /v1/jobs)"
check_eq "job works" 200 "$(status GET "/v1/jobs/$counter")"
check_eq "logs work" 200 "$(status GET "/v1/jobs/$counter/logs?tail=10")"
check_eq "search works" 200 "$(status GET "/v1/jobs/$counter/logs/search?q=line")"
check_eq "events work" 200 "$(status GET "/v1/jobs/$counter/events")"
check_eq "metrics work" 200 "$(status GET /metrics)"
sleep 6 # the short job ends, the counter keeps printing, the collector keeps failing
check "the daemon is alive" kill -0 "$PID"
check_eq "nothing was accepted" 2 "$(api GET /v1/jobs | jq '.items | length')"

# Space returns.
rm -f "$DATA/filler" "$DATA/filler2"
for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200 ] && break
    sleep 0.1
done
check_eq "/readyz is 200 again" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")"
check_eq "submit works again" 201 "$(post -H 'Content-Type: application/json' -d '{"name":"after","command":["true"]}' "$URL/v1/jobs")"
check "the job that ended during the outage succeeded" wait_state "$short" succeeded
check "its logs are complete" wait_logs_complete "$short"
check "its last line is stored" grep -q 'short done' <<<"$(api GET "/v1/jobs/$short/logs")"
check "the counter succeeded" wait_state "$counter" succeeded 60
check "its logs are complete" wait_logs_complete "$counter"
lines=$(api GET "/v1/jobs/$counter/logs?format=ndjson&limit=100000" | jq -r .line)
check_eq "every line stored once" "$N" "$(grep -c '^line ' <<<"$lines")"
check_eq "in order" "$(seq 1 $N | sed 's/^/line /')" "$(grep '^line ' <<<"$lines")"
check "no line reported lost" not_grep 'lines lost' <<<"$lines"
errors=$(api GET /metrics | awk '/^trainyard_log_store_errors_total/ {print $2}')
check "the collector did hit the full disk" test "${errors:-0}" -gt 0
echo "outage: $(($(date +%s) - full_at)) s, log commits that failed: $errors"
ty_done
